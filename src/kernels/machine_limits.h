// The machine's limits, measured now on every thread of a pool with the ISA
// in use: what benchmarks compare their figures with, in the same run,
// because a shared machine's speed drifts.
#pragma once

#include <cstddef>

#include "base/thread_pool.h"

namespace vllm::kernels {

struct MachineLimits {
  double bandwidth_gb_per_s = 0;    // read-only sweep of a buffer as large as the weights read
  double peak_gflops = 0;           // float32 FMA, all threads
  double peak_bf16_gflops = 0;      // BF16 dot product (vdpbf16ps), all threads; 0 where the ISA in use has none
  double peak_amx_bf16_gflops = 0;  // AMX tdpbf16ps, all threads; 0 where the ISA in use is not amx
};

// The best of `repetitions` (the closest to the uncontended figure on a
// shared machine, so that fractions of it are not flattered); `buffer_bytes`
// is split between the threads.  Each thread sweeps its part both as one
// stream and as four interleaved ones (4 KiB from each in turn, as the GEMV
// reads four weight panels at once): some memory systems serve several
// streams faster than one, and the limit is the best either gets.
double measure_read_bandwidth(ThreadPool& pool, size_t buffer_bytes = size_t{1} << 30, int repetitions = 5);
double measure_fma_peak(ThreadPool& pool, int repetitions = 5);
// 0 where the ISA in use has no BF16 dot product.
double measure_bf16_dot_peak(ThreadPool& pool, int repetitions = 5);
// 0 where the ISA in use is not amx.
double measure_amx_bf16_peak(ThreadPool& pool, int repetitions = 5);
// The peak of the unit BF16 weights run on with the ISA in use: AMX's or the
// dot product's; 0 where they are widened to FP32 (the FMA peak applies).
double bf16_weights_peak(const MachineLimits& limits);
MachineLimits measure_machine_limits(ThreadPool& pool);

}  // namespace vllm::kernels
