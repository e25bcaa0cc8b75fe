// Rotary position embedding frequencies, with the rope_scaling rules of
// Hugging Face transformers (modeling_rope_utils.py): linear, llama3, YaRN
// and LongRoPE, over the leading rotary_dim dimensions of a head.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace vllm {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int64_t rotary_dim, double theta, const RopeScaling& scaling);

  // cos, sin: [num_tokens, rotary_dim / 2] for the given positions, times
  // the scaling's attention factor.
  void compute(const int32_t* positions, int64_t num_tokens, float* cos, float* sin) const;

  const std::vector<double>& inv_freq() const { return inv_freq_; }
  // The leading dimensions of a head it rotates.
  int64_t rotary_dim() const { return 2 * static_cast<int64_t>(inv_freq_.size()); }

 private:
  std::vector<double> inv_freq_;  // [rotary_dim / 2]
  double attention_factor_ = 1.0;
};

}  // namespace vllm
