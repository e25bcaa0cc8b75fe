#include "engine/engine_config.h"

#include <algorithm>

namespace vllm {

namespace {

// A BF16 cache pairs dimensions in words (kernels/cpu/attention.h).
bool even_head_dims(const std::vector<LayerKVSpec>& kv_spec) {
  return std::all_of(kv_spec.begin(), kv_spec.end(), [](const LayerKVSpec& l) { return l.head_dim % 2 == 0; });
}

}  // namespace

DType auto_kv_cache_dtype(const ModelConfig& model, const std::vector<LayerKVSpec>& kv_spec) {
  return model.torch_dtype == "bfloat16" && even_head_dims(kv_spec) ? DType::kBF16 : DType::kF32;
}

Status validate_lora_config(const LoraConfig& lora) {
  if (lora.max_loras < 1) return invalid_argument("--max-loras must be at least 1");
  if (lora.max_lora_rank < 1) return invalid_argument("--max-lora-rank must be at least 1");
  if (lora.max_cpu_loras != 0 && lora.max_cpu_loras < lora.max_loras) {  // vLLM's message
    return invalid_argument("max_cpu_loras (" + std::to_string(lora.max_cpu_loras) + ") must be >= max_loras (" +
                            std::to_string(lora.max_loras) + ")");
  }
  return Status::ok();
}

Result<ResolvedEngineConfig> resolve_engine_config(const EngineConfig& config, const ModelConfig& model,
                                                   const std::vector<LayerKVSpec>& kv_spec,
                                                   const std::vector<LayerKVSpec>& draft_kv_spec) {
  ResolvedEngineConfig r;
  r.config = config;
  SchedulerConfig& sched = r.config.scheduler;
  const auto model_len = static_cast<int32_t>(std::min<int64_t>(model.max_context_length(), INT32_MAX));
  if (sched.max_model_len == 0) {
    sched.max_model_len = model_len;
  } else if (sched.max_model_len > model_len) {
    return invalid_argument("max_model_len " + std::to_string(sched.max_model_len) +
                            " is larger than the model's context length of " + std::to_string(model_len) + " tokens");
  }
  if (config.lora) {
    VLLM_RETURN_IF_ERROR(validate_lora_config(*config.lora));
    sched.max_loras = config.lora->max_loras;
  }
  VLLM_RETURN_IF_ERROR(sched.validate());
  if (config.cache.block_size < 1 || config.cache.block_size > 1024) {
    return invalid_argument("block_size must be in [1, 1024], got " + std::to_string(config.cache.block_size));
  }
  if (config.cache.kv_cache_memory_bytes < 0) return invalid_argument("the KV cache size must not be negative");
  if (config.num_threads < 1) return invalid_argument("num_threads must be at least 1");
  if (config.speculative) {
    VLLM_RETURN_IF_ERROR(config.speculative->validate());
    // A draft model or head writes its guesses' keys and values ahead of the chunk.
    if (config.speculative->runs_a_model()) {
      sched.num_lookahead_tokens = config.speculative->num_speculative_tokens;
    }
  }

  r.kv_shape = KVCacheShape{kv_spec, config.cache.block_size,
                            config.cache.kv_cache_dtype.value_or(auto_kv_cache_dtype(model, kv_spec))};
  if (r.kv_shape.dtype == DType::kBF16 && !even_head_dims(kv_spec)) {
    return invalid_argument("a bfloat16 KV cache needs an even head_dim, the model's is " +
                            std::to_string(model.head_dim));
  }
  r.draft_kv_shape = KVCacheShape{draft_kv_spec, r.kv_shape.block_size, r.kv_shape.dtype};
  if (r.kv_shape.dtype == DType::kBF16 && !even_head_dims(draft_kv_spec)) {
    return invalid_argument("a bfloat16 KV cache needs an even head_dim, the draft model's is odd");
  }
  // A block id holds its positions in both caches.
  const auto block_bytes = static_cast<int64_t>(r.kv_shape.bytes_per_block() + r.draft_kv_shape.bytes_per_block());
  int64_t bytes = config.cache.kv_cache_memory_bytes;
  if (bytes == 0) {
    const int64_t blocks_per_seq = (sched.max_model_len + config.cache.block_size - 1) / config.cache.block_size;
    bytes = std::min(kMaxAutoKVCacheBytes, int64_t{sched.max_num_seqs} * blocks_per_seq * block_bytes);
  }
  const int64_t num_blocks = bytes / block_bytes;
  if (num_blocks < 1) {
    return invalid_argument("the KV cache size (" + std::to_string(bytes) + " bytes) is smaller than one block (" +
                            std::to_string(block_bytes) + " bytes for " + std::to_string(config.cache.block_size) +
                            " tokens)");
  }
  if (num_blocks > INT32_MAX) return invalid_argument("the KV cache size is too large");
  r.num_blocks = static_cast<int32_t>(num_blocks);
  return r;
}

}  // namespace vllm
