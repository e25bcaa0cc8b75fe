#include "engine/runner/prompt_scorer.h"

#include <algorithm>
#include <numeric>

#include "engine/runner/model_runner.h"

namespace vllm {

Result<std::vector<float>> score_all_positions(Model& model, ThreadPool& pool, const std::vector<int32_t>& token_ids,
                                               int32_t chunk_tokens, int32_t block_size, DType kv_dtype,
                                               const HiddenStateIO& hidden, int32_t lora_slot) {
  const ModelConfig& config = model.config();
  const auto n = static_cast<int32_t>(token_ids.size());
  if (n == 0) return invalid_argument("the sequence is empty");
  if (n > config.max_context_length()) {
    return invalid_argument("the sequence is longer than the maximum context length");
  }
  if (chunk_tokens < 1 || block_size < 1) return invalid_argument("chunk_tokens and block_size must be at least 1");
  for (int32_t id : token_ids) {
    if (id < 0 || id >= config.vocab_size)
      return invalid_argument("token id " + std::to_string(id) + " is out of range");
  }
  // One sequence owns the whole pool, its blocks in order.
  const int32_t num_blocks = (n + block_size - 1) / block_size;
  std::vector<BlockId> block_table(static_cast<size_t>(num_blocks));
  std::iota(block_table.begin(), block_table.end(), 0);
  const KVCacheShape shape{model.kv_cache_spec(), block_size, kv_dtype};
  ModelRunner runner(model, pool, shape, num_blocks, /*resident_kv_cache=*/false, hidden.tap);
  if (hidden.output != nullptr) hidden.output->clear();

  const auto vocab = static_cast<size_t>(config.vocab_size);
  std::vector<float> logits(static_cast<size_t>(n) * vocab);
  for (int32_t begin = 0; begin < n; begin += chunk_tokens) {
    const int32_t end = std::min(n, begin + chunk_tokens);
    ForwardChunk chunk;
    chunk.token_ids =
        std::span<const int32_t>(token_ids).subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
    chunk.num_computed_tokens = begin;
    chunk.num_prompt_tokens = n;
    chunk.block_table =
        std::span<const BlockId>(block_table).first(static_cast<size_t>((end + block_size - 1) / block_size));
    chunk.num_logits = end - begin;
    chunk.lora_slot = lora_slot;
    const float* input_hidden = hidden.input ? hidden.input + begin * hidden.input_width : nullptr;
    const std::span<const float> out =
        runner.execute(std::span<const ForwardChunk>(&chunk, 1), input_hidden, hidden.input_from_head);
    std::copy(out.begin(), out.end(), logits.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(begin) * vocab));
    if (hidden.output != nullptr) {
      hidden.output->insert(hidden.output->end(), runner.hidden_states().begin(), runner.hidden_states().end());
    }
  }
  return logits;
}

}  // namespace vllm
