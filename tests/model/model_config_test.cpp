#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cmath>

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
  // Qwen2-VL's multimodal rotary sections: not a text model's scaling.
  j["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {16, 24, 24}}};
  c = parse_model_config(j, "config.json");
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(),
            "config.json (rope_scaling): unsupported rope_scaling type 'mrope'; supported: default, linear, "
            "dynamic, llama3, yarn, longrope");
}

TEST(ModelConfigTest, YarnAttentionFactorFromTheFactorOrMscales) {
  Json j = minimal();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}};
  Result<ModelConfig> c = parse_model_config(j, "config.json");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kYarn);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_NEAR(c->rope_scaling.attention_factor, 0.1 * std::log(4.0) + 1.0, 1e-12);  // 1.1386...
  // DeepSeek's: mscale 1 over mscale_all_dim 1 cancels.
  j["rope_scaling"]["mscale"] = 1.0;
  j["rope_scaling"]["mscale_all_dim"] = 1.0;
  EXPECT_EQ(parse_model_config(j, "c")->rope_scaling.attention_factor, 1.0);
}

// Dynamic NTK starts past max_position_embeddings and serves factor times it.
TEST(ModelConfigTest, DynamicNtkScaling) {
  Json j = minimal();
  j["max_position_embeddings"] = 2048;
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 4.0}};
  Result<ModelConfig> c = parse_model_config(j, "config.json");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kDynamic);
  EXPECT_EQ(c->rope_scaling.factor, 4.0);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 2048);
  EXPECT_TRUE(c->rope_scaling.depends_on_length());
  EXPECT_EQ(c->max_context_length(), 8192);
  j["rope_scaling"] = {{"rope_type", "dynamic"}};
  EXPECT_EQ(parse_model_config(j, "config.json").status().message(),
            "config.json (rope_scaling): field 'factor' is required for dynamic scaling");
}

TEST(ModelConfigTest, LongRopeKeepsBothFactorListsAndItsAttentionFactor) {
  Json j = minimal();  // head_dim 16: 8 factors
  j["model_type"] = "phi3";
  j["max_position_embeddings"] = 131072;
  j["original_max_position_embeddings"] = 4096;
  j["rope_scaling"] = {
      {"type", "su"}, {"short_factor", {1, 1, 1, 1, 1, 1, 1, 1}}, {"long_factor", {2, 3, 4, 5, 6, 7, 8, 9}}};
  Result<ModelConfig> c = parse_model_config(j, "config.json");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLongRope);
  EXPECT_EQ(c->rope_scaling.short_factors, (std::vector<double>(8, 1.0)));
  EXPECT_EQ(c->rope_scaling.long_factors, (std::vector<double>{2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_TRUE(c->rope_scaling.depends_on_length());
  EXPECT_NEAR(c->rope_scaling.attention_factor, 1.1902380714238083, 1e-12);  // sqrt(1 + ln 32 / ln 4096)
  EXPECT_EQ(c->max_context_length(), 131072);
  j["max_position_embeddings"] = 4096;  // a 4k model: no attention factor
  c = parse_model_config(j, "config.json");
  EXPECT_EQ(c->rope_scaling.attention_factor, 1.0);
  j["rope_scaling"]["long_factor"] = {2, 3};
  EXPECT_EQ(parse_model_config(j, "config.json").status().message(),
            "config.json (rope_scaling): field 'long_factor' must have as many entries as short_factor");
  j["rope_scaling"]["long_factor"] = {2, 3, 4};
  j["rope_scaling"]["short_factor"] = {1, 1, 1};
  EXPECT_EQ(parse_model_config(j, "config.json").status().message(),
            "config.json (rope_scaling): short_factor has 3 entries; the rotary dimension 16 needs 8");
}

TEST(ModelConfigTest, DtypeUnderEitherName) {
  Json j = minimal();
  j["dtype"] = "bfloat16";  // transformers v5
  EXPECT_EQ(parse_model_config(j, "c")->torch_dtype, "bfloat16");
  j["torch_dtype"] = "float16";
  EXPECT_EQ(parse_model_config(j, "c")->torch_dtype, "float16");
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
