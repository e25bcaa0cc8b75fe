#include "model/layers/rotary.h"

#include <cmath>

namespace vllm {
namespace {

// Llama 3.1's frequency-dependent scaling: long wavelengths are divided by
// the factor, short ones kept, the band between interpolated smoothly.
double llama3_scale(double inv_freq, const RopeScaling& s) {
  const double old_len = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_len / s.low_freq_factor;
  const double high_freq_wavelen = old_len / s.high_freq_factor;
  const double wavelen = 2.0 * M_PI / inv_freq;
  if (wavelen < high_freq_wavelen) return inv_freq;
  if (wavelen > low_freq_wavelen) return inv_freq / s.factor;
  const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return (1.0 - smooth) * inv_freq / s.factor + smooth * inv_freq;
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, double theta, const RopeScaling& scaling) {
  const int64_t half = head_dim / 2;
  inv_freq_.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    switch (scaling.type) {
      case RopeScalingType::kNone:
        break;
      case RopeScalingType::kLinear:
        f /= scaling.factor;
        break;
      case RopeScalingType::kLlama3:
        f = llama3_scale(f, scaling);
        break;
    }
    inv_freq_[static_cast<size_t>(i)] = f;
  }
}

void RotaryEmbedding::compute(const int32_t* positions, int64_t num_tokens, float* cos, float* sin) const {
  const size_t half = inv_freq_.size();
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(positions[t]) * inv_freq_[i];
      cos[static_cast<size_t>(t) * half + i] = static_cast<float>(std::cos(angle));
      sin[static_cast<size_t>(t) * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

}  // namespace vllm
