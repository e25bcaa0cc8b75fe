#include "kernels/cpu/activation_blocks.h"
#include "kernels/cpu/ref/scalar_vec.h"

namespace vllm::kernels::cpu {

ActivationTable ref_activation_table() {
  return {blocks::silu_and_mul_row<Scalar>, blocks::gelu_tanh_and_mul_row<Scalar>, blocks::exp_shifted<Scalar>};
}

}  // namespace vllm::kernels::cpu
