// The gated MLP of Llama-family decoders: down(act(gate(x)) * up(x)), with
// gate and up read as one stacked projection (or Phi-3's fused gate_up_proj
// tensor, gate rows first), act SiLU (SwiGLU) or GELU's tanh form (GeGLU).
#pragma once

#include <memory>
#include <string>

#include "model/layers/layer.h"
#include "model/layers/linear.h"

namespace vllm {

// The three projections' tensor names (Mixtral's experts: w1, w3, w2).
struct MlpNames {
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
};

struct MlpWeights {
  std::string prefix;          // "model.layers.3.mlp."
  bool fused_gate_up = false;  // one "gate_up_proj" tensor
  MlpNames names;
};

enum class Activation { kSilu, kGeluTanh };

// config.json's hidden_act ("silu", "gelu_pytorch_tanh"), or an error naming it.
Result<Activation> activation_named(const std::string& name, const std::string& source);

class GatedMlp : public FeedForward {
 public:
  static Result<std::unique_ptr<GatedMlp>> load(WeightReader& weights, const MlpWeights& names, int64_t hidden_size,
                                                int64_t intermediate_size, Activation activation = Activation::kSilu);

  void forward(const float* x, int64_t num_rows, float* out, Scratch& scratch, ThreadPool& pool,
               const int32_t* lora_slots) const override;
  void add_cost(ModelCost& cost) const override;
  void add_lora_targets(LoraTargets& targets) const override;
  void set_lora(int32_t slot, const PeftAdapter* adapter) override;

 private:
  int64_t intermediate_size_ = 0;
  Activation activation_ = Activation::kSilu;
  Linear gate_up_proj_;  // [2 * intermediate, hidden]: gate rows, then up rows
  Linear down_proj_;     // [hidden, intermediate]
};

}  // namespace vllm
