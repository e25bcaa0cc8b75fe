#include "model/lora/lora_slots.h"

#include <algorithm>

#include "kernels/kernels.h"

namespace vllm {

void LoraSlots::set(int32_t slot, const PeftAdapter* adapter, const std::vector<std::string>& modules,
                    const std::vector<int64_t>& rows, int64_t in_features, ThreadPool& pool) {
  if (static_cast<size_t>(slot) >= parts_.size()) parts_.resize(static_cast<size_t>(slot) + 1);
  std::vector<Part>& parts = parts_[static_cast<size_t>(slot)];
  parts.clear();
  if (adapter == nullptr) return;
  int64_t first_column = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto found = adapter->modules.find(modules[i]);
    if (found != adapter->modules.end()) {
      const LoraModuleWeights& m = found->second;
      const std::vector<float> scaled_b = m.scaled_b(adapter->scaling);
      Part p;
      p.first_column = first_column;
      p.columns = rows[i];
      p.a = std::make_shared<const kernels::PackedMatrix>(
          kernels::pack_matrix(Tensor{m.a.data(), DType::kF32, {m.rank, in_features}}, pool));
      p.scaled_b = std::make_shared<const kernels::PackedMatrix>(
          kernels::pack_matrix(Tensor{scaled_b.data(), DType::kF32, {rows[i], m.rank}}, pool));
      parts.push_back(std::move(p));
    }
    first_column += rows[i];
  }
}

bool LoraSlots::empty() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const std::vector<Part>& p) { return p.empty(); });
}

void LoraSlots::apply(const float* x, int64_t num_rows, int64_t in_features, const int32_t* slots, float* y,
                      int64_t out_features, ThreadPool& pool) const {
  // Reused across calls (every Linear of every pass comes here): grown once, not allocated per call.
  thread_local std::vector<int64_t> members;
  thread_local std::vector<float> xs, shrunk, expanded;
  for (size_t slot = 0; slot < parts_.size(); ++slot) {
    const std::vector<Part>& parts = parts_[slot];
    if (parts.empty()) continue;
    members.clear();
    for (int64_t r = 0; r < num_rows; ++r) {
      if (slots[r] == static_cast<int32_t>(slot)) members.push_back(r);
    }
    if (members.empty()) continue;
    const auto n = static_cast<int64_t>(members.size());
    xs.resize(static_cast<size_t>(n * in_features));
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(x + members[static_cast<size_t>(i)] * in_features, in_features, xs.data() + i * in_features);
    }
    for (const Part& p : parts) {
      shrunk.resize(static_cast<size_t>(n * p.a->rows));
      expanded.resize(static_cast<size_t>(n * p.columns));
      kernels::linear(xs.data(), n, *p.a, nullptr, shrunk.data(), pool);
      kernels::linear(shrunk.data(), n, *p.scaled_b, nullptr, expanded.data(), pool);
      for (int64_t i = 0; i < n; ++i) {
        float* out = y + members[static_cast<size_t>(i)] * out_features + p.first_column;
        const float* delta = expanded.data() + i * p.columns;
        for (int64_t c = 0; c < p.columns; ++c) out[c] += delta[c];
      }
    }
  }
}

}  // namespace vllm
