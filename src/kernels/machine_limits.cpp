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
  constexpr int64_t kStreams = 4;
  constexpr int64_t kPieceFloats = 1024;  // 4 KiB
  const int64_t threads = pool.num_threads();
  const int64_t per_thread = static_cast<int64_t>(buffer_bytes / sizeof(float)) / threads / (kStreams * kPieceFloats) *
                             (kStreams * kPieceFloats);
  AlignedBuffer buffer(static_cast<size_t>(per_thread * threads) * sizeof(float));
  // Written first, each part by the thread that reads it: untouched pages
  // would all read the kernel's one shared zero page, from cache.
  pool.run([&](int worker) { std::fill_n(buffer.as<float>() + worker * per_thread, per_thread, 1.0f); });
  const float* data = buffer.as<float>();
  auto one_stream = [&](const float* part) { return probe.read_sum(part, per_thread); };
  auto interleaved = [&](const float* part) {
    const int64_t stream_floats = per_thread / kStreams;
    float sum = 0;
    for (int64_t offset = 0; offset < stream_floats; offset += kPieceFloats) {
      for (int64_t s = 0; s < kStreams; ++s) sum += probe.read_sum(part + s * stream_floats + offset, kPieceFloats);
    }
    return sum;
  };
  double best = 0;
  for (int rep = 0; rep < repetitions; ++rep) {
    for (bool streams : {false, true}) {
      const double start = now_seconds();
      pool.run([&](int worker) {
        const float* part = data + worker * per_thread;
        g_sink += streams ? interleaved(part) : one_stream(part);
      });
      best = std::max(best, static_cast<double>(buffer.size_bytes()) / (now_seconds() - start) / 1e9);
    }
  }
  return best;
}

namespace {

double burst_peak(ThreadPool& pool, float (*burst)(int64_t), int64_t flops_per_iteration, int repetitions) {
  constexpr int64_t kIterations = 20'000'000;  // about 0.2 s per repetition at AVX-512 FMA speed
  double best = 0;
  for (int rep = 0; rep < repetitions; ++rep) {
    const double start = now_seconds();
    pool.run([&](int) { g_sink += burst(kIterations); });
    const double flops = static_cast<double>(kIterations * flops_per_iteration * pool.num_threads());
    best = std::max(best, flops / (now_seconds() - start) / 1e9);
  }
  return best;
}

}  // namespace

double measure_fma_peak(ThreadPool& pool, int repetitions) {
  const cpu::ProbeTable& probe = cpu::probe_table(cpu::active_cpu_isa());
  return burst_peak(pool, probe.fma_burst, probe.flops_per_iteration, repetitions);
}

double measure_bf16_dot_peak(ThreadPool& pool, int repetitions) {
  const cpu::ProbeTable& probe = cpu::probe_table(cpu::active_cpu_isa());
  if (probe.bf16_dot_burst == nullptr) return 0;
  return burst_peak(pool, probe.bf16_dot_burst, probe.bf16_dot_flops_per_iteration, repetitions);
}

double measure_amx_bf16_peak(ThreadPool& pool, int repetitions) {
  const cpu::ProbeTable& probe = cpu::probe_table(cpu::active_cpu_isa());
  if (probe.amx_bf16_burst == nullptr) return 0;
  return burst_peak(pool, probe.amx_bf16_burst, probe.amx_bf16_flops_per_iteration, repetitions);
}

double bf16_weights_peak(const MachineLimits& limits) {
  switch (cpu::active_cpu_isa()) {
    case cpu::CpuIsa::kAmx:
      return limits.peak_amx_bf16_gflops;
    case cpu::CpuIsa::kAvx512Bf16:
      return limits.peak_bf16_gflops;
    default:
      return 0;
  }
}

MachineLimits measure_machine_limits(ThreadPool& pool) {
  MachineLimits limits;
  limits.bandwidth_gb_per_s = measure_read_bandwidth(pool);
  limits.peak_gflops = measure_fma_peak(pool);
  limits.peak_bf16_gflops = measure_bf16_dot_peak(pool);
  limits.peak_amx_bf16_gflops = measure_amx_bf16_peak(pool);
  return limits;
}

}  // namespace vllm::kernels
