#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace vllm {
namespace {

TEST(DTypeTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between two bf16 values: ties go to the even one.
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DTypeTest, F16ConversionsMatchKnownEncodings) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);
  EXPECT_EQ(f32_to_f16(5.960464477539063e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x0001), 5.960464477539063e-08f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
}

TEST(DTypeTest, F16RoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    if ((bits & 0x7c00) == 0x7c00) continue;  // inf / NaN
    const float f = f16_to_f32(bits);
    const uint16_t back = f32_to_f16(f);
    if (f == 0.0f) {
      EXPECT_EQ(back & 0x7fff, 0);
    } else {
      EXPECT_EQ(back, bits) << std::hex << h;
    }
  }
}

TEST(DTypeTest, SafetensorsNames) {
  EXPECT_EQ(dtype_from_safetensors("BF16"), DType::kBF16);
  EXPECT_FALSE(dtype_from_safetensors("F64").has_value());
  EXPECT_STREQ(dtype_name(DType::kF16), "F16");
}

}  // namespace
}  // namespace vllm

namespace vllm {
namespace {

// The nearest E4M3 number by search over every finite code, ties to the even code.
uint8_t nearest_e4m3(float v) {
  const float a = std::min(std::fabs(v), 448.0f);
  int best = 0;
  for (int code = 1; code < 0x7F; ++code) {
    const float d = std::fabs(e4m3_to_f32(static_cast<uint8_t>(code)) - a);
    const float best_d = std::fabs(e4m3_to_f32(static_cast<uint8_t>(best)) - a);
    if (d < best_d || (d == best_d && code % 2 == 0)) best = code;
  }
  return static_cast<uint8_t>(best | (std::signbit(v) ? 0x80 : 0));
}

TEST(DTypeTest, E4m3DecodesAndRoundsToTheNearestEvenCode) {
  EXPECT_EQ(e4m3_to_f32(0x01), 0x1p-9f);  // the least subnormal
  EXPECT_EQ(e4m3_to_f32(0x08), 0x1p-6f);  // the least normal
  EXPECT_EQ(e4m3_to_f32(0x7E), 448.0f);   // the largest
  EXPECT_EQ(e4m3_to_f32(0xC4), -3.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7F)));
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    EXPECT_EQ(f32_to_e4m3(e4m3_to_f32(static_cast<uint8_t>(code))), code) << code;
  }
  EXPECT_EQ(f32_to_e4m3(1000.0f), 0x7E);  // clamped to 448
  EXPECT_EQ(f32_to_e4m3(-1e30f), 0xFE);
  EXPECT_EQ(f32_to_e4m3(1.0625f), 0x38);    // halfway 1 and 1.125: to 1 (even)
  EXPECT_EQ(f32_to_e4m3(1.1875f), 0x3A);    // halfway 1.125 and 1.25: to 1.25 (even)
  EXPECT_EQ(f32_to_e4m3(0x1p-10f), 0x00);   // halfway 0 and the least subnormal: to 0
  EXPECT_EQ(f32_to_e4m3(0x1.8p-9f), 0x02);  // halfway subnormals 1 and 2: to 2
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> exponent(-12.0f, 9.5f);
  for (int i = 0; i < 20000; ++i) {
    const float v = std::exp2(exponent(rng)) * (i % 2 == 0 ? 1.0f : -1.0f);
    ASSERT_EQ(f32_to_e4m3(v), nearest_e4m3(v)) << v;
  }
}

}  // namespace
}  // namespace vllm
