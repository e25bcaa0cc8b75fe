#include "model/layers/linear.h"

#include <numeric>
#include <string_view>

#include "base/logging.h"
#include "kernels/kernels.h"

namespace vllm {

Result<Linear> Linear::load(WeightReader& weights, const std::vector<std::string>& names,
                            const std::vector<int64_t>& rows, int64_t in_features,
                            const std::vector<std::string>& bias_names) {
  return load_shard(weights, names, rows, in_features, {}, bias_names);
}

Result<Linear> Linear::load_shard(WeightReader& weights, const std::vector<std::string>& names,
                                  const std::vector<int64_t>& rows, int64_t in_features, const MatrixShard& shard,
                                  const std::vector<std::string>& bias_names, Communicator* reduce) {
  VLLM_CHECK(reduce == nullptr || shard.rows.empty(), "a row-parallel shard holds every output feature");
  Linear l;
  l.in_features_ = shard.cols.size_of(in_features);
  for (size_t i = 0; i < names.size(); ++i) {
    constexpr std::string_view kSuffix = ".weight";
    const std::string& name = names[i];
    const IndexRange part_rows = shard.rows.empty() ? IndexRange{} : shard.rows[i];
    l.modules_.push_back(name.ends_with(kSuffix) ? name.substr(0, name.size() - kSuffix.size()) : name);
    l.module_rows_.push_back(part_rows.size_of(rows[i]));
    l.module_targets_.push_back({in_features, rows[i], false, part_rows, shard.cols});
  }
  l.out_features_ = std::accumulate(l.module_rows_.begin(), l.module_rows_.end(), int64_t{0});
  l.reduce_ = reduce;
  VLLM_ASSIGN_OR_RETURN(kernels::PackedMatrix w, weights.matrix_shards(names, rows, in_features, shard));
  l.weight_ = std::make_shared<const kernels::PackedMatrix>(std::move(w));
  if (!bias_names.empty()) {
    VLLM_ASSIGN_OR_RETURN(l.bias_, weights.vector_shards(bias_names, rows, WeightKind::kBias, shard.rows));
  }
  return l;
}

Linear Linear::shared(std::shared_ptr<const kernels::PackedMatrix> weight, std::string module, const IndexRange& rows,
                      int64_t module_rows) {
  Linear l;
  l.in_features_ = weight->cols;
  l.out_features_ = weight->rows;
  if (!module.empty()) {
    l.modules_.push_back(std::move(module));
    l.module_rows_.push_back(l.out_features_);
    l.module_targets_.push_back({l.in_features_, rows.whole() ? l.out_features_ : module_rows, false, rows, {}});
  }
  l.weight_ = std::move(weight);
  return l;
}

void Linear::forward(const float* x, int64_t num_rows, float* y, ThreadPool& pool, const int32_t* lora_slots) const {
  if (reduce_ != nullptr) return forward_reduced(x, num_rows, y, pool, lora_slots);
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  if (lora_slots == nullptr || lora_.empty()) return kernels::linear(x, num_rows, *weight_, bias, y, pool);
  lora_.forward(x, num_rows, in_features_, lora_slots, y, out_features_,
                [&](const std::vector<kernels::LinearProblem>& alongside) {
                  kernels::linear(x, num_rows, *weight_, bias, y, pool, alongside);
                });
}

void Linear::forward_reduced(const float* x, int64_t num_rows, float* y, ThreadPool& pool,
                             const int32_t* lora_slots) const {
  if (lora_slots == nullptr || lora_.empty()) {
    kernels::linear(x, num_rows, *weight_, nullptr, y, pool);
  } else {
    lora_.forward(x, num_rows, in_features_, lora_slots, y, out_features_,
                  [&](const std::vector<kernels::LinearProblem>& alongside) {
                    kernels::linear(x, num_rows, *weight_, nullptr, y, pool, alongside);
                  });
  }
  reduce_->all_reduce_sum(y, num_rows * out_features_);
  if (bias_.empty()) return;
  for (int64_t r = 0; r < num_rows; ++r) {
    float* row = y + r * out_features_;
    for (int64_t j = 0; j < out_features_; ++j) row[j] += bias_[static_cast<size_t>(j)];
  }
}

void Linear::forward_group(const std::vector<Call>& calls, ThreadPool& pool) {
  std::vector<kernels::LinearProblem> problems;
  for (const Call& c : calls) {
    VLLM_CHECK(c.linear->bias_.empty(), "Linear::forward_group takes bias-free Linears");
    problems.push_back({c.x, c.num_rows, c.linear->weight_.get(), c.y});
  }
  kernels::linear_group(problems, pool);
}

void Linear::add_cost(ModelCost& cost, bool lm_head) const {
  const auto params = static_cast<double>(out_features_ * in_features_);
  (lm_head ? cost.lm_head_params : cost.layer_params) += params;
  cost.weight_bytes += weight_->value_bytes();
  cost.bf16_matrices &= weight_->dtype == DType::kBF16 && !weight_->quantized();
}

void Linear::set_lora(int32_t slot, const PeftAdapter* adapter) { lora_.set(slot, adapter, modules_, module_rows_); }

void Linear::add_lora_targets(LoraTargets& targets) const {
  for (size_t i = 0; i < modules_.size(); ++i) targets[modules_[i]] = module_targets_[i];
}

}  // namespace vllm
