// Chooses the next token of every sequence in a step at once (vLLM's
// Sampler): each row of logits goes through its grammar's mask, logit bias,
// allowed_token_ids and bad_words, min_tokens masking and the penalties, then greedy rows take the argmax and random
// rows draw from the temperature / top-k / top-p / min-p distribution with their own generator.  Rows are independent,
// so they are split over the thread pool, and a row's token depends only on its own logits, history and generator.
//
// A sequence with draft tokens (speculative decoding) is verified by
// rejection sampling: its logits hold one row per draft and a bonus row, and
// it gets the accepted drafts plus one token of the target's own, so that
// its tokens follow exactly the distribution it would have without drafts.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "engine/sample/logits_processors.h"
#include "engine/sample/logprobs.h"
#include "engine/sample/sampling_params.h"
#include "engine/sample/token_filters.h"
#include "structured/grammar_matcher.h"

namespace vllm {

// A sequence's generator: seeded sequences are reproducible whatever else runs.
class RequestRng {
 public:
  explicit RequestRng(std::optional<int64_t> seed);
  double uniform();  // in [0, 1)

 private:
  std::mt19937_64 engine_;
};

// Argmax; ties go to the lowest token id.
int32_t greedy_token(const float* logits, int32_t vocab_size);

// What the sampler needs to know about one row's sequence.
struct SamplingRow {
  float* logits = nullptr;  // (1 + draft_token_ids.size()) rows of vocab_size, rewritten in place
  const SamplingParams* params = nullptr;
  std::span<const int32_t> prompt_token_ids;
  std::span<const int32_t> output_token_ids;  // generated so far
  RequestRng* rng = nullptr;
  // The row's structured output: only the tokens its grammar allows are drawn.
  structured::GrammarMatcher* grammar = nullptr;
  // Speculative decoding: the proposed tokens that follow the sequence
  // (each in its grammar, when it has one), and the proposer's probabilities of them
  // [drafts, vocab_size]; null: the proposer was certain of each (q one-hot).
  std::span<const int32_t> draft_token_ids;
  const float* draft_probs = nullptr;
};

struct SampledToken {
  int32_t token_id = 0;
  float logprob = 0.0f;                      // raw log-softmax of the chosen token
  std::optional<PositionLogprobs> logprobs;  // when the request asks for them
};

class Sampler {
 public:
  Sampler(int32_t vocab_size, std::vector<int32_t> eos_token_ids);

  // Per row: one token, or with drafts the accepted ones and the next.
  std::vector<std::vector<SampledToken>> sample(std::span<const SamplingRow> rows, ThreadPool& pool);

 private:
  struct Scratch {
    PenaltyScratch penalties;
    std::vector<Candidate> candidates;
    std::vector<float> raw_logits;     // the row before bias and penalties, for its logprobs
    std::vector<uint32_t> allowed;     // the grammar's token bitmask
    std::vector<uint8_t> allowed_ids;  // allowed_token_ids as a per-token flag
    std::vector<int32_t> history;      // the output followed by the drafts
  };
  // One row of logits after every processor, and the model's own log-softmax normaliser.
  struct ProcessedRow {
    const float* raw;  // the logits before bias and penalties (the grammar's mask applied)
    double log_z;
  };
  // Sets the logits of the tokens the row's grammar forbids to -inf, with
  // `num_output_tokens` generated before this row (max_tokens' budget).
  void apply_grammar(const SamplingRow& row, float* logits, int64_t num_output_tokens, Scratch& scratch) const;
  // Runs the row's processors over `logits` in place, given the output so far.
  ProcessedRow process(const SamplingRow& row, float* logits, std::span<const int32_t> output_token_ids,
                       Scratch& scratch) const;
  // The token drawn (or, greedy, taken) from processed logits.
  int32_t choose(const SamplingRow& row, const float* logits, Scratch& scratch) const;
  SampledToken token_of(const SamplingRow& row, int32_t token_id, const ProcessedRow& processed) const;
  std::vector<SampledToken> sample_row(const SamplingRow& row, Scratch& scratch) const;
  // Rejection sampling of the row's drafts: the accepted ones, then a recovered or bonus token.
  std::vector<SampledToken> verify_drafts(const SamplingRow& row, Scratch& scratch) const;

  int32_t vocab_size_;
  std::vector<int32_t> eos_token_ids_;
  std::vector<Scratch> scratch_;  // one per worker
};

}  // namespace vllm
