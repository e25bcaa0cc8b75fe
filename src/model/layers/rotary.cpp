#include "model/layers/rotary.h"

#include <algorithm>
#include <cmath>

#include "model/layers/layer.h"

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

// 1 / theta^(2i / rotary_dim) for each of the rotary_dim / 2 pairs.
std::vector<double> plain_frequencies(int64_t rotary_dim, double theta) {
  std::vector<double> f(static_cast<size_t>(rotary_dim / 2));
  for (size_t i = 0; i < f.size(); ++i) {
    f[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
  }
  return f;
}

std::vector<double> divided(std::vector<double> f, const std::vector<double>& divisors) {
  for (size_t i = 0; i < f.size(); ++i) f[i] /= divisors[i];
  return f;
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(int64_t rotary_dim, double theta, const RopeScaling& scaling)
    : scaling_(scaling), theta_(theta), inv_freq_(plain_frequencies(rotary_dim, theta)) {
  const YarnBlend yarn(rotary_dim, theta, scaling);
  for (size_t i = 0; i < inv_freq_.size(); ++i) {
    double& f = inv_freq_[i];
    switch (scaling.type) {
      case RopeScalingType::kNone:
      case RopeScalingType::kDynamic:  // plain within the original context
        break;
      case RopeScalingType::kLinear:
        f /= scaling.factor;
        break;
      case RopeScalingType::kLlama3:
        f = llama3_scale(f, scaling);
        break;
      case RopeScalingType::kYarn:
        f = yarn(static_cast<int64_t>(i), f, scaling.factor);
        break;
      case RopeScalingType::kLongRope:
        break;
    }
  }
  if (scaling.type == RopeScalingType::kLongRope) {
    long_inv_freq_ = divided(inv_freq_, scaling.long_factors);
    inv_freq_ = divided(inv_freq_, scaling.short_factors);
  }
}

int64_t RotaryEmbedding::rotation_key(int64_t length) const {
  if (!scaling_.depends_on_length() || length <= scaling_.original_max_position_embeddings) return 0;
  return scaling_.type == RopeScalingType::kLongRope ? 1 : length;
}

const std::vector<double>& RotaryEmbedding::frequencies(int64_t key, std::vector<double>& buffer) const {
  if (key == 0) return inv_freq_;
  if (scaling_.type == RopeScalingType::kLongRope) return long_inv_freq_;
  // Dynamic NTK: the base grows with the length (the key), so the lowest
  // frequency still fits the sequence (transformers' _compute_dynamic_ntk_parameters).
  const double dim = static_cast<double>(rotary_dim());
  const double ratio = static_cast<double>(key) / static_cast<double>(scaling_.original_max_position_embeddings);
  const double base = theta_ * std::pow(scaling_.factor * ratio - (scaling_.factor - 1.0), dim / (dim - 2.0));
  buffer = plain_frequencies(rotary_dim(), base);
  return buffer;
}

std::vector<double> RotaryEmbedding::inv_freq(int64_t length) const {
  std::vector<double> buffer;
  return frequencies(rotation_key(length), buffer);
}

void RotaryEmbedding::compute(const int32_t* positions, const int32_t* prompt_lens, int64_t num_tokens, float* cos,
                              float* sin) const {
  const size_t half = inv_freq_.size();
  const double attention_factor = scaling_.attention_factor;
  // Tokens of one chunk share their key: the frequencies change rarely.
  int64_t freq_key = -1;
  const std::vector<double>* freq = nullptr;
  std::vector<double> buffer;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t key = rotation_key(std::max<int64_t>(prompt_lens[t], int64_t{positions[t]} + 1));
    if (key != freq_key) {
      freq = &frequencies(key, buffer);
      freq_key = key;
    }
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(positions[t]) * (*freq)[i];
      cos[static_cast<size_t>(t) * half + i] = static_cast<float>(std::cos(angle) * attention_factor);
      sin[static_cast<size_t>(t) * half + i] = static_cast<float>(std::sin(angle) * attention_factor);
    }
  }
}

void RopeTables::compute(const std::vector<RotaryEmbedding>& ropes, const ForwardBatch& batch) {
  const int64_t t = batch.num_tokens;
  cos.resize(ropes.size());
  sin.resize(ropes.size());
  rotary_dim.resize(ropes.size());
  for (size_t r = 0; r < ropes.size(); ++r) {
    rotary_dim[r] = ropes[r].rotary_dim();
    const auto n = static_cast<size_t>(t * ropes[r].rotary_dim() / 2);
    if (cos[r].size() < n) cos[r].resize(n);
    if (sin[r].size() < n) sin[r].resize(n);
    ropes[r].compute(batch.positions, batch.prompt_lens, t, cos[r].data(), sin[r].data());
  }
}

}  // namespace vllm
