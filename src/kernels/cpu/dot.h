// Dot products of a float32 activation row with one weight row, per weight
// dtype and ISA.  The dispatch table is filled once at start-up.
#pragma once

#include <cstdint>

namespace vllm::kernels::cpu {

using DotF32Fn = float (*)(const float* x, const float* w, int64_t k);
using DotU16Fn = float (*)(const float* x, const uint16_t* w, int64_t k);

struct DotTable {
  const char* isa_name;
  DotF32Fn f32;
  DotU16Fn bf16;
  DotU16Fn f16;
};

// Scalar reference versions (test oracle and fallback).
DotTable ref_dot_table();
// AVX2 + FMA + F16C versions; only call when the CPU has them.
DotTable avx2_dot_table();

// The table chosen for this CPU.
const DotTable& active_dot_table();

}  // namespace vllm::kernels::cpu
