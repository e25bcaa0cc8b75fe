#include "model/lora/lora_slots.h"

#include <algorithm>

#include "model/lora/folded_shrink.h"

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
      p.rank = m.rank;
      p.fold = m.shrink_fold;
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

void LoraSlots::forward(const float* x, int64_t num_rows, int64_t in_features, const int32_t* slots, float* y,
                        int64_t out_features, const BaseProduct& base_product) const {
  // One part's product with one slot's rows: where its rows come from, its
  // shrink's output (folded, then summed) and its expand's.
  struct Product {
    size_t slot_rows;  // offset of the slot's row indices in `members`
    int64_t n;
    const Part* part;
    size_t x_at, folded_at, shrunk_at, expanded_at;  // offsets in xs, folded, shrunk, expanded
    const float* x;                                  // the slot's rows: x itself when they are all of x's, else in xs
    float* folded;                                   // [n * fold, fold * rank]
    float* shrunk;                                   // [n, rank]: `folded` itself when fold is 1
    float* expanded;
  };
  // Reused across calls (every Linear of every pass comes here): grown once, not allocated per call.
  thread_local std::vector<int64_t> members;
  thread_local std::vector<Product> products;
  thread_local std::vector<float> xs, folded, shrunk, expanded;
  thread_local std::vector<std::function<void()>> expands;
  thread_local std::vector<kernels::LinearProblem> shrinks;
  members.clear();
  products.clear();
  shrinks.clear();
  size_t xs_size = 0, folded_size = 0, shrunk_size = 0, expanded_size = 0;
  for (size_t slot = 0; slot < parts_.size(); ++slot) {
    if (parts_[slot].empty()) continue;
    const size_t first = members.size();
    for (int64_t r = 0; r < num_rows; ++r) {
      if (slots[r] == static_cast<int32_t>(slot)) members.push_back(r);
    }
    const auto n = static_cast<int64_t>(members.size() - first);
    if (n == 0) continue;
    for (const Part& p : parts_[slot]) {
      products.push_back(
          Product{first, n, &p, xs_size, folded_size, shrunk_size, expanded_size, nullptr, nullptr, nullptr, nullptr});
      folded_size += static_cast<size_t>(n * p.fold * p.a->rows);
      shrunk_size += static_cast<size_t>(n * p.rank);
      expanded_size += static_cast<size_t>(n * p.columns);
    }
    if (n < num_rows) xs_size += static_cast<size_t>(n * in_features);
  }
  if (products.empty()) return base_product(shrinks);
  xs.resize(xs_size);
  folded.resize(folded_size);
  shrunk.resize(shrunk_size);
  expanded.resize(expanded_size);
  // Each slot's rows gathered once (its parts share them); none when the slot has every row.
  for (size_t i = 0; i < products.size(); ++i) {
    Product& p = products[i];
    p.folded = folded.data() + p.folded_at;
    p.shrunk = p.part->fold == 1 ? p.folded : shrunk.data() + p.shrunk_at;
    p.expanded = expanded.data() + p.expanded_at;
    if (p.n == num_rows) {
      p.x = x;
      continue;
    }
    p.x = xs.data() + p.x_at;
    if (i > 0 && products[i - 1].x_at == p.x_at) continue;
    for (int64_t r = 0; r < p.n; ++r) {
      std::copy_n(x + members[p.slot_rows + static_cast<size_t>(r)] * in_features, in_features,
                  xs.data() + p.x_at + static_cast<size_t>(r * in_features));
    }
  }
  // Each shrink beside the base GEMM, its expand after it on the same thread (the expands read nothing else).
  expands.clear();
  expands.reserve(products.size());  // `then` points into it
  for (const Product& p : products) {
    expands.emplace_back([product = &p] {
      const Part& part = *product->part;
      if (part.fold > 1) unfold_shrink(product->folded, product->n, part.rank, part.fold, product->shrunk);
      kernels::linear(product->shrunk, product->n, *part.scaled_b, nullptr, product->expanded,
                      ThreadPool::caller_only());
    });
    shrinks.push_back({p.x, p.n * p.part->fold, p.part->a.get(), p.folded, &expands.back()});
  }
  base_product(shrinks);
  for (const Product& p : products) {
    for (int64_t r = 0; r < p.n; ++r) {
      float* out = y + members[p.slot_rows + static_cast<size_t>(r)] * out_features + p.part->first_column;
      const float* delta = p.expanded + r * p.part->columns;
      for (int64_t c = 0; c < p.part->columns; ++c) out[c] += delta[c];
    }
  }
}

}  // namespace vllm
