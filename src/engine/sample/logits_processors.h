// The steps that rewrite one row of logits before a token is chosen, in the
// order docs/API.md fixes: logit_bias, allowed_token_ids and bad_words,
// min_tokens masking, then the repetition, frequency and presence penalties
// (vLLM's formulas).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sample/sampling_params.h"

namespace vllm {

// Adds each bias, clamped to [-100, 100].
void apply_logit_bias(float* logits, int32_t vocab_size, const SamplingParams& params);

// Every token outside allowed_token_ids (when given) gets -inf.
void apply_allowed_token_ids(float* logits, int32_t vocab_size, const SamplingParams& params,
                             std::vector<uint8_t>& scratch);

// A bad word's last token gets -inf where the output ends with the rest of it
// (a one-token word: always), as vLLM does.
void apply_bad_words(float* logits, int32_t vocab_size, const SamplingParams& params,
                     std::span<const int32_t> output_token_ids);

// While fewer than min_tokens tokens exist, the tokens that would end the
// sequence (stop_token_ids, and EOS unless ignore_eos) get -inf.
void apply_min_tokens(float* logits, int32_t vocab_size, const SamplingParams& params, int64_t num_output_tokens,
                      std::span<const int32_t> eos_token_ids);

// Scratch for apply_penalties, sized to the vocabulary and left zeroed.
struct PenaltyScratch {
  std::vector<int32_t> output_counts;
  std::vector<uint8_t> seen;
};

// repetition_penalty r on every token of prompt or output: a positive logit
// is divided by r, a negative one multiplied by it; then
// logit -= frequency_penalty * count in output + presence_penalty * (count > 0).
void apply_penalties(float* logits, int32_t vocab_size, const SamplingParams& params,
                     std::span<const int32_t> prompt_token_ids, std::span<const int32_t> output_token_ids,
                     PenaltyScratch& scratch);

}  // namespace vllm
