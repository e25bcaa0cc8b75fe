// Rotary position embedding frequencies, with the rope_scaling rules of
// Hugging Face transformers (modeling_rope_utils.py): linear, dynamic NTK,
// llama3, YaRN and LongRoPE, over the leading rotary_dim dimensions of a
// head.
//
// Dynamic NTK and LongRoPE change the frequencies with the sequence's
// length, which transformers takes from each forward call: the prompt's
// length for every prompt token (one pass over the prompt), then each
// generated token's own position + 1 (one step each, earlier keys kept as
// cached).  A token at position p of a sequence whose prompt holds P tokens
// is therefore rotated for the length max(P, p + 1), whatever the chunking
// or the batch, so cached keys never need rotating again.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace vllm {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int64_t rotary_dim, double theta, const RopeScaling& scaling);

  // cos, sin: [num_tokens, rotary_dim / 2] for the tokens at `positions`
  // of sequences whose prompts hold prompt_lens tokens (both
  // [num_tokens]), times the scaling's attention factor.
  void compute(const int32_t* positions, const int32_t* prompt_lens, int64_t num_tokens, float* cos, float* sin) const;

  // The frequencies of a token in a sequence of `length` tokens, [rotary_dim / 2].
  std::vector<double> inv_freq(int64_t length) const;
  // Within the original context: every length up to it.
  const std::vector<double>& inv_freq() const { return inv_freq_; }
  // The leading dimensions of a head it rotates.
  int64_t rotary_dim() const { return 2 * static_cast<int64_t>(inv_freq_.size()); }

  // Sequence lengths with equal keys are rotated alike: 0 within the
  // original context (or for a scaling that ignores the length), else 1
  // for LongRoPE's long factors, the length itself for dynamic NTK.  Keyed
  // by a prompt's length, it tells apart prompts cached differently.
  int64_t rotation_key(int64_t length) const;

 private:
  // The frequencies for lengths of `key` (rotation_key): a stored table, or
  // dynamic NTK's computed into `buffer`.
  const std::vector<double>& frequencies(int64_t key, std::vector<double>& buffer) const;

  RopeScaling scaling_;
  double theta_;
  std::vector<double> inv_freq_;       // [rotary_dim / 2]
  std::vector<double> long_inv_freq_;  // longrope: past the original context
};

}  // namespace vllm
