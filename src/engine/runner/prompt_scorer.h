// The logits at every position of a token sequence, computed in prefill
// chunks that read the earlier ones through the paged KV cache — for
// reference checks against other implementations (tests, dump tools).
#pragma once

#include <optional>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"

namespace vllm {

// What an EAGLE head's check passes in and takes out besides the logits.
struct HiddenStateIO {
  const float* input = nullptr;  // [num_tokens, input_width]: an EAGLE head's input
  int64_t input_width = 0;
  bool input_from_head = false;       // ForwardBatch::input_hidden_from_head
  std::optional<HiddenStateTap> tap;  // what `output` receives of every token: [num_tokens, its width]
  std::vector<float>* output = nullptr;
};

// [token_ids.size(), vocab_size]; chunks of `chunk_tokens` tokens, over a KV
// cache of `kv_dtype` (F32, BF16 or F8_E4M3); every token computes with
// the model's LoRA adapter slot `lora_slot` (-1: none).
Result<std::vector<float>> score_all_positions(Model& model, ThreadPool& pool, const std::vector<int32_t>& token_ids,
                                               int32_t chunk_tokens, int32_t block_size = 16,
                                               DType kv_dtype = DType::kF32, const HiddenStateIO& hidden = {},
                                               int32_t lora_slot = -1);

}  // namespace vllm
