// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch table.
#include "kernels/cpu/activation_blocks.h"
#include "kernels/cpu/avx2/avx2_vec.h"

namespace vllm::kernels::cpu {

ActivationTable avx2_activation_table() {
  return {blocks::silu_and_mul_row<Avx2>, blocks::gelu_tanh_and_mul_row<Avx2>, blocks::exp_shifted<Avx2>};
}

}  // namespace vllm::kernels::cpu
