// The weights of a decoder-only transformer, read from checkpoint tensors.
// Matrices are repacked once into the kernels' layout in their stored dtype
// (kernels/packed_matrix.h); small vectors (norms, biases) are widened once
// to float32.  Nothing refers to the checkpoint's files afterwards.
// Matrices that read the same input are stacked into one (q, k, v; gate,
// up), as vLLM's QKVParallelLinear and MergedColumnParallelLinear do: one
// pass over the activations and one split of the work instead of three or
// two.  Every output is computed as it would be alone.
#pragma once

#include <vector>

#include "base/thread_pool.h"
#include "kernels/packed_matrix.h"
#include "model/arch/decoder_variant.h"
#include "model/loader/checkpoint.h"
#include "tensor/tensor.h"

namespace vllm {

struct DecoderLayerWeights {
  std::vector<float> input_norm;           // [hidden]
  kernels::PackedMatrix qkv_proj;          // [(heads + 2 * kv_heads) * head_dim, hidden]: q, k, v rows
  std::vector<float> qkv_bias;             // [(heads + 2 * kv_heads) * head_dim], empty unless variant.qkv_bias
  std::vector<float> q_norm, k_norm;       // [head_dim], empty unless variant.qk_norm
  kernels::PackedMatrix o_proj;            // [hidden, heads * head_dim]
  std::vector<float> o_bias;               // empty unless variant.o_bias
  std::vector<float> post_attention_norm;  // [hidden]
  kernels::PackedMatrix gate_up_proj;      // [2 * intermediate, hidden]: gate rows, then up rows
  kernels::PackedMatrix down_proj;         // [hidden, intermediate]
};

struct DecoderWeights {
  kernels::PackedMatrix embed_tokens;  // [vocab, hidden]
  std::vector<DecoderLayerWeights> layers;
  std::vector<float> final_norm;  // [hidden]
  kernels::PackedMatrix lm_head;  // [vocab, hidden]; empty when tied to embed_tokens

  const kernels::PackedMatrix& output_projection() const { return lm_head.rows > 0 ? lm_head : embed_tokens; }
};

enum class WeightKind { kMatrix, kNorm, kBias };

struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  WeightKind kind;
};

// Every tensor the checkpoint must hold for this config: names, shapes and
// kinds (make-test-model writes exactly these).
std::vector<WeightSpec> decoder_weight_specs(const ModelConfig& config, const DecoderVariant& variant);

// Checks every tensor's presence, shape and dtype against the config, and
// packs the matrices (split over the pool).
Result<DecoderWeights> load_decoder_weights(const Checkpoint& ckpt, const ModelConfig& config,
                                            const DecoderVariant& variant, ThreadPool& pool);

}  // namespace vllm
