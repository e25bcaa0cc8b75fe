#include "model/layers/mlp.h"

#include "base/logging.h"
#include "kernels/kernels.h"

namespace vllm {

Result<Activation> activation_named(const std::string& name, const std::string& source) {
  if (name == "silu") return Activation::kSilu;
  if (name == "gelu_pytorch_tanh") return Activation::kGeluTanh;
  return unimplemented(source + ": unsupported hidden_act '" + name + "'; supported: silu, gelu_pytorch_tanh");
}

Result<std::unique_ptr<GatedMlp>> GatedMlp::load(WeightReader& weights, const MlpWeights& names, int64_t hidden_size,
                                                 int64_t intermediate_size, Activation activation) {
  auto m = std::make_unique<GatedMlp>();
  const TensorParallel& tp = weights.tensor_parallel();
  // Under tensor parallelism a rank holds a share of gate's and up's rows
  // and the same share of down's columns.
  MatrixShard gate_up, down;
  if (tp.size() > 1) {
    VLLM_CHECK(intermediate_size % tp.size() == 0,
               "an intermediate size that the tensor-parallel size divides (checked when the model is loaded)");
    const IndexRange share = tp.share(intermediate_size);
    gate_up.rows = {share, names.fused_gate_up ? IndexRange{intermediate_size + share.first, share.count} : share};
    down.cols = share;
  }
  m->intermediate_size_ = down.cols.size_of(intermediate_size);
  m->activation_ = activation;
  const std::string& p = names.prefix;
  const MlpNames& n = names.names;
  if (names.fused_gate_up) {
    // A fused tensor's shard is two ranges of it: name it twice.
    const auto parts = static_cast<size_t>(tp.size() > 1 ? 2 : 1);
    VLLM_ASSIGN_OR_RETURN(m->gate_up_proj_,
                          Linear::load_shard(weights, std::vector<std::string>(parts, p + "gate_up_proj.weight"),
                                             std::vector<int64_t>(parts, 2 * intermediate_size), hidden_size, gate_up));
  } else {
    VLLM_ASSIGN_OR_RETURN(m->gate_up_proj_,
                          Linear::load_shard(weights, {p + n.gate + ".weight", p + n.up + ".weight"},
                                             {intermediate_size, intermediate_size}, hidden_size, gate_up));
  }
  VLLM_ASSIGN_OR_RETURN(
      m->down_proj_, Linear::load_shard(weights, {p + n.down + ".weight"}, {hidden_size}, intermediate_size, down, {},
                                        tp.size() > 1 ? tp.group : nullptr));
  return m;
}

void GatedMlp::forward(const float* x, int64_t num_rows, float* out, Scratch& scratch, ThreadPool& pool,
                       const int32_t* lora_slots) const {
  const int64_t inter = intermediate_size_;
  float* gate_up = scratch.get(ScratchSlot::kGateUp, static_cast<size_t>(num_rows * 2 * inter));
  float* act = scratch.get(ScratchSlot::kAct, static_cast<size_t>(num_rows * inter));
  gate_up_proj_.forward(x, num_rows, gate_up, pool, lora_slots);
  if (activation_ == Activation::kSilu) {
    kernels::silu_and_mul(gate_up, num_rows, inter, act, pool);
  } else {
    kernels::gelu_tanh_and_mul(gate_up, num_rows, inter, act, pool);
  }
  down_proj_.forward(act, num_rows, out, pool, lora_slots);
}

void GatedMlp::add_cost(ModelCost& cost) const {
  gate_up_proj_.add_cost(cost);
  down_proj_.add_cost(cost);
}

void GatedMlp::set_lora(int32_t slot, const PeftAdapter* adapter) {
  gate_up_proj_.set_lora(slot, adapter);
  down_proj_.set_lora(slot, adapter);
}

void GatedMlp::add_lora_targets(LoraTargets& targets) const {
  gate_up_proj_.add_lora_targets(targets);
  down_proj_.add_lora_targets(targets);
}

}  // namespace vllm
