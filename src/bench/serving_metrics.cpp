#include "bench/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace vllm::bench {
namespace {

// numpy.percentile's default ("linear"): rank q/100 * (n - 1), interpolated.
double percentile(const std::vector<double>& sorted, double q) {
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

void add_stats(OrderedJson& j, const char* metric, const LatencyStats& s) {
  const std::string m = metric;
  j["mean_" + m + "_ms"] = s.mean;
  j["median_" + m + "_ms"] = s.median;
  j["std_" + m + "_ms"] = s.std;
  j["p90_" + m + "_ms"] = s.p90;
  j["p99_" + m + "_ms"] = s.p99;
}

}  // namespace

LatencyStats summarize(std::vector<double> samples) {
  LatencyStats s;
  if (samples.empty()) return s;
  for (double& x : samples) x *= 1000.0;
  std::sort(samples.begin(), samples.end());
  const double n = static_cast<double>(samples.size());
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  double var = 0;
  for (double x : samples) var += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(var / n);  // numpy.std: population
  s.median = percentile(samples, 50);
  s.p90 = percentile(samples, 90);
  s.p99 = percentile(samples, 99);
  return s;
}

BenchmarkSummary summarize_benchmark(const std::vector<RequestResult>& results, double duration) {
  BenchmarkSummary s;
  s.duration = duration;
  std::vector<double> ttft, tpot, itl, e2el;
  for (const RequestResult& r : results) {
    if (!r.success) {
      ++s.failed;
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft);
    e2el.push_back(r.e2el);
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    if (r.output_tokens > 1) tpot.push_back((r.e2el - r.ttft) / static_cast<double>(r.output_tokens - 1));
  }
  s.request_throughput = static_cast<double>(s.completed) / duration;
  s.output_throughput = static_cast<double>(s.total_output_tokens) / duration;
  s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / duration;
  s.ttft = summarize(ttft);
  s.tpot = summarize(tpot);
  s.itl = summarize(itl);
  s.e2el = summarize(e2el);
  return s;
}

std::string format_summary(const BenchmarkSummary& s, const std::string& title) {
  std::string out;
  char line[160];
  auto row = [&](const char* name, const std::string& value) {
    std::snprintf(line, sizeof line, "%-40s %14s\n", name, value.c_str());
    out += line;
  };
  auto num = [](double v, int digits) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    return std::string(b);
  };
  std::snprintf(line, sizeof line, "%s\n", std::string(55, '=').c_str());
  out += line;
  out += title + "\n" + std::string(55, '=') + "\n";
  row("Successful requests:", std::to_string(s.completed));
  row("Failed requests:", std::to_string(s.failed));
  row("Benchmark duration (s):", num(s.duration, 2));
  row("Total input tokens:", std::to_string(s.total_input_tokens));
  row("Total generated tokens:", std::to_string(s.total_output_tokens));
  row("Request throughput (req/s):", num(s.request_throughput, 2));
  row("Output token throughput (tok/s):", num(s.output_throughput, 2));
  row("Total token throughput (tok/s):", num(s.total_token_throughput, 2));
  const struct {
    const char* title;
    const char* name;
    const LatencyStats* stats;
  } metrics[] = {{"Time to First Token", "TTFT", &s.ttft},
                 {"Time per Output Token (excl. 1st token)", "TPOT", &s.tpot},
                 {"Inter-token Latency", "ITL", &s.itl},
                 {"End-to-end Latency", "E2EL", &s.e2el}};
  for (const auto& m : metrics) {
    out += std::string(18, '-') + m.title + std::string(std::max<int>(2, 37 - static_cast<int>(strlen(m.title))), '-') +
           "\n";
    const std::string n = m.name;
    row(("Mean " + n + " (ms):").c_str(), num(m.stats->mean, 2));
    row(("Median " + n + " (ms):").c_str(), num(m.stats->median, 2));
    row(("P90 " + n + " (ms):").c_str(), num(m.stats->p90, 2));
    row(("P99 " + n + " (ms):").c_str(), num(m.stats->p99, 2));
  }
  out += std::string(55, '=') + "\n";
  return out;
}

OrderedJson summary_json(const BenchmarkSummary& s) {
  OrderedJson j;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration"] = s.duration;
  j["total_input_tokens"] = s.total_input_tokens;
  j["total_output_tokens"] = s.total_output_tokens;
  j["request_throughput"] = s.request_throughput;
  j["output_throughput"] = s.output_throughput;
  j["total_token_throughput"] = s.total_token_throughput;
  add_stats(j, "ttft", s.ttft);
  add_stats(j, "tpot", s.tpot);
  add_stats(j, "itl", s.itl);
  add_stats(j, "e2el", s.e2el);
  return j;
}

}  // namespace vllm::bench
