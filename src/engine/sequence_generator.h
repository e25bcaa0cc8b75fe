// Runs one sequence through the model over the paged KV cache: prefill, then
// one decode step per token until a stop condition.  (The engine-core issue
// replaces this single-sequence loop with the batching scheduler; the model
// interface it drives — a flattened batch with block tables — stays.)
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "engine/kv/block_pool.h"
#include "engine/runner/kv_cache_storage.h"
#include "engine/sched/sampling_params.h"
#include "model/decoder_model.h"

namespace vllm {

enum class FinishReason { kStop, kLength };
const char* finish_reason_name(FinishReason reason);

struct GenerationResult {
  std::vector<int32_t> token_ids;
  FinishReason finish_reason = FinishReason::kLength;
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;  // all steps after the first token
};

class SequenceGenerator {
 public:
  SequenceGenerator(DecoderModel& model, ThreadPool& pool, int32_t block_size = 16);

  int64_t max_model_len() const { return model_.config().max_position_embeddings; }

  // Generates after `prompt_ids`; on_token (if set) sees each new token.
  Result<GenerationResult> generate(const std::vector<int32_t>& prompt_ids, const SamplingParams& params,
                                    const std::function<void(int32_t)>& on_token = {});

  // Logits of every position of `token_ids`, computed in prefill chunks of
  // `chunk_tokens` (each chunk attends to the earlier ones through the KV
  // cache).  [token_ids.size(), vocab_size].
  Result<std::vector<float>> all_logits(const std::vector<int32_t>& token_ids, int64_t chunk_tokens);

 private:
  // One sequence's KV blocks, released on destruction.
  struct SequenceState;

  Status validate_prompt(const std::vector<int32_t>& ids) const;
  // Runs tokens [begin, end) of the sequence; logits for the last
  // `num_logits` of them go to `logits`.
  void run_chunk(SequenceState& seq, int64_t begin, int64_t end, int64_t num_logits, float* logits);

  DecoderModel& model_;
  ThreadPool& pool_;
  int32_t block_size_;
};

}  // namespace vllm
