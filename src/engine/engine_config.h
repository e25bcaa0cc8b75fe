// The engine's settings, as `cli/` fills them from flags; validated and
// completed against the model once, by resolve_engine_config().
#pragma once

#include <cstdint>
#include <optional>

#include "base/status.h"
#include "engine/lora/lora_adapter.h"
#include "engine/runner/kv_cache_storage.h"
#include "engine/sched/scheduler.h"
#include "engine/spec/speculative_config.h"
#include "model/model.h"

namespace vllm {

struct CacheConfig {
  int32_t block_size = 16;            // tokens per KV block
  int64_t kv_cache_memory_bytes = 0;  // the whole KV pool; 0: automatic (see resolve_engine_config)
  bool enable_prefix_caching = true;
  // F32 or BF16; unset ("auto", as vLLM): the model's dtype, BF16 for a
  // bfloat16 checkpoint and F32 otherwise.
  std::optional<DType> kv_cache_dtype;
  // Commit the pool's memory at start-up (serving: it must be there before the
  // load is) instead of as blocks are first used (offline runs that may use little).
  bool resident = false;
};

struct EngineConfig {
  SchedulerConfig scheduler;  // max_model_len 0: the model's context length
  CacheConfig cache;
  int num_threads = 1;
  int32_t max_logprobs = 20;  // most logprobs / prompt_logprobs a request may ask for (--max-logprobs)
  std::optional<SpeculativeConfig> speculative;  // --speculative-config
  std::optional<LoraConfig> lora;                // --enable-lora
};

// --max-loras, --max-lora-rank and --max-cpu-loras in range.
Status validate_lora_config(const LoraConfig& lora);

// What the engine runs with once the model is known.
struct ResolvedEngineConfig {
  EngineConfig config;  // max_model_len filled in
  KVCacheShape kv_shape;
  int32_t num_blocks = 0;
  // A draft model's cache (speculative decoding): its layers, at kv_shape's
  // block size and dtype, with as many blocks; none without a draft model.
  KVCacheShape draft_kv_shape;
};

// The automatic KV pool: room for max_num_seqs full-length sequences, at most 4 GiB.
inline constexpr int64_t kMaxAutoKVCacheBytes = int64_t{4} << 30;

// `kv_spec`: the model's KV cache per layer (Model::kv_cache_spec);
// `draft_kv_spec`: the draft model's, which shares the pool's bytes.
Result<ResolvedEngineConfig> resolve_engine_config(const EngineConfig& config, const ModelConfig& model,
                                                   const std::vector<LayerKVSpec>& kv_spec,
                                                   const std::vector<LayerKVSpec>& draft_kv_spec = {});

// The KV cache dtype of "auto": BF16 for a bfloat16 checkpoint whose heads
// have an even head_dim (as every real one's do), else F32.
DType auto_kv_cache_dtype(const ModelConfig& model, const std::vector<LayerKVSpec>& kv_spec);

}  // namespace vllm
