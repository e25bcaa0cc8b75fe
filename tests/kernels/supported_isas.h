// The instruction sets this CPU can run, lowest first: what the kernel tests
// compare against each other.
#pragma once

#include <vector>

#include "kernels/cpu/isa.h"

namespace vllm::kernels {

inline std::vector<cpu::CpuIsa> supported_isas() {
  std::vector<cpu::CpuIsa> isas;
  for (cpu::CpuIsa isa :
       {cpu::CpuIsa::kScalar, cpu::CpuIsa::kAvx2, cpu::CpuIsa::kAvx512, cpu::CpuIsa::kAvx512Bf16, cpu::CpuIsa::kAmx}) {
    if (isa <= cpu::supported_cpu_isa()) isas.push_back(isa);
  }
  return isas;
}

}  // namespace vllm::kernels
