// `vllm-cpp bench serve`: a load generator for any OpenAI-compatible server
// (ours, or a peer such as llama.cpp's llama-server), measuring at the client
// what vLLM's benchmark_serving measures (docs/API.md §14).
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "base/clock.h"
#include "base/json.h"
#include "bench/serving_client.h"
#include "bench/serving_metrics.h"
#include "cli/commands.h"
#include "cli/random_text_prompts.h"

namespace vllm::cli {
namespace {

struct BenchServeOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string model;
  std::string endpoint = "/v1/completions";
  int num_prompts = 100;
  std::string request_rate = "inf";
  int max_concurrency = 0;  // 0: no cap
  int input_len = 128;
  int output_len = 128;
  int random_vocab_size = 500;
  std::string dataset;
  std::string tokenizer;  // random prompts as text of one-token words of this tokenizer
  std::string api_key;
  std::string output_json;
  uint64_t seed = 0;
};

struct BenchRequest {
  std::string body;
  int64_t prompt_tokens = 0;  // token-id prompts: exact; text prompts: unknown (0) unless the server reports
};

std::string request_body(const BenchServeOptions& o, const Json& prompt, int64_t max_tokens) {
  Json body = Json::object();
  if (!o.model.empty()) body["model"] = o.model;
  body["prompt"] = prompt;
  body["max_tokens"] = max_tokens;
  body["temperature"] = 0;
  body["ignore_eos"] = true;  // every request makes exactly max_tokens tokens (vLLM's random dataset does the same)
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  return body.dump();
}

// Random prompts of --input-len tokens (token ids, or text with --tokenizer),
// or the --dataset file's lines ({"prompt": text or ids, "output_len"?}).
Result<std::vector<BenchRequest>> make_workload(const BenchServeOptions& o) {
  std::vector<BenchRequest> requests;
  if (o.dataset.empty() && !o.tokenizer.empty()) {
    VLLM_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, Tokenizer::load(o.tokenizer));
    VLLM_ASSIGN_OR_RETURN(std::vector<TextPrompt> prompts,
                          random_text_prompts(*tokenizer, o.num_prompts, o.input_len, o.seed));
    for (const TextPrompt& p : prompts) requests.push_back({request_body(o, Json(p.text), o.output_len), p.tokens});
    return requests;
  }
  if (o.dataset.empty()) {
    std::mt19937_64 rng(o.seed);
    std::uniform_int_distribution<int> token(10, std::max(11, o.random_vocab_size - 1));
    for (int i = 0; i < o.num_prompts; ++i) {
      std::vector<int> ids(static_cast<size_t>(o.input_len));
      for (int& id : ids) id = token(rng);
      requests.push_back({request_body(o, Json(ids), o.output_len), o.input_len});
    }
    return requests;
  }
  std::ifstream in(o.dataset);
  if (!in) return not_found("cannot open " + o.dataset);
  std::string line;
  for (size_t n = 1; std::getline(in, line) && static_cast<int>(requests.size()) < o.num_prompts; ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("prompt")) {
      return invalid_argument(o.dataset + " line " + std::to_string(n) + ": needs a JSON object with \"prompt\"");
    }
    const int64_t output_len = j.value("output_len", static_cast<int64_t>(o.output_len));
    const int64_t prompt_tokens = j["prompt"].is_array() ? static_cast<int64_t>(j["prompt"].size()) : 0;
    requests.push_back({request_body(o, j["prompt"], output_len), prompt_tokens});
  }
  return requests;
}

// Arrival times: all at 0 for "inf", else a Poisson process at `rate` per second.
std::vector<double> arrival_times(size_t n, double rate, uint64_t seed) {
  std::vector<double> t(n, 0.0);
  if (!std::isfinite(rate)) return t;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  double now = 0.0;
  for (double& x : t) x = (now += gap(rng));
  return t;
}

void show_progress(size_t done, size_t total) {
  const int width = 40;
  const int filled = static_cast<int>(static_cast<double>(width) * static_cast<double>(done) /
                                      static_cast<double>(std::max<size_t>(total, 1)));
  std::fprintf(stderr, "\r[%s%s] %zu/%zu", std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), ' ').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
}

int run_bench_serve(const BenchServeOptions& o) {
  bench::ServerAddress server;
  if (!bench::parse_base_url(o.base_url, server)) return report_error("--base-url must look like http://host:port");
  double rate = std::numeric_limits<double>::infinity();
  if (o.request_rate != "inf") {
    char* end = nullptr;
    rate = std::strtod(o.request_rate.c_str(), &end);
    if (*end != '\0' || !(rate > 0)) return report_error("--request-rate must be a positive number or inf");
  }
  Result<std::vector<BenchRequest>> workload = make_workload(o);
  if (!workload.is_ok()) return report_error(workload.status().message());
  const std::vector<BenchRequest>& requests = *workload;
  const std::vector<double> arrivals = arrival_times(requests.size(), rate, o.seed);

  // Workers take requests in order, each waiting for its arrival time: the
  // number of workers is the concurrency cap.
  const size_t workers = std::min<size_t>(requests.size(), o.max_concurrency > 0 ? o.max_concurrency : 1024);
  std::vector<bench::RequestResult> results(requests.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex progress_mutex;
  const double start = now_seconds();
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < requests.size();) {
        const double wait = arrivals[i] - (now_seconds() - start);
        if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
        results[i] =
            bench::send_streaming_request(server, o.endpoint, requests[i].body, o.api_key, requests[i].prompt_tokens);
        std::lock_guard lock(progress_mutex);
        show_progress(++done, requests.size());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double duration = now_seconds() - start;

  const bench::BenchmarkSummary summary = bench::summarize_benchmark(results, duration);
  for (const bench::RequestResult& r : results) {
    if (!r.success) {
      std::fprintf(stderr, "first failure: %s\n", r.error.c_str());
      break;
    }
  }
  char title[200];
  std::snprintf(title, sizeof title, "Serving Benchmark Result (%s, rate %s, concurrency %s)", o.base_url.c_str(),
                o.request_rate.c_str(), o.max_concurrency > 0 ? std::to_string(o.max_concurrency).c_str() : "inf");
  std::printf("%s", bench::format_summary(summary, title).c_str());
  if (!o.output_json.empty()) {
    OrderedJson j = bench::summary_json(summary);
    j["base_url"] = o.base_url;
    j["endpoint"] = o.endpoint;
    j["num_prompts"] = requests.size();
    j["request_rate"] = o.request_rate;
    j["max_concurrency"] = o.max_concurrency > 0 ? OrderedJson(o.max_concurrency) : OrderedJson(nullptr);
    std::ofstream out(o.output_json);
    out << j.dump(2) << "\n";
    if (!out) return report_error("cannot write " + o.output_json);
  }
  return summary.completed > 0 ? 0 : 1;
}

}  // namespace

CommandRunner add_bench_serve_command(CLI::App& app) {
  auto o = std::make_shared<BenchServeOptions>();
  app.add_option("--base-url", o->base_url, "The server, http://host:port")->capture_default_str();
  app.add_option("--model", o->model, "The model name to send (default: the server's)");
  app.add_option("--endpoint", o->endpoint, "Completions endpoint")->capture_default_str();
  app.add_option("--num-prompts", o->num_prompts, "Requests to send")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--request-rate", o->request_rate, "Poisson arrivals per second, or inf (all at once)")
      ->capture_default_str();
  app.add_option("--max-concurrency", o->max_concurrency, "Most requests in flight (default: no cap)");
  app.add_option("--input-len", o->input_len, "Random prompt length in tokens")->capture_default_str();
  app.add_option("--output-len", o->output_len, "Tokens to generate per request")->capture_default_str();
  app.add_option("--random-vocab-size", o->random_vocab_size, "Random prompt ids are drawn from [10, this)")
      ->capture_default_str();
  app.add_option("--tokenizer", o->tokenizer,
                 "Random prompts as text: --input-len words that this tokenizer (a model directory) encodes as one "
                 "token each (for servers that refuse token-id prompts)");
  app.add_option("--dataset", o->dataset, "JSON lines {\"prompt\": text or ids, \"output_len\"?} instead");
  app.add_option("--api-key", o->api_key, "Sent as a Bearer token");
  app.add_option("--output-json", o->output_json, "Also write the results as JSON (vLLM's key names)");
  app.add_option("--seed", o->seed, "Seed of the random prompts and arrivals")->capture_default_str();
  return [o] { return run_bench_serve(*o); };
}

}  // namespace vllm::cli
