#include "kernels/machine_limits.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/clock.h"
#include "kernels/cpu/isa.h"

namespace vllm::kernels {
namespace {

// Keeps the probes' results alive so that the compiler cannot drop their loops.
std::atomic<float> g_sink{0};

}  // namespace

double measure_read_bandwidth(ThreadPool& pool, size_t buffer_bytes, int repetitions) {
  const cpu::ProbeTable& probe = cpu::probe_table(cpu::active_cpu_isa());
  const int64_t threads = pool.num_threads();
  const int64_t per_thread = static_cast<int64_t>(buffer_bytes / sizeof(float)) / threads / 256 * 256;
  AlignedBuffer buffer(static_cast<size_t>(per_thread * threads) * sizeof(float));
  // Written first, each part by the thread that reads it: untouched pages
  // would all read the kernel's one shared zero page, from cache.
  pool.run([&](int worker) { std::fill_n(buffer.as<float>() + worker * per_thread, per_thread, 1.0f); });
  const float* data = buffer.as<float>();
  std::vector<double> rates;
  for (int rep = 0; rep < repetitions; ++rep) {
    const double start = now_seconds();
    pool.run([&](int worker) { g_sink += probe.read_sum(data + worker * per_thread, per_thread); });
    rates.push_back(static_cast<double>(buffer.size_bytes()) / (now_seconds() - start) / 1e9);
  }
  return *std::max_element(rates.begin(), rates.end());
}

double measure_fma_peak(ThreadPool& pool, int repetitions) {
  const cpu::ProbeTable& probe = cpu::probe_table(cpu::active_cpu_isa());
  constexpr int64_t kIterations = 20'000'000;  // about 0.2 s per repetition at AVX-512 speed
  std::vector<double> rates;
  for (int rep = 0; rep < repetitions; ++rep) {
    const double start = now_seconds();
    pool.run([&](int) { g_sink += probe.fma_burst(kIterations); });
    const double flops = static_cast<double>(kIterations * probe.flops_per_iteration * pool.num_threads());
    rates.push_back(flops / (now_seconds() - start) / 1e9);
  }
  return *std::max_element(rates.begin(), rates.end());
}

MachineLimits measure_machine_limits(ThreadPool& pool) {
  MachineLimits limits;
  limits.bandwidth_gb_per_s = measure_read_bandwidth(pool);
  limits.peak_gflops = measure_fma_peak(pool);
  return limits;
}

}  // namespace vllm::kernels
