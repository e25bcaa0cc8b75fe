#include "engine/sequence_generator.h"

#include <algorithm>

#include "base/clock.h"
#include "base/logging.h"
#include "engine/sample/sampler.h"

namespace vllm {

const char* finish_reason_name(FinishReason reason) { return reason == FinishReason::kStop ? "stop" : "length"; }

struct SequenceGenerator::SequenceState {
  SequenceState(const ModelConfig& config, int32_t block_size, int64_t max_tokens)
      : num_blocks(static_cast<int32_t>((max_tokens + block_size - 1) / block_size)),
        storage(KVCacheShape{static_cast<int32_t>(config.num_hidden_layers),
                             static_cast<int32_t>(config.num_key_value_heads), static_cast<int32_t>(config.head_dim),
                             block_size},
                num_blocks),
        pool(num_blocks, /*enable_caching=*/false) {}

  // Makes sure the block table covers `num_tokens` tokens.
  void reserve(int64_t num_tokens, int32_t block_size) {
    while (static_cast<int64_t>(block_table.size()) * block_size < num_tokens) {
      const std::optional<std::vector<BlockId>> b = pool.get_new_blocks(1);
      VLLM_CHECK(b.has_value(), "KV pool sized for the request ran out");
      block_table.push_back(b->front());
    }
  }

  int32_t num_blocks;
  KVCacheStorage storage;
  BlockPool pool;
  std::vector<BlockId> block_table;
  std::vector<int32_t> tokens;  // prompt + generated
};

SequenceGenerator::SequenceGenerator(DecoderModel& model, ThreadPool& pool, int32_t block_size)
    : model_(model), pool_(pool), block_size_(block_size) {}

Status SequenceGenerator::validate_prompt(const std::vector<int32_t>& ids) const {
  if (ids.empty()) return invalid_argument("the prompt is empty");
  const int64_t vocab = model_.config().vocab_size;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab) {
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(vocab) + ")");
    }
  }
  return Status::ok();
}

void SequenceGenerator::run_chunk(SequenceState& seq, int64_t begin, int64_t end, int64_t num_logits, float* logits) {
  const int64_t n = end - begin;
  seq.reserve(end, block_size_);
  std::vector<int32_t> positions(static_cast<size_t>(n)), slots(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos = begin + i;
    positions[static_cast<size_t>(i)] = static_cast<int32_t>(pos);
    slots[static_cast<size_t>(i)] =
        seq.block_table[static_cast<size_t>(pos / block_size_)] * block_size_ + static_cast<int32_t>(pos % block_size_);
  }
  std::vector<int32_t> logits_indices(static_cast<size_t>(num_logits));
  for (int64_t i = 0; i < num_logits; ++i)
    logits_indices[static_cast<size_t>(i)] = static_cast<int32_t>(n - num_logits + i);
  const int32_t query_start_loc[2] = {0, static_cast<int32_t>(n)};
  const int32_t seq_lens[1] = {static_cast<int32_t>(end)};

  ForwardBatch batch;
  batch.token_ids = seq.tokens.data() + begin;
  batch.positions = positions.data();
  batch.num_tokens = n;
  batch.attention.num_seqs = 1;
  batch.attention.query_start_loc = query_start_loc;
  batch.attention.seq_lens = seq_lens;
  batch.attention.block_tables = seq.block_table.data();
  batch.attention.max_blocks_per_seq = static_cast<int32_t>(seq.block_table.size());
  batch.attention.slot_mapping = slots.data();
  batch.logits_indices = logits_indices.data();
  batch.num_logits = num_logits;
  model_.forward(batch, seq.storage.view(), logits, pool_);
}

Result<GenerationResult> SequenceGenerator::generate(const std::vector<int32_t>& prompt_ids,
                                                     const SamplingParams& params,
                                                     const std::function<void(int32_t)>& on_token) {
  VLLM_RETURN_IF_ERROR(validate_prompt(prompt_ids));
  VLLM_RETURN_IF_ERROR(params.validate());
  const int64_t prompt_len = static_cast<int64_t>(prompt_ids.size());
  if (prompt_len >= max_model_len()) {
    return invalid_argument("the maximum context length is " + std::to_string(max_model_len()) +
                            " tokens, the prompt has " + std::to_string(prompt_len) + " tokens");
  }
  if (prompt_len + params.max_tokens > max_model_len()) {
    return invalid_argument("the prompt (" + std::to_string(prompt_len) + " tokens) plus max_tokens (" +
                            std::to_string(params.max_tokens) + ") exceeds the maximum context length of " +
                            std::to_string(max_model_len()) + " tokens");
  }
  const ModelConfig& config = model_.config();
  const auto vocab = static_cast<int32_t>(config.vocab_size);
  SequenceState seq(config, block_size_, prompt_len + params.max_tokens);
  seq.tokens = prompt_ids;
  RequestRng rng(params.seed);
  std::vector<float> logits(static_cast<size_t>(vocab));
  GenerationResult result;

  double start = now_seconds();
  int64_t computed = 0;  // tokens whose K/V are in the cache
  while (true) {
    run_chunk(seq, computed, static_cast<int64_t>(seq.tokens.size()), 1, logits.data());
    computed = static_cast<int64_t>(seq.tokens.size());
    const int32_t token = sample_token(logits.data(), vocab, params, rng);
    if (result.token_ids.empty()) {
      result.prefill_seconds = now_seconds() - start;
      start = now_seconds();
    }
    result.token_ids.push_back(token);
    seq.tokens.push_back(token);
    if (on_token) on_token(token);
    const bool is_eos =
        std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), token) != config.eos_token_ids.end();
    if (is_eos && !params.ignore_eos) {
      result.finish_reason = FinishReason::kStop;
      break;
    }
    if (static_cast<int64_t>(result.token_ids.size()) >= params.max_tokens) {
      result.finish_reason = FinishReason::kLength;
      break;
    }
  }
  result.decode_seconds = now_seconds() - start;
  return result;
}

Result<std::vector<float>> SequenceGenerator::all_logits(const std::vector<int32_t>& token_ids, int64_t chunk_tokens) {
  VLLM_RETURN_IF_ERROR(validate_prompt(token_ids));
  const auto n = static_cast<int64_t>(token_ids.size());
  if (n > max_model_len()) return invalid_argument("the sequence is longer than the maximum context length");
  if (chunk_tokens < 1) return invalid_argument("chunk_tokens must be at least 1");
  const int64_t vocab = model_.config().vocab_size;
  SequenceState seq(model_.config(), block_size_, n);
  seq.tokens = token_ids;
  std::vector<float> logits(static_cast<size_t>(n * vocab));
  for (int64_t begin = 0; begin < n; begin += chunk_tokens) {
    const int64_t end = std::min(n, begin + chunk_tokens);
    run_chunk(seq, begin, end, end - begin, logits.data() + begin * vocab);
  }
  return logits;
}

}  // namespace vllm
