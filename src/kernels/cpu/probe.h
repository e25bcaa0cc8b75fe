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
};

ProbeTable ref_probe_table();
ProbeTable avx2_probe_table();
ProbeTable avx512_probe_table();

}  // namespace vllm::kernels::cpu
