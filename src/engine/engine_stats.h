// The engine core's counters (for /metrics and the benchmarks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "engine/sched/spec_decoding_stats.h"

namespace vllm {

// vLLM's vllm:lora_requests_info: the adapters of the running and of the
// waiting requests, by name, as of `unix_time`.
struct LoraStats {
  int32_t max_loras = 0;
  std::vector<std::string> running_adapters, waiting_adapters;
  double unix_time = 0;
};

struct EngineCoreStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  int32_t num_blocks = 0;
  int32_t num_free_blocks = 0;
  PrefixCacheStats prefix_cache;
  int64_t num_preemptions = 0;
  int64_t num_steps = 0;
  int64_t num_scheduled_tokens = 0;                // tokens run through the model, all steps
  std::optional<SpecDecodingStats> spec_decoding;  // with speculative decoding
  std::optional<LoraStats> lora;                   // with --enable-lora

  // The fraction of KV blocks in use (vllm:kv_cache_usage_perc), 0..1.
  double kv_cache_usage() const {
    return num_blocks > 0 ? 1.0 - static_cast<double>(num_free_blocks) / num_blocks : 0.0;
  }
};

}  // namespace vllm
