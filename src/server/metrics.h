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

class ServerMetrics {
 public:
  explicit ServerMetrics(std::string model_name, int32_t max_model_len);

  // Thread-safe observations, in seconds.
  void observe_first_token(double seconds_since_arrival);
  void observe_queue_time(double seconds);
  void observe_inter_token(double seconds);
  void observe_tokens(int64_t prompt_tokens, int64_t generated_tokens);
  // A request's sequence ended with `reason` (stop, length or abort).
  void observe_finished(FinishReason reason, double seconds_since_arrival, int64_t prompt_tokens,
                        int64_t generated_tokens);
  void observe_rejected(Rejection reason);

  // The Prometheus text exposition (format 0.0.4).
  std::string render(const EngineCoreStats& engine) const;

 private:
  std::string labels_;
  mutable std::mutex mutex_;
  Histogram ttft_;
  Histogram inter_token_;
  Histogram e2e_;
  Histogram queue_time_;
  Histogram request_prompt_tokens_;
  Histogram request_generation_tokens_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  int64_t finished_[3] = {0, 0, 0};  // by FinishReason: stop, length, abort
  int64_t rejected_[2] = {0, 0};     // by Rejection
};

}  // namespace vllm::server
