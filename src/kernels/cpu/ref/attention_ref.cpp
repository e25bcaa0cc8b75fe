#include "kernels/cpu/attention_blocks.h"
#include "kernels/cpu/ref/scalar_vec.h"

namespace vllm::kernels::cpu {
AttentionTable ref_attention_table() {
  return {blocks::attend_row<Scalar, float>, blocks::attend_row<Scalar, uint16_t>, blocks::attend_row<Scalar, uint8_t>};
}

}  // namespace vllm::kernels::cpu
