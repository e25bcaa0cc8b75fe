// Beam search as vLLM's V1 engine does it, from the front end: each round
// asks the core for the 2 * width most likely next tokens of every live beam
// (a one-token greedy request with logprobs), then keeps the width best
// extensions; a beam that ends in EOS is set aside as complete.  Beams share
// the KV blocks of their common prefix (the prompt, and each other's tokens)
// through the prefix cache, so a round computes little more than each beam's
// newest tokens.  Scores follow vLLM: cumulative logprob / length^length_penalty,
// where the length counts the prompt and not a final EOS.  Under a grammar
// (structured outputs) every round is masked by it, after the beam's tokens:
// only tokens it allows extend a beam, and a beam whose text the grammar
// completes is complete, as one that ends in EOS.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/sample/logprobs.h"
#include "engine/sample/sampling_params.h"

namespace vllm {

struct Beam {
  std::vector<int32_t> token_ids;  // generated
  double cumulative_logprob = 0.0;
  bool ended_with_eos = false;
  bool grammar_complete = false;  // the request's grammar takes nothing more
};

class BeamSearch {
 public:
  BeamSearch(std::vector<int32_t> prompt_token_ids, const SamplingParams& params, std::vector<int32_t> eos_token_ids);

  // The prompts of this round's requests, one per live beam, and the
  // sampling parameters of live beam `beam`'s.
  std::vector<std::vector<int32_t>> round_prompts() const;
  SamplingParams round_params(size_t beam) const;

  // The result of this round's request for live beam `beam`.
  void add_result(size_t beam, const PositionLogprobs& next);
  bool round_complete() const { return num_results_ == beams_.size(); }

  // Extends the beams with the round's results; false once the search is over.
  bool next_round();

  // The width best beams, best first (once the search is over).
  std::vector<Beam> best() const;

  double score(const Beam& beam) const;
  const std::vector<int32_t>& prompt_token_ids() const { return prompt_; }
  const SamplingParams& params() const { return params_; }

 private:
  bool is_eos(int32_t id) const;
  // The grammar has nothing more to take after `beam`'s tokens.
  bool completes_grammar(const Beam& beam) const;

  std::vector<int32_t> prompt_;
  SamplingParams params_;
  std::vector<int32_t> eos_token_ids_;
  size_t width_;
  int64_t round_ = 0;
  std::vector<Beam> beams_;                         // live
  std::vector<std::vector<TokenLogprob>> results_;  // per live beam, this round
  size_t num_results_ = 0;
  std::vector<Beam> completed_;
};

}  // namespace vllm
