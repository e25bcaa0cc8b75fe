// The MoE router's choice of experts and weights, against hand-computed
// cases of each rule (softmax top-k, renormalisation, sigmoid scores with a
// selection bias, group-limited selection, the scaling factor, ties).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/layers/moe.h"

namespace vllm {
namespace {

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

Routed route(const RouterConfig& c, const std::vector<float>& logits, const std::vector<float>& bias = {}) {
  Routed r{std::vector<int32_t>(static_cast<size_t>(c.top_k)), std::vector<float>(static_cast<size_t>(c.top_k))};
  route_token(c, logits.data(), bias.empty() ? nullptr : bias.data(), r.ids.data(), r.weights.data());
  return r;
}

TEST(RouterTest, SoftmaxTopKBestFirstWithOrWithoutRenormalising) {
  RouterConfig c{.num_experts = 4, .top_k = 2};
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, -1.0f};
  const double z = 1 + std::exp(2.0) + std::exp(1.0) + std::exp(-1.0);
  Routed r = route(c, logits);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 2}));
  EXPECT_NEAR(r.weights[0], std::exp(2.0) / z, 1e-7);
  EXPECT_NEAR(r.weights[1], std::exp(1.0) / z, 1e-7);
  c.renormalize = true;
  r = route(c, logits);
  EXPECT_NEAR(r.weights[0], std::exp(2.0) / (std::exp(2.0) + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(r.weights[0] + r.weights[1], 1.0, 1e-7);
}

TEST(RouterTest, EqualScoresGoToTheLowerExpert) {
  const RouterConfig c{.num_experts = 4, .top_k = 2};
  EXPECT_EQ(route(c, {1.0f, 3.0f, 1.0f, 1.0f}).ids, (std::vector<int32_t>{1, 0}));
}

TEST(RouterTest, SigmoidScoresChosenWithTheBiasWeightedWithout) {
  // DeepSeek V3: the bias moves expert 0 ahead for the choice; its weight
  // stays its own sigmoid score, then renormalised and scaled by 2.5.
  const RouterConfig c{.scoring = RouterConfig::Scoring::kSigmoid,
                       .num_experts = 4,
                       .top_k = 2,
                       .renormalize = true,
                       .selection_bias = true,
                       .routed_scaling_factor = 2.5f};
  const std::vector<float> logits = {0.0f, 1.0f, 0.5f, -2.0f};
  const Routed r = route(c, logits, {1.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1}));
  const double s0 = 0.5, s1 = 1 / (1 + std::exp(-1.0));
  EXPECT_NEAR(r.weights[0], 2.5 * s0 / (s0 + s1), 1e-6);
  EXPECT_NEAR(r.weights[1], 2.5 * s1 / (s0 + s1), 1e-6);
}

TEST(RouterTest, GroupLimitedChoosesOnlyFromTheBestGroups) {
  // 3 groups of 2: by their best member (V2) group 2 {4, 5} and group 0
  // {0, 1} win, so expert 2 (third best overall) is passed over.
  RouterConfig c{.num_experts = 6, .top_k = 3, .num_groups = 3, .topk_groups = 2};
  const std::vector<float> logits = {3.0f, 0.0f, 2.5f, 2.4f, 4.0f, 1.0f};
  EXPECT_EQ(route(c, logits).ids, (std::vector<int32_t>{4, 0, 5}));
  // By the sum of each group's two best (V3): group 1 (2.5 + 2.4) beats group 0 (3 + 0).
  c.group_score = RouterConfig::GroupScore::kTopTwoSum;
  c.scoring = RouterConfig::Scoring::kSigmoid;
  EXPECT_EQ(route(c, logits).ids, (std::vector<int32_t>{4, 2, 3}));
}

}  // namespace
}  // namespace vllm
