#include "model/lora/lora_slots.h"

#include <algorithm>

#include "kernels/kernels.h"

namespace vllm {

void LoraSlots::set(int32_t slot, const PeftAdapter* adapter, const std::vector<std::string>& modules,
                    const std::vector<int64_t>& rows) {
  if (static_cast<size_t>(slot) >= parts_.size()) parts_.resize(static_cast<size_t>(slot) + 1);
  std::vector<Part>& parts = parts_[static_cast<size_t>(slot)];
  parts.clear();
  if (adapter == nullptr) return;
  int64_t first_column = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto found = adapter->modules.find(modules[i]);
    if (found != adapter->modules.end()) {
      const LoraModuleWeights& m = found->second;
      Part p;
      p.first_column = first_column;
      p.columns = rows[i];
      p.a = m.packed_a;
      p.scaled_b = m.packed_scaled_b;
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
  // One product of a slot's rows with one part's matrix, and where its rows come from and go.
  struct Product {
    size_t slot_rows;  // offset of the slot's row indices in `members`
    int64_t n;
    const Part* part;
    size_t x_at, shrunk_at, expanded_at;  // offsets in xs, shrunk, expanded
  };
  // Reused across calls (every Linear of every pass comes here): grown once, not allocated per call.
  thread_local std::vector<int64_t> members;
  thread_local std::vector<Product> products;
  thread_local std::vector<float> xs, shrunk, expanded;
  thread_local std::vector<kernels::LinearProblem> problems;
  members.clear();
  products.clear();
  size_t xs_size = 0, shrunk_size = 0, expanded_size = 0;
  for (size_t slot = 0; slot < parts_.size(); ++slot) {
    if (parts_[slot].empty()) continue;
    const size_t first = members.size();
    for (int64_t r = 0; r < num_rows; ++r) {
      if (slots[r] == static_cast<int32_t>(slot)) members.push_back(r);
    }
    const auto n = static_cast<int64_t>(members.size() - first);
    if (n == 0) continue;
    for (const Part& p : parts_[slot]) {
      products.push_back(Product{first, n, &p, xs_size, shrunk_size, expanded_size});
      shrunk_size += static_cast<size_t>(n * p.a->rows);
      expanded_size += static_cast<size_t>(n * p.columns);
    }
    xs_size += static_cast<size_t>(n * in_features);
  }
  if (products.empty()) return;
  xs.resize(xs_size);
  shrunk.resize(shrunk_size);
  expanded.resize(expanded_size);
  // Each slot's rows gathered once (its parts share them).
  for (size_t i = 0; i < products.size(); ++i) {
    const Product& p = products[i];
    if (i > 0 && products[i - 1].x_at == p.x_at) continue;
    for (int64_t r = 0; r < p.n; ++r) {
      std::copy_n(x + members[p.slot_rows + static_cast<size_t>(r)] * in_features, in_features,
                  xs.data() + p.x_at + static_cast<size_t>(r * in_features));
    }
  }
  // Every shrink in one parallel region, then every expand: two forks and joins per Linear, whatever the
  // number of adapters and stacked parts.
  problems.clear();
  for (const Product& p : products) {
    problems.push_back({xs.data() + p.x_at, p.n, p.part->a.get(), shrunk.data() + p.shrunk_at});
  }
  kernels::linear_group(problems, pool);
  problems.clear();
  for (const Product& p : products) {
    problems.push_back({shrunk.data() + p.shrunk_at, p.n, p.part->scaled_b.get(), expanded.data() + p.expanded_at});
  }
  kernels::linear_group(problems, pool);
  for (const Product& p : products) {
    for (int64_t r = 0; r < p.n; ++r) {
      float* out = y + members[p.slot_rows + static_cast<size_t>(r)] * out_features + p.part->first_column;
      const float* delta = expanded.data() + p.expanded_at + static_cast<size_t>(r * p.part->columns);
      for (int64_t c = 0; c < p.part->columns; ++c) out[c] += delta[c];
    }
  }
}

}  // namespace vllm
