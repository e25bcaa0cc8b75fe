// Blocks of dot products between float32 rows (attention's queries and
// keys), per ISA: y[r * ldy + j] = x[r, :] . w[j, :] for r < m and
// j < n, with x: [m, k] and w: [n, k] row-major.  Each output is computed by
// the same sequence of operations whatever m, n and its place in the block,
// so a row's result never depends on the batch around it.  The dispatch
// table is filled once at start-up.
#pragma once

#include <cstdint>

namespace vllm::kernels::cpu {

using DotF32Fn = void (*)(const float* x, int64_t m, const float* w, int64_t n, int64_t k, float* y, int64_t ldy);

struct DotTable {
  const char* isa_name;
  DotF32Fn f32;
};

// Scalar reference versions (test oracle and fallback).
DotTable ref_dot_table();
// AVX2 + FMA + F16C versions; only call when the CPU has them.
DotTable avx2_dot_table();

}  // namespace vllm::kernels::cpu
