// The decoder-only transformer (Llama, Mistral, Qwen2, Qwen3): loading and
// the forward pass over a flattened batch and a paged KV cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "model/arch/decoder_variant.h"
#include "model/decoder_weights.h"
#include "model/forward_batch.h"
#include "model/loader/checkpoint.h"
#include "model/model_config.h"
#include "model/rotary_embedding.h"

namespace vllm {

class DecoderModel {
 public:
  // Reads config.json (+ generation_config.json) and the weights of `model_dir`.
  static Result<std::unique_ptr<DecoderModel>> load(const std::string& model_dir);

  const ModelConfig& config() const { return config_; }
  const DecoderVariant& variant() const { return variant_; }

  // What one forward pass costs, for benchmarks' limits: bytes of weight
  // matrices a decode step reads (each once, the LM head included), and the
  // multiply-adds per token of the layers and of the LM head (attention's
  // score and value products, which grow with the context, not counted).
  struct Cost {
    double weight_bytes = 0;
    double layer_params = 0;
    double lm_head_params = 0;
    bool bf16_matrices = true;  // every matrix BF16 (what the BF16 dot-product kernels take)
  };
  Cost cost() const;

  // Runs every token of `batch` through the model, writing its keys and
  // values into `kv_cache`, and fills logits: [batch.num_logits, vocab_size]
  // for the rows batch.logits_indices names.  Not thread-safe: one caller
  // (the engine thread) at a time; it reuses its scratch buffers.
  void forward(const ForwardBatch& batch, const KVCacheView& kv_cache, float* logits, ThreadPool& pool);

 private:
  DecoderModel(ModelConfig config, DecoderVariant variant, DecoderWeights weights);

  // The two sub-layers, ws_.normed -> ws_.proj_out; forward() does their
  // norms and residual adds, fused.
  void attention_block(const DecoderLayerWeights& w, const ForwardBatch& batch, const kernels::PagedKVLayer& kv,
                       ThreadPool& pool);
  void mlp_block(const DecoderLayerWeights& w, int64_t num_tokens, ThreadPool& pool);

  ModelConfig config_;
  DecoderVariant variant_;
  DecoderWeights weights_;
  RotaryEmbedding rope_;

  // Scratch, sized to the largest batch seen so far.
  struct Workspace {
    std::vector<float> hidden;    // [T, hidden]: the residual stream
    std::vector<float> normed;    // [T, hidden]
    std::vector<float> qkv;       // [T, (heads + 2 * kv_heads) * head_dim]: the stacked projection
    std::vector<float> q, k, v;   // [T, heads * head_dim], [T, kv_heads * head_dim] x2
    std::vector<float> attn_out;  // [T, heads * head_dim]
    std::vector<float> proj_out;  // [T, hidden]
    std::vector<float> gate_up;   // [T, 2 * intermediate]
    std::vector<float> act;       // [T, intermediate]: silu(gate) * up
    std::vector<float> cos, sin;  // [T, head_dim / 2]
    std::vector<float> last;      // [num_logits, hidden]
  } ws_;
};

}  // namespace vllm
