// Chooses the next token of every sequence in a step at once (vLLM's
// Sampler): each row of logits goes through its grammar's mask, logit bias,
// allowed_token_ids and bad_words, min_tokens masking and the penalties, then greedy rows take the argmax and random
// rows draw from the temperature / top-k / top-p / min-p distribution with their own generator.  Rows are independent,
// so they are split over the thread pool, and a row's token depends only on its own logits, history and generator.
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
  float* logits = nullptr;  // vocab_size of them, rewritten in place
  const SamplingParams* params = nullptr;
  std::span<const int32_t> prompt_token_ids;
  std::span<const int32_t> output_token_ids;  // generated so far
  RequestRng* rng = nullptr;
  // The row's structured output: only the tokens its grammar allows are drawn.
  structured::GrammarMatcher* grammar = nullptr;
};

struct SampledToken {
  int32_t token_id = 0;
  float logprob = 0.0f;                      // raw log-softmax of the chosen token
  std::optional<PositionLogprobs> logprobs;  // when the request asks for them
};

class Sampler {
 public:
  Sampler(int32_t vocab_size, std::vector<int32_t> eos_token_ids);

  std::vector<SampledToken> sample(std::span<const SamplingRow> rows, ThreadPool& pool);

 private:
  struct Scratch {
    PenaltyScratch penalties;
    std::vector<Candidate> candidates;
    std::vector<float> raw_logits;     // the row before bias and penalties, for its logprobs
    std::vector<uint32_t> allowed;     // the grammar's token bitmask
    std::vector<uint8_t> allowed_ids;  // allowed_token_ids as a per-token flag
  };
  // Sets the logits of the tokens the row's grammar forbids to -inf.
  void apply_grammar(const SamplingRow& row, Scratch& scratch) const;
  SampledToken sample_row(const SamplingRow& row, Scratch& scratch) const;

  int32_t vocab_size_;
  std::vector<int32_t> eos_token_ids_;
  std::vector<Scratch> scratch_;  // one per worker
};

}  // namespace vllm
