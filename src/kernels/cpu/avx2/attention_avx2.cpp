// Compiled with -mavx2 -mfma -mf16c; reached only through the dispatch table.
#include "kernels/cpu/attention_blocks.h"
#include "kernels/cpu/avx2/avx2_vec.h"

namespace vllm::kernels::cpu {

AttentionTable avx2_attention_table() {
  return {blocks::attend_row<Avx2, float>, blocks::attend_row<Avx2, uint16_t>, blocks::attend_row<Avx2, uint8_t>};
}

}  // namespace vllm::kernels::cpu
