// Compiled with -mavx512f; reached only through the dispatch table.
#include "kernels/cpu/attention_blocks.h"
#include "kernels/cpu/avx512/avx512_vec.h"

namespace vllm::kernels::cpu {

AttentionTable avx512_attention_table() {
  return {blocks::attend_row<Avx512, float>, blocks::attend_row<Avx512, uint16_t>, blocks::attend_row<Avx512, uint8_t>};
}

}  // namespace vllm::kernels::cpu
