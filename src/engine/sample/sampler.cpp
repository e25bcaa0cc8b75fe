#include "engine/sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vllm {
namespace {

constexpr double kMinTemperature = 0.01;  // API.md: (0, 0.01) is raised to 0.01

}  // namespace

RequestRng::RequestRng(std::optional<uint64_t> seed)
    : engine_(seed ? *seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {}

double RequestRng::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

int32_t greedy_token(const float* logits, int32_t vocab_size) {
  int32_t best = 0;
  for (int32_t i = 1; i < vocab_size; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

int32_t sample_token(const float* logits, int32_t vocab_size, const SamplingParams& params, RequestRng& rng) {
  if (params.is_greedy()) return greedy_token(logits, vocab_size);
  const double temperature = std::max(params.temperature, kMinTemperature);
  const float max_logit = *std::max_element(logits, logits + vocab_size);
  std::vector<double> weights(static_cast<size_t>(vocab_size));
  double total = 0.0;
  for (int32_t i = 0; i < vocab_size; ++i) {
    weights[static_cast<size_t>(i)] = std::exp((static_cast<double>(logits[i]) - max_logit) / temperature);
    total += weights[static_cast<size_t>(i)];
  }
  // Inverse CDF: the first token whose cumulative weight passes u * total.
  const double target = rng.uniform() * total;
  double cumulative = 0.0;
  int32_t last_possible = 0;
  for (int32_t i = 0; i < vocab_size; ++i) {
    const double w = weights[static_cast<size_t>(i)];
    if (w <= 0.0) continue;
    cumulative += w;
    last_possible = i;
    if (cumulative > target) return i;
  }
  return last_possible;  // reached only when rounding leaves target at the very end
}

}  // namespace vllm
