#include "model/model_config.h"

#include <gtest/gtest.h>

namespace vllm {
namespace {

Json minimal() {
  return Json{{"architectures", {"LlamaForCausalLM"}},
              {"hidden_size", 64},
              {"intermediate_size", 128},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"vocab_size", 100}};
}

TEST(ModelConfigTest, DefaultsAndDerivedHeadDim) {
  Result<ModelConfig> c = parse_model_config(minimal(), "config.json");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->num_key_value_heads, 4);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  EXPECT_FALSE(c->tie_word_embeddings);
}

TEST(ModelConfigTest, ExplicitHeadDimAndEosList) {
  Json j = minimal();
  j["head_dim"] = 32;
  j["eos_token_id"] = {2, 7};
  j["num_key_value_heads"] = 2;
  Result<ModelConfig> c = parse_model_config(j, "config.json");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{2, 7}));
}

TEST(ModelConfigTest, RopeScalingTypes) {
  Json j = minimal();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  Result<ModelConfig> c = parse_model_config(j, "config.json");
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_EQ(c->rope_scaling.factor, 4.0);
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  c = parse_model_config(j, "config.json");
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(),
            "config.json (rope_scaling): unsupported rope_scaling type 'yarn'; supported: linear, llama3");
}

TEST(ModelConfigTest, SlidingWindowOnlyWhenEnabled) {
  Json j = minimal();
  j["sliding_window"] = 4096;
  EXPECT_EQ(parse_model_config(j, "c")->sliding_window, 4096);
  j["use_sliding_window"] = false;
  EXPECT_EQ(parse_model_config(j, "c")->sliding_window, 0);
  j["sliding_window"] = nullptr;
  j.erase("use_sliding_window");
  EXPECT_EQ(parse_model_config(j, "c")->sliding_window, 0);
}

TEST(ModelConfigTest, InconsistentHeadsAreRejected) {
  Json j = minimal();
  j["num_key_value_heads"] = 3;
  Result<ModelConfig> c = parse_model_config(j, "config.json");
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(), "config.json: num_attention_heads (4) must be a multiple of num_key_value_heads (3)");
}

TEST(ModelConfigTest, MissingRequiredField) {
  Json j = minimal();
  j.erase("vocab_size");
  EXPECT_EQ(parse_model_config(j, "config.json").status().message(), "config.json: field 'vocab_size' is required");
}

}  // namespace
}  // namespace vllm
