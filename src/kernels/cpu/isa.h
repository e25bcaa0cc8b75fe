// The instruction set the kernels run with: the best this CPU has, detected
// once, unless --cpu-isa forced another it supports (to test or compare).
// kAvx512Bf16 is AVX-512 with BF16 weights fed to vdpbf16ps (gemm.h's
// second BF16 arithmetic); it is the best only where that instruction
// measures faster than FP32 FMAs, which is so on AMD Zen 4 (twice the rate)
// and not on Intel's Sapphire and Emerald Rapids (half).  kAmx is AVX-512
// with BF16 weights in AMX tiles (gemm.h's third BF16 arithmetic), F32 and
// F16 weights as under kAvx512.
#pragma once

#include "kernels/cpu/activations.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/probe.h"

namespace vllm::kernels::cpu {

enum class CpuIsa { kScalar, kAvx2, kAvx512, kAvx512Bf16, kAmx };

CpuIsa supported_cpu_isa();  // the most this CPU can run
CpuIsa best_cpu_isa();       // the fastest of those
CpuIsa active_cpu_isa();
const char* cpu_isa_name(CpuIsa isa);

const GemmTable& gemm_table(CpuIsa isa);
// The scalar definition of `isa`'s arithmetic, exact to its GEMM table
// (kAmx's BF16 entry is null: that arithmetic has no scalar model).
const GemmTable& reference_gemm_table(CpuIsa isa);
const AttentionTable& attention_table(CpuIsa isa);
const ActivationTable& activation_table(CpuIsa isa);
const ProbeTable& probe_table(CpuIsa isa);

inline const GemmTable& active_gemm_table() { return gemm_table(active_cpu_isa()); }
inline const AttentionTable& active_attention_table() { return attention_table(active_cpu_isa()); }
inline const ActivationTable& active_activation_table() { return activation_table(active_cpu_isa()); }

}  // namespace vllm::kernels::cpu
