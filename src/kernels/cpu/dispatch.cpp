#include <cpuid.h>

#include "base/logging.h"
#include "kernels/cpu/dot.h"

namespace vllm::kernels::cpu {
namespace {

// CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c").
bool has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

DotTable choose_dot_table() {
  __builtin_cpu_init();
  // AVX2 with FMA and F16C is the project's baseline; the scalar table is the
  // last resort so that the binary still runs (slowly) on older CPUs.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c()) {
    return avx2_dot_table();
  }
  return ref_dot_table();
}

}  // namespace

const DotTable& active_dot_table() {
  static const DotTable table = [] {
    DotTable t = choose_dot_table();
    VLLM_LOG(Debug) << "dot-product kernels: " << t.isa_name;
    return t;
  }();
  return table;
}

}  // namespace vllm::kernels::cpu
