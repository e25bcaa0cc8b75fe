#include "model/layers/rotary.h"

#include <algorithm>
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

// YaRN: dimension pairs that turn more than beta_fast times over the
// original context keep their frequency, those turning fewer than beta_slow
// times are interpolated (divided by the factor), a linear ramp between.
class YarnBlend {
 public:
  YarnBlend(int64_t rotary_dim, double theta, const RopeScaling& s) {
    const auto d = static_cast<double>(rotary_dim);
    const auto original = static_cast<double>(s.original_max_position_embeddings);
    // The pair index whose wavelength fits `rotations` times into the original context.
    auto pair_of = [&](double rotations) {
      return d * std::log(original / (rotations * 2.0 * M_PI)) / (2.0 * std::log(theta));
    };
    low_ = pair_of(s.beta_fast);
    high_ = pair_of(s.beta_slow);
    if (s.truncate) {
      low_ = std::floor(low_);
      high_ = std::ceil(high_);
    }
    low_ = std::max(low_, 0.0);
    high_ = std::min(high_, d - 1.0);
    if (low_ == high_) high_ += 0.001;  // transformers' guard against a zero-width ramp
  }

  double operator()(int64_t pair, double inv_freq, double factor) const {
    const double ramp = std::clamp((static_cast<double>(pair) - low_) / (high_ - low_), 0.0, 1.0);
    return inv_freq / factor * ramp + inv_freq * (1.0 - ramp);
  }

 private:
  double low_ = 0.0, high_ = 0.0;
};

}  // namespace

RotaryEmbedding::RotaryEmbedding(int64_t rotary_dim, double theta, const RopeScaling& scaling)
    : attention_factor_(scaling.attention_factor) {
  const int64_t half = rotary_dim / 2;
  const YarnBlend yarn(rotary_dim, theta, scaling);
  inv_freq_.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
    switch (scaling.type) {
      case RopeScalingType::kNone:
        break;
      case RopeScalingType::kLinear:
        f /= scaling.factor;
        break;
      case RopeScalingType::kLlama3:
        f = llama3_scale(f, scaling);
        break;
      case RopeScalingType::kYarn:
        f = yarn(i, f, scaling.factor);
        break;
      case RopeScalingType::kLongRope:
        f /= scaling.longrope_factors[static_cast<size_t>(i)];
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
      cos[static_cast<size_t>(t) * half + i] = static_cast<float>(std::cos(angle) * attention_factor_);
      sin[static_cast<size_t>(t) * half + i] = static_cast<float>(std::sin(angle) * attention_factor_);
    }
  }
}

}  // namespace vllm
