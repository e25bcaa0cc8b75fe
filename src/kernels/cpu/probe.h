// Loops that measure the machine rather than compute anything: a read-only
// sweep (memory bandwidth) and independent FMA chains (peak FLOP/s), per
// ISA, so that benchmarks can state their figures against the limits
// measured in the same run.
#pragma once

#include <cstdint>

namespace vllm::kernels::cpu {

struct ProbeTable {
  // Sum of p[0, n) (n a multiple of 256), read with as many loads in flight as the ISA allows.
  float (*read_sum)(const float* p, int64_t n);
  // `iterations` rounds of independent FMAs; returns a value that depends on all of them.
  float (*fma_burst)(int64_t iterations);
  int64_t flops_per_iteration;
  // The same for the BF16 dot product (vdpbf16ps), where the ISA has it.
  float (*bf16_dot_burst)(int64_t iterations) = nullptr;
  int64_t bf16_dot_flops_per_iteration = 0;
  // The same for AMX's tdpbf16ps, where the ISA has it.
  float (*amx_bf16_burst)(int64_t iterations) = nullptr;
  int64_t amx_bf16_flops_per_iteration = 0;
};

ProbeTable ref_probe_table();
ProbeTable avx2_probe_table();
ProbeTable avx512_probe_table();
ProbeTable avx512_bf16_probe_table();  // AVX-512's, with bf16_dot_burst
ProbeTable amx_probe_table();          // AVX512-BF16's, with amx_bf16_burst

}  // namespace vllm::kernels::cpu
