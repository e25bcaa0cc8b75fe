#include "engine/sample/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace vllm {
namespace {

TEST(SamplerTest, GreedyBreaksTiesTowardsLowestId) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(greedy_token(logits.data(), 4), 1);
  SamplingParams p;
  p.temperature = 0.0;
  RequestRng rng(std::nullopt);
  EXPECT_EQ(sample_token(logits.data(), 4, p, rng), 1);
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const std::vector<float> logits(50, 0.0f);  // uniform over 50 tokens
  SamplingParams p;
  p.temperature = 1.0;
  auto draw = [&](uint64_t seed) {
    RequestRng rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 20; ++i) out.push_back(sample_token(logits.data(), 50, p, rng));
    return out;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

// 20,000 draws at temperature 0.5 against softmax(logits / 0.5), by a
// chi-square statistic below the 0.999 quantile for 3 degrees of freedom.
TEST(SamplerTest, TemperatureSamplingFollowsTheTargetDistribution) {
  const std::vector<float> logits = {1.0f, 0.5f, 0.0f, -0.5f};
  SamplingParams p;
  p.temperature = 0.5;
  RequestRng rng(123);
  std::vector<int> counts(4, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(sample_token(logits.data(), 4, p, rng))];
  double z = 0;
  for (float l : logits) z += std::exp(l / 0.5);
  double chi2 = 0;
  for (size_t i = 0; i < 4; ++i) {
    const double expected = n * std::exp(logits[i] / 0.5) / z;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 16.27);
}

TEST(SamplingParamsTest, ValidationNamesTheField) {
  SamplingParams p;
  p.temperature = -1;
  EXPECT_EQ(p.validate().message(), "temperature must be in [0, 2], got -1.");
  p.temperature = 1;
  p.max_tokens = 0;
  EXPECT_EQ(p.validate().message(), "max_tokens must be at least 1, got 0.");
}

}  // namespace
}  // namespace vllm
