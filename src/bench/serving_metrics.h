// The figures of vLLM's benchmark_serving (docs/API.md §14) from per-request
// results: throughputs over the wall time, and mean / median / std / p90 /
// p99 of TTFT, TPOT, ITL and E2EL, percentiles interpolated linearly
// between samples (numpy's default).
#pragma once

#include <string>
#include <vector>

#include "base/json.h"
#include "bench/serving_client.h"

namespace vllm::bench {

struct LatencyStats {  // milliseconds
  double mean = 0, median = 0, std = 0, p90 = 0, p99 = 0;
};

// `samples` in seconds; all zeros when there are none.
LatencyStats summarize(std::vector<double> samples);

struct BenchmarkSummary {
  int64_t completed = 0;
  int64_t failed = 0;
  double duration = 0.0;  // seconds
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  LatencyStats ttft, tpot, itl, e2el;
};

BenchmarkSummary summarize_benchmark(const std::vector<RequestResult>& results, double duration);

// A human-readable table, headed by `title`.
std::string format_summary(const BenchmarkSummary& s, const std::string& title);

// vLLM's key names: completed, failed, duration, total_input_tokens,
// total_output_tokens, request_throughput, output_throughput,
// total_token_throughput, {mean,median,std,p90,p99}_{ttft,tpot,itl,e2el}_ms.
OrderedJson summary_json(const BenchmarkSummary& s);

}  // namespace vllm::bench
