// The server's Prometheus metrics under vLLM's names (docs/API.md §12):
// engine gauges and counters read from the engine's stats when scraped, and
// request-level counters and latency histograms observed as outputs leave.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_stats.h"
#include "engine/sched/request.h"

namespace vllm::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // "<name>_bucket{...,le=...}", "<name>_sum", "<name>_count" lines.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; the last is +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

// Why a request was refused without being served (the server answered 503).
enum class Rejection { kQueueFull, kQueueTimeout };

// Every metric carries vLLM's `engine` label: the data-parallel replica
// whose engine ran the request (0 without data parallelism).
class ServerMetrics {
 public:
  ServerMetrics(std::string model_name, int32_t max_model_len, int num_engines = 1);

  // Thread-safe observations of a request that `engine` runs, in seconds.
  void observe_first_token(int engine, double seconds_since_arrival);
  void observe_queue_time(int engine, double seconds);
  void observe_inter_token(int engine, double seconds);
  void observe_tokens(int engine, int64_t prompt_tokens, int64_t generated_tokens);
  // A request's sequence ended with `reason` (stop, length or abort).
  void observe_finished(int engine, FinishReason reason, double seconds_since_arrival, int64_t prompt_tokens,
                        int64_t generated_tokens);
  // Refusals happen before a request has an engine: they count under engine 0.
  void observe_rejected(Rejection reason);

  // The Prometheus text exposition (format 0.0.4); `engines[i]`: engine i's counters.
  std::string render(const std::vector<EngineCoreStats>& engines) const;

 private:
  // The request-level metrics of one engine.
  struct EngineMetrics {
    explicit EngineMetrics(int32_t max_model_len);
    Histogram ttft;
    Histogram inter_token;
    Histogram e2e;
    Histogram queue_time;
    Histogram request_prompt_tokens;
    Histogram request_generation_tokens;
    int64_t prompt_tokens = 0;
    int64_t generation_tokens = 0;
    int64_t finished[3] = {0, 0, 0};  // by FinishReason: stop, length, abort
  };

  EngineMetrics& engine(int index);

  std::vector<std::string> labels_;  // by engine
  mutable std::mutex mutex_;
  std::vector<EngineMetrics> engines_;
  int64_t rejected_[2] = {0, 0};  // by Rejection
};

}  // namespace vllm::server
