#include "engine/runner/step_runner.h"

#include <algorithm>

#include "base/logging.h"
#include "engine/sample/logprobs.h"

namespace vllm {

StepRunner::StepRunner(Model& model, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks,
                       bool resident_kv_cache, std::optional<HiddenStateTap> tap, std::vector<int32_t> eos_token_ids,
                       int32_t max_loras)
    : model_(model),
      pool_(pool),
      forward_(model, pool, shape, num_blocks, resident_kv_cache, std::move(tap)),
      sampler_(static_cast<int32_t>(model.config().vocab_size), std::move(eos_token_ids)),
      lora_slots_([this](int32_t slot, const PeftAdapter& adapter) { return forward_.set_lora(slot, adapter); },
                  max_loras) {}

void StepRunner::score_prompt(CachedRequestState& r, const ScheduledChunk& chunk, const float* rows,
                              std::vector<PositionLogprobs>& out) const {
  // Row i is position first_position + i; it scores the token after it.
  const int32_t first_position = chunk.num_computed_tokens + chunk.num_new_tokens() - chunk.num_logits;
  const int32_t end = std::min(chunk.num_computed_tokens + chunk.num_new_tokens(), r.num_prompt_tokens - 1);
  const auto vocab = static_cast<int32_t>(model_.config().vocab_size);
  // Positions scored before a preemption are not scored again.
  for (int32_t& p = r.num_scored_prompt_positions; p < end; ++p) {
    VLLM_CHECK(p >= first_position, "a chunk of a request that wants prompt logprobs has logits at every row");
    const float* row = rows + static_cast<size_t>(p - first_position) * static_cast<size_t>(vocab);
    out.push_back(position_logprobs(row, vocab, log_sum_exp(row, vocab), r.token_ids[static_cast<size_t>(p) + 1],
                                    *r.params.prompt_logprobs));
  }
}

ModelRunnerOutput StepRunner::execute_model(const SchedulerOutput& step) {
  submit(step);
  return finish(step);
}

void StepRunner::submit(const SchedulerOutput& step) {
  batch_.update(step);
  if (step.chunks.empty()) return;
  lora_slots_.begin_step();
  for (size_t i = 0; i < step.chunks.size(); ++i) {
    CachedRequestState& r = batch_.submitted(i);
    r.lora_slot = r.lora != nullptr ? lora_slots_.slot_for(*r.lora) : -1;
  }
  forward_.submit(batch_.forward_chunks(step.chunks));
}

ModelRunnerOutput StepRunner::finish(const SchedulerOutput& step) {
  ModelRunnerOutput out;
  out.sampled_tokens.resize(step.chunks.size());
  out.prompt_logprobs.resize(step.chunks.size());
  if (step.chunks.empty()) return out;
  batch_.finish_oldest();
  const std::span<float> logits = forward_.collect();

  const auto vocab = static_cast<size_t>(model_.config().vocab_size);
  rows_.clear();
  sampled_chunks_.clear();
  size_t row = 0;
  for (size_t i = 0; i < step.chunks.size(); ++i) {
    const ScheduledChunk& chunk = step.chunks[i];
    if (chunk.num_logits == 0) continue;
    CachedRequestState& r = batch_.scheduled(i);
    if (r.params.prompt_logprobs) score_prompt(r, chunk, logits.data() + row * vocab, out.prompt_logprobs[i]);
    row += static_cast<size_t>(chunk.num_logits);
    if (!chunk.sample) continue;
    // A chunk with drafts has a row per draft before its last.
    const size_t first_row = row - 1 - static_cast<size_t>(chunk.num_draft_tokens());
    rows_.push_back(SamplingRow{logits.data() + first_row * vocab, &r.params, r.prompt_token_ids(),
                                r.output_token_ids(), &r.rng, chunk.grammar, chunk.draft_token_ids});
    sampled_chunks_.push_back(i);
  }
  std::vector<std::vector<SampledToken>> sampled = sampler_.sample(rows_, pool_);
  for (size_t k = 0; k < sampled.size(); ++k) {
    const size_t i = sampled_chunks_[k];
    // Every token, even past a stop the scheduler finds: it then finishes the request.
    std::vector<int32_t>& history = batch_.scheduled(i).token_ids;
    for (const SampledToken& token : sampled[k]) history.push_back(token.token_id);
    out.sampled_tokens[i] = std::move(sampled[k]);
  }
  for (size_t i = 0; i < step.chunks.size(); ++i) {
    // A sampled list holds the accepted drafts and one more; a chunk that does not sample has no drafts.
    const auto num_accepted = static_cast<int32_t>(std::max<size_t>(out.sampled_tokens[i].size(), 1) - 1);
    batch_.computed(i, step.chunks[i], step.chunks[i].num_draft_tokens() - num_accepted);
  }
  return out;
}

}  // namespace vllm
