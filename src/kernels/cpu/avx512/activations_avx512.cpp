// Compiled with -mavx512f; reached only through the dispatch table.
#include "kernels/cpu/activation_blocks.h"
#include "kernels/cpu/avx512/avx512_vec.h"

namespace vllm::kernels::cpu {

ActivationTable avx512_activation_table() {
  return {blocks::silu_and_mul_row<Avx512>, blocks::gelu_tanh_and_mul_row<Avx512>, blocks::exp_shifted<Avx512>};
}

}  // namespace vllm::kernels::cpu
