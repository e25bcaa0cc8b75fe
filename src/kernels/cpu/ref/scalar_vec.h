// The one-lane "vector" traits that the ISA-independent kernel templates are
// instantiated with for the scalar reference: the same arithmetic as the ISA
// versions, a lane at a time.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/e4m3_widening.h"
#include "tensor/dtype.h"

namespace vllm::kernels::cpu {

struct Scalar {
  using Reg = float;
  static constexpr int64_t kLanes = 1;
  // Attention: any: a scalar has no registers to run out of.
  static constexpr int kAttentionHeads = 4;
  static Reg zero() { return 0.0f; }
  static Reg set1(float v) { return v; }
  static Reg load(const float* p, int64_t count) { return count > 0 ? *p : 0.0f; }
  static Reg load_bf16_words(const uint16_t* p, int64_t count, bool high) {
    return load_bf16(p + (high ? 1 : 0), count);
  }
  static Reg load_bf16(const uint16_t* p, int64_t count) {
    if (count <= 0) return 0.0f;
    const uint32_t bits = static_cast<uint32_t>(*p) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  static Reg load_e4m3(const uint8_t* p, int64_t count) {
    return count > 0 ? f16_to_f32(e4m3_half_bits(*p)) * kE4m3HalfUnscale : 0.0f;
  }
  static void store(float* p, Reg v, int64_t count) {
    if (count > 0) *p = v;
  }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg sub(Reg a, Reg b) { return a - b; }
  static Reg mul(Reg a, Reg b) { return a * b; }
  static Reg div(Reg a, Reg b) { return a / b; }
  static Reg fmadd(Reg a, Reg b, Reg c) { return std::fma(a, b, c); }
  static Reg max(Reg a, Reg b) { return std::fmax(a, b); }
  static Reg round(Reg a) { return std::nearbyint(a); }
  static Reg pow2(Reg n) {
    const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
};

}  // namespace vllm::kernels::cpu
