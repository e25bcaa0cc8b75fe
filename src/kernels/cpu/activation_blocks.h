// The kernels of activations.h, written once for any vector ISA (traits V as
// in attention_blocks.h, plus V::div).
#pragma once

#include <algorithm>

#include "kernels/cpu/activations.h"
#include "kernels/cpu/vec_math.h"

namespace vllm::kernels::cpu::blocks {

template <typename V>
void silu_and_mul_row(const float* gate_up, int64_t n, float* out) {
  const float* up = gate_up + n;
  for (int64_t i = 0; i < n; i += V::kLanes) {
    const int64_t count = std::min<int64_t>(V::kLanes, n - i);
    const typename V::Reg g = V::load(gate_up + i, count);
    // e^-g, its argument kept <= 87 where exp_poly is finite.
    const typename V::Reg e = exp_lanes<V>(V::sub(V::zero(), V::max(g, V::set1(-87.0f))));
    const typename V::Reg sigmoid = V::div(V::set1(1.0f), V::add(V::set1(1.0f), e));
    V::store(out + i, V::mul(V::mul(g, sigmoid), V::load(up + i, count)), count);
  }
}

template <typename V>
void exp_shifted(const float* x, int64_t n, float shift, float* out) {
  for (int64_t i = 0; i < n; i += V::kLanes) {
    const int64_t count = std::min<int64_t>(V::kLanes, n - i);
    V::store(out + i, exp_lanes<V>(V::sub(V::load(x + i, count), V::set1(shift))), count);
  }
}

}  // namespace vllm::kernels::cpu::blocks
