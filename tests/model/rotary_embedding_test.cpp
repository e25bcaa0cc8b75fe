#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/layers/rotary.h"

namespace vllm {
namespace {

TEST(RotaryEmbeddingTest, PlainFrequencies) {
  RotaryEmbedding rope(8, 10000.0, RopeScaling{});
  ASSERT_EQ(rope.inv_freq().size(), 4u);
  EXPECT_DOUBLE_EQ(rope.inv_freq()[0], 1.0);
  EXPECT_NEAR(rope.inv_freq()[2], std::pow(10000.0, -0.5), 1e-15);
}

TEST(RotaryEmbeddingTest, LinearScalingDividesEveryFrequency) {
  RopeScaling s;
  s.type = RopeScalingType::kLinear;
  s.factor = 4;
  RotaryEmbedding plain(8, 10000.0, RopeScaling{}), scaled(8, 10000.0, s);
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(scaled.inv_freq()[i], plain.inv_freq()[i] / 4);
}

// Llama 3: high frequencies kept, low ones divided, the band between blended.
TEST(RotaryEmbeddingTest, Llama3ScalingBands) {
  RopeScaling s;
  s.type = RopeScalingType::kLlama3;
  s.factor = 8;
  s.low_freq_factor = 1;
  s.high_freq_factor = 4;
  s.original_max_position_embeddings = 64;  // wavelength bands: < 16 kept, > 64 divided
  RotaryEmbedding plain(16, 10000.0, RopeScaling{}), scaled(16, 10000.0, s);
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < 8; ++i) {
    const double f = plain.inv_freq()[i];
    const double wavelen = 2 * M_PI / f;
    if (wavelen < 16) {
      EXPECT_DOUBLE_EQ(scaled.inv_freq()[i], f);
      ++kept;
    } else if (wavelen > 64) {
      EXPECT_DOUBLE_EQ(scaled.inv_freq()[i], f / 8);
      ++divided;
    } else {
      const double smooth = (64 / wavelen - 1) / 3;
      EXPECT_NEAR(scaled.inv_freq()[i], (1 - smooth) * f / 8 + smooth * f, 1e-15);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

RopeScaling dynamic_ntk(double factor, int64_t context) {
  RopeScaling s;
  s.type = RopeScalingType::kDynamic;
  s.factor = factor;
  s.original_max_position_embeddings = context;
  return s;
}

// transformers' dynamic NTK: the plain frequencies up to the context, then
// base * (factor * length / context - (factor - 1))^(dim / (dim - 2)).
TEST(RotaryEmbeddingTest, DynamicNtkGrowsTheBaseOnlyPastTheContext) {
  const RotaryEmbedding plain(8, 10000.0, RopeScaling{}), rope(8, 10000.0, dynamic_ntk(2.0, 32));
  EXPECT_EQ(rope.inv_freq(1), plain.inv_freq());
  EXPECT_EQ(rope.inv_freq(32), plain.inv_freq());
  const double base = 10000.0 * std::pow(2.0 * 64 / 32 - 1.0, 8.0 / 6.0);
  const std::vector<double> past = rope.inv_freq(64);
  ASSERT_EQ(past.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(past[i], std::pow(base, -static_cast<double>(2 * i) / 8), 1e-15);
  EXPECT_LT(past[3], plain.inv_freq()[3]);
}

TEST(RotaryEmbeddingTest, LongRopeSwitchesToTheLongFactorsPastTheOriginalContext) {
  RopeScaling s;
  s.type = RopeScalingType::kLongRope;
  s.original_max_position_embeddings = 16;
  s.short_factors = {1.0, 1.5};
  s.long_factors = {2.0, 4.0};
  const RotaryEmbedding plain(4, 10000.0, RopeScaling{}), rope(4, 10000.0, s);
  for (int64_t length : {1, 16}) {
    EXPECT_EQ(rope.inv_freq(length), (std::vector<double>{plain.inv_freq()[0], plain.inv_freq()[1] / 1.5}));
  }
  EXPECT_EQ(rope.inv_freq(17), (std::vector<double>{plain.inv_freq()[0] / 2, plain.inv_freq()[1] / 4}));
}

// A prompt is rotated for its own length (one pass over it), a later token
// for its position + 1 (a step of its own), whatever the batch holds.
TEST(RotaryEmbeddingTest, EachTokenIsRotatedForItsPromptOrItsOwnLength) {
  const RotaryEmbedding rope(8, 10000.0, dynamic_ntk(2.0, 32));
  struct Token {
    int32_t position, prompt_len;
    int64_t length;  // what it is rotated for
  };
  const std::vector<Token> tokens = {{0, 40, 40}, {39, 40, 40}, {45, 40, 46}, {3, 10, 10}, {50, 10, 51}, {31, 32, 32}};
  std::vector<int32_t> positions, prompt_lens;
  for (const Token& t : tokens) {
    positions.push_back(t.position);
    prompt_lens.push_back(t.prompt_len);
  }
  std::vector<float> cos(tokens.size() * 4), sin(tokens.size() * 4);
  rope.compute(positions.data(), prompt_lens.data(), static_cast<int64_t>(tokens.size()), cos.data(), sin.data());
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::vector<double> f = rope.inv_freq(tokens[t].length);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(cos[t * 4 + i], static_cast<float>(std::cos(tokens[t].position * f[i]))) << t << " " << i;
      EXPECT_EQ(sin[t * 4 + i], static_cast<float>(std::sin(tokens[t].position * f[i]))) << t << " " << i;
    }
  }
}

// Prompts that leave the context are told apart for the prefix cache.
TEST(RotaryEmbeddingTest, PromptKeysOnlyWhereTheLengthChangesTheRotation) {
  const RotaryEmbedding dynamic(8, 10000.0, dynamic_ntk(2.0, 32)), plain(8, 10000.0, RopeScaling{});
  EXPECT_EQ(dynamic.rotation_key(32), 0);
  EXPECT_EQ(dynamic.rotation_key(40), 40);
  EXPECT_EQ(dynamic.rotation_key(41), 41);
  EXPECT_EQ(plain.rotation_key(100000), 0);
  RopeScaling s;
  s.type = RopeScalingType::kLongRope;
  s.original_max_position_embeddings = 16;
  s.short_factors = s.long_factors = {1.0, 1.0};
  const RotaryEmbedding longrope(4, 10000.0, s);
  EXPECT_EQ(longrope.rotation_key(16), 0);
  EXPECT_EQ(longrope.rotation_key(17), longrope.rotation_key(1000));  // one set of long frequencies
  EXPECT_NE(longrope.rotation_key(17), 0);
}

}  // namespace
}  // namespace vllm
