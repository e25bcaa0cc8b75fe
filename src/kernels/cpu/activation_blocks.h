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
void gelu_tanh_and_mul_row(const float* gate_up, int64_t n, float* out) {
  const float* up = gate_up + n;
  const typename V::Reg zero = V::zero(), one = V::set1(1.0f), two = V::set1(2.0f), half = V::set1(0.5f);
  const typename V::Reg cubic = V::set1(0.044715f), sqrt_2_over_pi = V::set1(0.7978845608028654f);
  const typename V::Reg limit = V::set1(87.0f);
  for (int64_t i = 0; i < n; i += V::kLanes) {
    const int64_t count = std::min<int64_t>(V::kLanes, n - i);
    const typename V::Reg g = V::load(gate_up + i, count);
    const typename V::Reg y = V::mul(sqrt_2_over_pi, V::add(g, V::mul(cubic, V::mul(g, V::mul(g, g)))));
    // 2y within [-87, 87], where exp_poly is finite: min(x, 87) as -max(-x, -87).
    const typename V::Reg y2 =
        V::sub(zero, V::max(V::sub(zero, V::max(V::mul(two, y), V::sub(zero, limit))), V::sub(zero, limit)));
    const typename V::Reg tanh = V::sub(one, V::div(two, V::add(exp_lanes<V>(y2), one)));
    V::store(out + i, V::mul(V::mul(V::mul(half, g), V::add(one, tanh)), V::load(up + i, count)), count);
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
