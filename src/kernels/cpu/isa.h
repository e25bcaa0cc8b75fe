// The instruction set the kernels run with: the best this CPU has, detected
// once, unless --cpu-isa forced a lower one (to test or compare the others).
#pragma once

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/probe.h"

namespace vllm::kernels::cpu {

enum class CpuIsa { kScalar, kAvx2, kAvx512 };

CpuIsa best_cpu_isa();
CpuIsa active_cpu_isa();
const char* cpu_isa_name(CpuIsa isa);

const GemmTable& gemm_table(CpuIsa isa);
const AttentionTable& attention_table(CpuIsa isa);
const ProbeTable& probe_table(CpuIsa isa);

inline const GemmTable& active_gemm_table() { return gemm_table(active_cpu_isa()); }
inline const AttentionTable& active_attention_table() { return attention_table(active_cpu_isa()); }

}  // namespace vllm::kernels::cpu
