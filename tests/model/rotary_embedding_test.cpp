#include "model/layers/rotary.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace vllm
