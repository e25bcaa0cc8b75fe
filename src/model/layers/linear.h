// The one place a weight matrix meets activations: y = x W^T + b.  Every
// architecture's projections are Linears, so that a weight format (quantized
// matrices) or a per-request delta (LoRA) hooks in here and nowhere else.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/packed_matrix.h"
#include "model/layers/weight_reader.h"
#include "model/lora/lora_slots.h"
#include "model/lora/peft_adapter.h"
#include "model/model.h"

namespace vllm {

class Linear {
 public:
  Linear() = default;

  // Checkpoint matrices [rows[i], in_features] stacked by rows into one
  // output of sum(rows) features (q, k, v read together; gate and up; or one
  // fused tensor), with biases of the same names' parts when `bias_names` is
  // not empty.
  static Result<Linear> load(WeightReader& weights, const std::vector<std::string>& names,
                             const std::vector<int64_t>& rows, int64_t in_features,
                             const std::vector<std::string>& bias_names = {});
  // One rank's share of such a Linear under tensor parallelism
  // (tensor_parallel.h).  Column-parallel: `shard` names each part's rows;
  // the output holds their features, the bias their elements.
  // Row-parallel: `shard` names the input features this rank holds, and
  // forward() sums the products of `reduce`'s ranks (an all-reduce) before
  // adding the whole bias.
  static Result<Linear> load_shard(WeightReader& weights, const std::vector<std::string>& names,
                                   const std::vector<int64_t>& rows, int64_t in_features, const MatrixShard& shard,
                                   const std::vector<std::string>& bias_names = {}, Communicator* reduce = nullptr);
  // Over a matrix another layer owns too (an LM head tied to the embedding
  // table); `module` names it for adapters ("lm_head"), or none can change it.
  // Under tensor parallelism the matrix is `rows` of the module's
  // `module_rows` (a vocabulary's share).
  static Linear shared(std::shared_ptr<const kernels::PackedMatrix> weight, std::string module = "",
                       const IndexRange& rows = {}, int64_t module_rows = 0);

  // y: [num_rows, out_features] of x: [num_rows, in_features]; with
  // lora_slots ([num_rows]: each row's adapter slot, -1 none) each row's
  // adapter delta is added.
  void forward(const float* x, int64_t num_rows, float* y, ThreadPool& pool, const int32_t* lora_slots = nullptr) const;

  // Several bias-free Linears' forward passes at once, as each alone gives
  // them (a mixture's experts: one parallel region for all their GEMMs).
  struct Call {
    const Linear* linear;
    const float* x;
    int64_t num_rows;
    float* y;
  };
  static void forward_group(const std::vector<Call>& calls, ThreadPool& pool);

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  // For the benchmarks' limits: its multiply-adds per row and bytes read.
  void add_cost(ModelCost& cost, bool lm_head = false) const;
  // Each checkpoint module it computes (q, k and v of a stacked one), as a
  // LoRA adapter may name it.
  void add_lora_targets(LoraTargets& targets) const;
  // Slot `slot` takes `adapter`'s matrices of this Linear's modules (null: none).
  void set_lora(int32_t slot, const PeftAdapter* adapter);

 private:
  // A row-parallel shard's forward: its product (and its share of the
  // adapters' deltas, which are linear in its inputs too), summed over the
  // group, plus the bias.
  void forward_reduced(const float* x, int64_t num_rows, float* y, ThreadPool& pool, const int32_t* lora_slots) const;

  std::shared_ptr<const kernels::PackedMatrix> weight_;  // [out_features, in_features]
  std::vector<float> bias_;                              // [out_features], or empty
  Communicator* reduce_ = nullptr;                       // a row-parallel shard's group
  int64_t in_features_ = 0, out_features_ = 0;
  // The checkpoint modules stacked in its output, in order, and their rows
  // here; under tensor parallelism the share of each module's rows, and of
  // its inputs, that they are (LoraTarget::rows, cols).
  std::vector<std::string> modules_;
  std::vector<int64_t> module_rows_;
  std::vector<LoraTarget> module_targets_;
  LoraSlots lora_;
};

}  // namespace vllm
