#include <cpuid.h>

#include <atomic>
#include <string>

#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"

namespace vllm::kernels {
namespace cpu {
namespace {

// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c").
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

CpuIsa detect() {
  __builtin_cpu_init();
  // AVX2 with FMA and F16C is the project's baseline; the scalar kernels are
  // the last resort so that the binary still runs (slowly) on older CPUs.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !has_f16c()) return CpuIsa::kScalar;
  return __builtin_cpu_supports("avx512f") ? CpuIsa::kAvx512 : CpuIsa::kAvx2;
}

std::atomic<CpuIsa>& active() {
  static std::atomic<CpuIsa> isa{best_cpu_isa()};
  return isa;
}

}  // namespace

CpuIsa best_cpu_isa() {
  static const CpuIsa best = detect();
  return best;
}

CpuIsa active_cpu_isa() { return active().load(std::memory_order_relaxed); }

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "scalar";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

const GemmTable& gemm_table(CpuIsa isa) {
  static const GemmTable ref = ref_gemm_table(), avx2 = avx2_gemm_table(), avx512 = avx512_gemm_table();
  return isa == CpuIsa::kAvx512 ? avx512 : isa == CpuIsa::kAvx2 ? avx2 : ref;
}

const AttentionTable& attention_table(CpuIsa isa) {
  static const AttentionTable ref = ref_attention_table(), avx2 = avx2_attention_table(),
                              avx512 = avx512_attention_table();
  return isa == CpuIsa::kAvx512 ? avx512 : isa == CpuIsa::kAvx2 ? avx2 : ref;
}

const ProbeTable& probe_table(CpuIsa isa) {
  static const ProbeTable ref = ref_probe_table(), avx2 = avx2_probe_table(), avx512 = avx512_probe_table();
  return isa == CpuIsa::kAvx512 ? avx512 : isa == CpuIsa::kAvx2 ? avx2 : ref;
}

}  // namespace cpu

std::string cpu_isa() { return cpu::cpu_isa_name(cpu::active_cpu_isa()); }

Status force_cpu_isa(const std::string& name) {
  const cpu::CpuIsa best = cpu::best_cpu_isa();
  if (name == "auto") {
    cpu::active().store(best);
    return Status::ok();
  }
  for (cpu::CpuIsa isa : {cpu::CpuIsa::kScalar, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512}) {
    if (name != cpu::cpu_isa_name(isa)) continue;
    if (isa > best) {
      return invalid_argument("--cpu-isa " + name + ": this CPU supports at most " + cpu::cpu_isa_name(best));
    }
    cpu::active().store(isa);
    return Status::ok();
  }
  return invalid_argument("--cpu-isa must be auto, avx512, avx2 or scalar, got '" + name + "'");
}

}  // namespace vllm::kernels
