#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

#include "kernels/cpu/isa.h"
#include "kernels/kernels.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels {
namespace cpu {
namespace {

// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c").
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

// CPUID leaf 7 sub-leaf 1, EAX bit 5.
bool has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 5)) != 0;
}

// CPUID leaf 7 sub-leaf 0, EDX bits 22 (AMX-BF16) and 24 (AMX-TILE).
bool has_amx_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  constexpr unsigned kBits = (1u << 22) | (1u << 24);
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & kBits) == kBits;
}

// CPUID leaf 7 sub-leaf 0, ECX bit 11 (AVX512-VNNI) and EDX bit 25 (AMX-INT8).
bool has_avx512_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 11)) != 0;
}
bool has_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 25)) != 0;
}

// AVX-512's int8 GEMMs: VNNI's where the CPU has it, else AVX2's.  (The
// int8 arithmetics are exact, so which kernel runs never changes a bit.)
GemmTable with_int8(GemmTable t) {
  t.quantize_int8_rows = avx512_quantize_int8_rows();
  t.int8 = has_avx512_vnni() ? avx512_vnni_int8_gemm() : avx2_int8_gemm();
  t.quantize_int8_blocks = has_avx512_vnni() ? avx512_quantize_int8_blocks() : avx2_quantize_int8_blocks();
  t.block_int8 = has_avx512_vnni() ? avx512_vnni_block_int8_gemm() : avx2_block_int8_gemm();
  return t;
}

// Linux hands out the tile data state (8 KiB per thread) only to a process
// that asks: once, for all its threads.  A kernel without AMX support (or
// one that refuses) says no, and the AMX path is simply not offered.
bool tile_data_granted() {
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

CpuIsa detect_supported() {
  __builtin_cpu_init();
  // AVX2 with FMA and F16C is the project's baseline; the scalar kernels are
  // the last resort so that the binary still runs (slowly) on older CPUs.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !has_f16c()) return CpuIsa::kScalar;
  if (!__builtin_cpu_supports("avx512f")) return CpuIsa::kAvx2;
  if (!has_avx512_bf16()) return CpuIsa::kAvx512;
  return has_amx_bf16() && tile_data_granted() ? CpuIsa::kAmx : CpuIsa::kAvx512Bf16;
}

// FLOP/s of one thread running `burst`, the best of a few short bursts.
double burst_rate(float (*burst)(int64_t), int64_t flops_per_iteration) {
  constexpr int64_t kIterations = 1'000'000;  // about 5 ms at AVX-512 speed
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    volatile float sink = burst(kIterations);
    (void)sink;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(kIterations * flops_per_iteration) / seconds);
  }
  return best;
}

// A BF16 path wins only where it is clearly faster than FP32 FMAs (the
// dot product: 2x on Zen 4, 0.5x on Intel's Rapids cores; AMX: about 14x
// there): a noisy moment cannot flip the choice, and with it the BF16
// arithmetic, from one run to the next.
CpuIsa detect_best() {
  const CpuIsa supported = supported_cpu_isa();
  if (supported < CpuIsa::kAvx512Bf16) return supported;
  const ProbeTable& probe = probe_table(supported);
  const double fma = burst_rate(probe.fma_burst, probe.flops_per_iteration);
  if (supported == CpuIsa::kAmx && burst_rate(probe.amx_bf16_burst, probe.amx_bf16_flops_per_iteration) > 1.5 * fma) {
    return CpuIsa::kAmx;
  }
  const double dot = burst_rate(probe.bf16_dot_burst, probe.bf16_dot_flops_per_iteration);
  return dot > 1.5 * fma ? CpuIsa::kAvx512Bf16 : CpuIsa::kAvx512;
}

std::atomic<CpuIsa>& active() {
  static std::atomic<CpuIsa> isa{best_cpu_isa()};
  return isa;
}

}  // namespace

CpuIsa supported_cpu_isa() {
  static const CpuIsa supported = detect_supported();
  return supported;
}

CpuIsa best_cpu_isa() {
  static const CpuIsa best = detect_best();
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
    case CpuIsa::kAvx512Bf16:
      return "avx512_bf16";
    case CpuIsa::kAmx:
      return "amx";
  }
  return "?";
}

const GemmTable& gemm_table(CpuIsa isa) {
  static const GemmTable ref = ref_gemm_table(), avx2 = avx2_gemm_table(), avx512 = with_int8(avx512_gemm_table());
  static const GemmTable avx512_bf16 = [] {
    GemmTable t = avx512;
    t.bf16 = avx512_bf16_pair_gemm();
    return t;
  }();
  static const GemmTable amx = [] {
    GemmTable t = avx512;
    t.bf16 = amx_bf16_gemm_fn();
    t.round_bf16_tiles = amx_round_bf16_tiles_fn();
    t.rounded_bf16 = amx_rounded_bf16_gemm_fn();
    if (has_amx_int8()) {
      t.int8 = amx_int8_gemm_fn();
      t.block_int8 = amx_block_int8_gemm_fn();
    }
    return t;
  }();
  switch (isa) {
    case CpuIsa::kScalar:
      return ref;
    case CpuIsa::kAvx2:
      return avx2;
    case CpuIsa::kAvx512:
      return avx512;
    case CpuIsa::kAvx512Bf16:
      return avx512_bf16;
    case CpuIsa::kAmx:
      return amx;
  }
  return ref;
}

const GemmTable& reference_gemm_table(CpuIsa isa) {
  static const GemmTable ref = ref_gemm_table();
  static const GemmTable bf16_pairs = [] {
    GemmTable t = ref_gemm_table();
    t.bf16 = ref_bf16_pair_gemm();
    return t;
  }();
  static const GemmTable amx = [] {
    GemmTable t = ref_gemm_table();
    t.bf16 = nullptr;
    return t;
  }();
  return isa == CpuIsa::kAvx512Bf16 ? bf16_pairs : isa == CpuIsa::kAmx ? amx : ref;
}

const AttentionTable& attention_table(CpuIsa isa) {
  static const AttentionTable ref = ref_attention_table(), avx2 = avx2_attention_table(),
                              avx512 = avx512_attention_table();
  if (isa == CpuIsa::kAmx) {
    static const AttentionTable amx = amx_attention_table();
    return amx;
  }
  return isa >= CpuIsa::kAvx512 ? avx512 : isa == CpuIsa::kAvx2 ? avx2 : ref;
}

const ActivationTable& activation_table(CpuIsa isa) {
  static const ActivationTable ref = ref_activation_table(), avx2 = avx2_activation_table(),
                               avx512 = avx512_activation_table();
  return isa >= CpuIsa::kAvx512 ? avx512 : isa == CpuIsa::kAvx2 ? avx2 : ref;
}

const ProbeTable& probe_table(CpuIsa isa) {
  static const ProbeTable ref = ref_probe_table(), avx2 = avx2_probe_table(), avx512 = avx512_probe_table();
  if (isa == CpuIsa::kAvx512Bf16) {
    static const ProbeTable avx512_bf16 = avx512_bf16_probe_table();
    return avx512_bf16;
  }
  if (isa == CpuIsa::kAmx) {
    static const ProbeTable amx = amx_probe_table();
    return amx;
  }
  return isa == CpuIsa::kAvx512 ? avx512 : isa == CpuIsa::kAvx2 ? avx2 : ref;
}

}  // namespace cpu

PanelLayout packed_layout(DType dtype) {
  return dtype == DType::kBF16 && cpu::active_cpu_isa() == cpu::CpuIsa::kAmx ? PanelLayout::kAmxTiles
                                                                             : PanelLayout::kColumns;
}

std::string cpu_isa() { return cpu::cpu_isa_name(cpu::active_cpu_isa()); }

Status force_cpu_isa(const std::string& name) {
  if (name == "auto") {
    cpu::active().store(cpu::best_cpu_isa());
    return Status::ok();
  }
  const cpu::CpuIsa supported = cpu::supported_cpu_isa();
  for (cpu::CpuIsa isa :
       {cpu::CpuIsa::kScalar, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512, cpu::CpuIsa::kAvx512Bf16, cpu::CpuIsa::kAmx}) {
    if (name != cpu::cpu_isa_name(isa)) continue;
    if (isa > supported) {
      return invalid_argument("--cpu-isa " + name + ": this CPU supports at most " + cpu::cpu_isa_name(supported));
    }
    cpu::active().store(isa);
    return Status::ok();
  }
  return invalid_argument("--cpu-isa must be auto, amx, avx512_bf16, avx512, avx2 or scalar, got '" + name + "'");
}

}  // namespace vllm::kernels
