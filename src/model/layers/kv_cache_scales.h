// The per-tensor scales of an FP8 KV cache (--kv-cache-dtype fp8) that a
// checkpoint may carry for an attention layer, under the names vLLM reads
// for the formats we load: "<prefix>k_scale" and "<prefix>v_scale"
// (llm-compressor's kv_cache_scheme, FP8 checkpoints), or one
// "<prefix>kv_scale" (older FP8 checkpoints).  Where only one is found, both
// take it; where none is, both are 1, as in vLLM.  Other cache dtypes
// ignore them.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "kernels/kernels.h"
#include "model/layers/weight_reader.h"

namespace vllm {

// prefix: the attention module's, "model.layers.3.self_attn.".  nullopt:
// the checkpoint has none (the scales are then 1).
Result<std::optional<kernels::KVScales>> load_kv_cache_scales(WeightReader& weights, const std::string& prefix);

}  // namespace vllm
