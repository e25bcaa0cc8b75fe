#include "engine/sample/sampler.h"

#include <limits>

#include "base/logging.h"

namespace vllm {

RequestRng::RequestRng(std::optional<int64_t> seed)
    : engine_(seed ? static_cast<uint64_t>(*seed)
                   : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {}

double RequestRng::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

int32_t greedy_token(const float* logits, int32_t vocab_size) {
  int32_t best = 0;
  for (int32_t i = 1; i < vocab_size; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

Sampler::Sampler(int32_t vocab_size, std::vector<int32_t> eos_token_ids)
    : vocab_size_(vocab_size), eos_token_ids_(std::move(eos_token_ids)) {}

void Sampler::apply_grammar(const SamplingRow& row, float* logits, int64_t num_output_tokens, Scratch& scratch) const {
  scratch.allowed.resize(structured::bitmask_words(vocab_size_));
  // What is left of max_tokens: the grammar steers towards an end within it.
  const auto& resume = row.params->grammar_resume;
  const int64_t budget = (resume ? resume->token_budget : row.params->max_tokens) - num_output_tokens;
  row.grammar->fill_next_token_mask(scratch.allowed, budget);
  // Word by word: a word of allowed tokens (inside a string, most of them) costs one test.
  bool any = false;
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (size_t w = 0; w < scratch.allowed.size(); ++w) {
    const uint32_t word = scratch.allowed[w];
    any = any || word != 0;
    if (word == ~uint32_t{0}) continue;
    const int32_t first = static_cast<int32_t>(w * 32);
    const int32_t end = std::min(first + 32, vocab_size_);
    if (word == 0) {
      std::fill(logits + first, logits + end, kMasked);
      continue;
    }
    for (int32_t t = first; t < end; ++t) {
      if (!(word >> (t - first) & 1u)) logits[t] = kMasked;
    }
  }
  // A state no token of the vocabulary continues (its bytes are missing
  // from it) can only end the sequence.
  if (!any) {
    for (int32_t eos : eos_token_ids_) logits[eos] = 0.0f;
  }
}

Sampler::ProcessedRow Sampler::process(const SamplingRow& row, float* logits, std::span<const int32_t> output_token_ids,
                                       Scratch& scratch) const {
  const SamplingParams& params = *row.params;
  // The grammar's mask comes first, so that the logprobs reported are those
  // of the distribution the tokens are drawn from, as in vLLM.
  if (row.grammar != nullptr) apply_grammar(row, logits, static_cast<int64_t>(output_token_ids.size()), scratch);
  // Logprobs describe the model's own distribution, so they are taken first.
  ProcessedRow processed{logits, log_sum_exp(logits, vocab_size_)};
  const bool modifies = !params.logit_bias.empty() || params.allowed_token_ids || !params.bad_words_token_ids.empty() ||
                        params.min_tokens > 0 || params.repetition_penalty != 1.0 || params.frequency_penalty != 0.0 ||
                        params.presence_penalty != 0.0;
  if (modifies) {
    scratch.raw_logits.assign(logits, logits + vocab_size_);
    processed.raw = scratch.raw_logits.data();
  }

  apply_logit_bias(logits, vocab_size_, params);
  apply_allowed_token_ids(logits, vocab_size_, params, scratch.allowed_ids);
  apply_bad_words(logits, vocab_size_, params, output_token_ids);
  apply_min_tokens(logits, vocab_size_, params, static_cast<int64_t>(output_token_ids.size()), eos_token_ids_);
  apply_penalties(logits, vocab_size_, params, row.prompt_token_ids, output_token_ids, scratch.penalties);
  return processed;
}

int32_t Sampler::choose(const SamplingRow& row, const float* logits, Scratch& scratch) const {
  if (row.params->is_greedy()) return greedy_token(logits, vocab_size_);
  sampling_distribution(logits, vocab_size_, *row.params, scratch.candidates);
  return draw_token(scratch.candidates, row.rng->uniform());
}

SampledToken Sampler::token_of(const SamplingRow& row, int32_t token_id, const ProcessedRow& processed) const {
  SampledToken out;
  out.token_id = token_id;
  out.logprob = static_cast<float>(static_cast<double>(processed.raw[token_id]) - processed.log_z);
  if (row.params->logprobs) {
    out.logprobs = position_logprobs(processed.raw, vocab_size_, processed.log_z, token_id, *row.params->logprobs);
  }
  return out;
}

std::vector<SampledToken> Sampler::sample_row(const SamplingRow& row, Scratch& scratch) const {
  if (!row.draft_token_ids.empty()) return verify_drafts(row, scratch);
  const ProcessedRow processed = process(row, row.logits, row.output_token_ids, scratch);
  return {token_of(row, choose(row, row.logits, scratch), processed)};
}

std::vector<SampledToken> Sampler::verify_drafts(const SamplingRow& row, Scratch& scratch) const {
  const std::span<const int32_t> drafts = row.draft_token_ids;
  // Under a grammar, row j is masked by the grammar's state after drafts
  // 0..j-1: the matcher takes each accepted draft, and is rolled back after.
  std::optional<structured::GrammarMatcher::Checkpoint> grammar_start;
  if (row.grammar != nullptr) grammar_start = row.grammar->checkpoint();
  // Row j is processed as if drafts 0..j-1 were already output (penalties,
  // bad words, min_tokens see them): they are, if row j is reached.
  scratch.history.assign(row.output_token_ids.begin(), row.output_token_ids.end());
  scratch.history.insert(scratch.history.end(), drafts.begin(), drafts.end());
  const auto vocab = static_cast<size_t>(vocab_size_);
  std::vector<SampledToken> out;
  for (size_t j = 0; j <= drafts.size(); ++j) {
    float* logits = row.logits + j * vocab;
    const std::span<const int32_t> output =
        std::span<const int32_t>(scratch.history).first(row.output_token_ids.size() + j);
    const ProcessedRow processed = process(row, logits, output, scratch);
    if (j == drafts.size()) {  // every draft accepted: the bonus token
      out.push_back(token_of(row, choose(row, logits, scratch), processed));
      break;
    }
    const int32_t draft = drafts[j];
    int32_t token = 0;
    bool accept = false;
    if (row.params->is_greedy()) {
      token = greedy_token(logits, vocab_size_);
      accept = token == draft;
    } else {
      // Accept the draft with probability min(1, p / q); else draw from max(0, p - q).
      sampling_distribution(logits, vocab_size_, *row.params, scratch.candidates);
      double p_draft = 0.0;
      for (const Candidate& c : scratch.candidates) {
        if (c.token_id == draft) p_draft = c.prob;
      }
      const float* q = row.draft_probs != nullptr ? row.draft_probs + j * vocab : nullptr;
      const double q_draft = q != nullptr ? static_cast<double>(q[draft]) : 1.0;
      accept = q_draft > 0.0 && row.rng->uniform() * q_draft < p_draft;
      token = accept ? draft : draw_recovered_token(scratch.candidates, q, draft, row.rng->uniform());
    }
    out.push_back(token_of(row, token, processed));
    if (!accept) break;
    // An accepted draft had a nonzero probability, so the mask allowed it.
    if (row.grammar != nullptr) VLLM_CHECK(row.grammar->accept_token(draft), "an accepted draft is in the grammar");
  }
  if (grammar_start) row.grammar->rollback(std::move(*grammar_start));
  return out;
}

std::vector<std::vector<SampledToken>> Sampler::sample(std::span<const SamplingRow> rows, ThreadPool& pool) {
  std::vector<std::vector<SampledToken>> tokens(rows.size());
  scratch_.resize(static_cast<size_t>(pool.num_threads()));
  const auto num_rows = static_cast<int64_t>(rows.size());
  auto run_rows = [&](int worker) {
    for (int64_t r = worker; r < num_rows; r += pool.num_threads()) {
      tokens[static_cast<size_t>(r)] = sample_row(rows[static_cast<size_t>(r)], scratch_[static_cast<size_t>(worker)]);
    }
  };
  if (num_rows == 1) {
    run_rows(0);  // one row: not worth waking the workers
  } else {
    pool.run(run_rows);
  }
  return tokens;
}

}  // namespace vllm
