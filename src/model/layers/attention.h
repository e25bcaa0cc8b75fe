// Multi-head attention over the paged KV cache: q, k and v from one stacked
// projection (or a fused checkpoint tensor), optional q/k RMSNorm (per head,
// or over the whole projection as OLMoE has it), rotary embedding, grouped
// KV heads (GQA/MQA), a sliding window, logit soft-capping, a softmax scale
// of the architecture's choosing, and the output projection.
#pragma once

#include <memory>
#include <string>

#include "model/layers/layer.h"
#include "model/layers/linear.h"
#include "model/layers/norm.h"

namespace vllm {

struct AttentionConfig {
  int64_t hidden_size = 0;
  int64_t input_size = 0;  // of q, k and v's input when not hidden_size (EAGLE-3's 2 * hidden_size)
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 0;             // of the scores before the softmax (1/sqrt(head_dim) for most)
  int32_t sliding_window = 0;  // keys a query sees, itself included; 0: all
  float softcap = 0;           // scores become softcap * tanh(scores / softcap); 0: none
  enum class QKNorm { kNone, kPerHead, kWhole } qk_norm = QKNorm::kNone;
  Norm::Form qk_norm_form = Norm::Form::kRms;
  double norm_eps = 1e-6;
  int rope = 0;  // which of the model's rotary embeddings (RopeTables)
};

// The checkpoint's names under `prefix` ("model.layers.3.self_attn.").
struct AttentionWeights {
  std::string prefix;
  bool fused_qkv = false;  // one "qkv_proj" tensor (Phi-3) instead of q_proj, k_proj, v_proj
  bool qkv_bias = false;
  bool o_bias = false;
};

class Attention : public SequenceMixer {
 public:
  static Result<std::unique_ptr<Attention>> load(WeightReader& weights, const AttentionWeights& names,
                                                 const AttentionConfig& config);

  void forward(const float* x, const LayerContext& ctx, float* out) const override;
  LayerKVSpec kv_spec() const override;
  void add_cost(ModelCost& cost) const override;
  void add_lora_targets(LoraTargets& targets) const override;
  void set_lora(int32_t slot, const PeftAdapter* adapter) override;

 private:
  AttentionConfig c_;
  Linear qkv_proj_;  // [(heads + 2 * kv_heads) * head_dim, hidden]: q, k, v rows
  Linear o_proj_;    // [hidden, heads * head_dim]
  Norm q_norm_, k_norm_;
  kernels::KVScales kv_scales_;  // of an FP8 cache
  bool checkpoint_kv_scales_ = false;
};

}  // namespace vllm
