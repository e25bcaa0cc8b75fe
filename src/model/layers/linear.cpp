#include "model/layers/linear.h"

#include <numeric>
#include <string_view>

#include "base/logging.h"
#include "kernels/kernels.h"

namespace vllm {

Result<Linear> Linear::load(WeightReader& weights, const std::vector<std::string>& names,
                            const std::vector<int64_t>& rows, int64_t in_features,
                            const std::vector<std::string>& bias_names) {
  Linear l;
  l.in_features_ = in_features;
  l.out_features_ = std::accumulate(rows.begin(), rows.end(), int64_t{0});
  for (const std::string& name : names) {
    constexpr std::string_view kSuffix = ".weight";
    l.modules_.push_back(name.ends_with(kSuffix) ? name.substr(0, name.size() - kSuffix.size()) : name);
  }
  l.module_rows_ = rows;
  VLLM_ASSIGN_OR_RETURN(kernels::PackedMatrix w, weights.matrices(names, rows, in_features));
  l.weight_ = std::make_shared<const kernels::PackedMatrix>(std::move(w));
  if (!bias_names.empty()) {
    VLLM_ASSIGN_OR_RETURN(l.bias_, weights.vectors(bias_names, rows, WeightKind::kBias));
  }
  return l;
}

Linear Linear::shared(std::shared_ptr<const kernels::PackedMatrix> weight, std::string module) {
  Linear l;
  l.in_features_ = weight->cols;
  l.out_features_ = weight->rows;
  if (!module.empty()) {
    l.modules_.push_back(std::move(module));
    l.module_rows_.push_back(l.out_features_);
  }
  l.weight_ = std::move(weight);
  return l;
}

void Linear::forward(const float* x, int64_t num_rows, float* y, ThreadPool& pool, const int32_t* lora_slots) const {
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  if (lora_slots == nullptr || lora_.empty()) return kernels::linear(x, num_rows, *weight_, bias, y, pool);
  lora_.forward(x, num_rows, in_features_, lora_slots, y, out_features_,
                [&](const std::vector<kernels::LinearProblem>& alongside) {
                  kernels::linear(x, num_rows, *weight_, bias, y, pool, alongside);
                });
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
  for (size_t i = 0; i < modules_.size(); ++i) targets[modules_[i]] = {in_features_, module_rows_[i]};
}

}  // namespace vllm
