// Rotary position embedding frequencies, including the linear and llama3
// rope_scaling rules of Hugging Face transformers.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace vllm {

class RotaryEmbedding {
 public:
  RotaryEmbedding(int64_t head_dim, double theta, const RopeScaling& scaling);

  // cos, sin: [num_tokens, head_dim / 2] for the given positions.
  void compute(const int32_t* positions, int64_t num_tokens, float* cos, float* sin) const;

  const std::vector<double>& inv_freq() const { return inv_freq_; }
  // The dimensions of a head it rotates (all of them, for every model so far).
  int64_t rotary_dim() const { return 2 * static_cast<int64_t>(inv_freq_.size()); }

 private:
  std::vector<double> inv_freq_;  // [head_dim / 2]
};

}  // namespace vllm
