// Lane-wise math shared by the ISA-independent kernel templates, in the
// operations every vector traits struct V has, so that a scalar "vector" of
// one lane computes exactly what the AVX2 and AVX-512 lanes compute.
#pragma once

#include "kernels/cpu/attention.h"

namespace vllm::kernels::cpu::blocks {

// exp_poly of attention.h, lane by lane.
template <typename V>
typename V::Reg exp_lanes(typename V::Reg x) {
  x = V::max(x, V::set1(-87.0f));
  const typename V::Reg n = V::round(V::mul(x, V::set1(1.44269504088896341f)));
  typename V::Reg r = V::fmadd(n, V::set1(-0.693359375f), x);
  r = V::fmadd(n, V::set1(2.12194440e-4f), r);
  typename V::Reg p = V::set1(1.9875691500e-4f);
  p = V::fmadd(p, r, V::set1(1.3981999507e-3f));
  p = V::fmadd(p, r, V::set1(8.3334519073e-3f));
  p = V::fmadd(p, r, V::set1(4.1665795894e-2f));
  p = V::fmadd(p, r, V::set1(1.6666665459e-1f));
  p = V::fmadd(p, r, V::set1(5.0000001201e-1f));
  const typename V::Reg y = V::add(V::fmadd(p, V::mul(r, r), r), V::set1(1.0f));
  return V::mul(y, V::pow2(n));
}

}  // namespace vllm::kernels::cpu::blocks
