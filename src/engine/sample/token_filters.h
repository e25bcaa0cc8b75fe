// The distribution a random token is drawn from, given one row of processed
// logits: temperature, then top-k, top-p and min-p (API.md's order), each
// filter renormalising what is left.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sample/sampling_params.h"

namespace vllm {

struct Candidate {
  int32_t token_id = 0;
  double prob = 0.0;
};

// Replaces `out` with the surviving tokens and their probabilities (summing
// to 1).  Surviving tokens are listed in id order unless top-p sorted them
// by probability; either way the order is a function of the logits alone.
void sampling_distribution(const float* logits, int32_t vocab_size, const SamplingParams& params,
                           std::vector<Candidate>& out);

// The candidate whose cumulative probability first exceeds u in [0, 1).
int32_t draw_token(const std::vector<Candidate>& candidates, double u);

// Speculative decoding's recovered token, after the target distribution p
// rejected a draft: drawn from max(0, p - q) normalised, where q is the
// proposer's distribution over the vocabulary, or when null one-hot on
// `draft`.  If p - q is nowhere positive (p == q: a rejection cannot happen
// then), drawn from p.
int32_t draw_recovered_token(const std::vector<Candidate>& p, const float* q, int32_t draft, double u);

}  // namespace vllm
