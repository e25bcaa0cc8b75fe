// Blocks of dot products between float32 activation rows and weight rows,
// per weight dtype and ISA: y[r * ldy + j] = x[r, :] . w[j, :] for r < m and
// j < n, with x: [m, k] and w: [n, k] row-major.  Each output is computed by
// the same sequence of operations whatever m, n and its place in the block,
// so a row's result never depends on the batch around it.  The dispatch
// table is filled once at start-up.
#pragma once

#include <cstdint>

namespace vllm::kernels::cpu {

using DotF32Fn = void (*)(const float* x, int64_t m, const float* w, int64_t n, int64_t k, float* y, int64_t ldy);
using DotU16Fn = void (*)(const float* x, int64_t m, const uint16_t* w, int64_t n, int64_t k, float* y, int64_t ldy);

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
