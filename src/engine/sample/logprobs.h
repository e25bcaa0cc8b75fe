// Log-probabilities as vLLM reports them: the natural-log softmax of the
// model's raw logits (before any penalty, bias, temperature or filter), for a
// chosen token and the N most likely ones, with their ranks.
#pragma once

#include <cstdint>
#include <vector>

namespace vllm {

struct TokenLogprob {
  int32_t token_id = 0;
  float logprob = 0.0f;
  int32_t rank = 0;  // 1 = most likely; tokens tied with it share the worse rank, as in vLLM
};

// One position: the token that was chosen there (sampled, or the prompt's
// next token) and the top-N candidates, most likely first (lowest id first on
// ties).  The chosen token may also be among the top.
struct PositionLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;
};

// log(sum(exp(logits))), accumulated in double.
double log_sum_exp(const float* logits, int32_t vocab_size);

// `log_z` is log_sum_exp of the same logits.
PositionLogprobs position_logprobs(const float* logits, int32_t vocab_size, double log_z, int32_t chosen,
                                   int32_t top_n);

}  // namespace vllm
