// --speculative-config as vLLM reads it: keys, defaults, and errors that name the key.
#include "cli/speculative_config_flag.h"

#include <gtest/gtest.h>

namespace vllm::cli {
namespace {

TEST(SpeculativeConfigFlagTest, NgramWithVllmsDefaults) {
  Result<SpeculativeConfig> c = parse_speculative_config(R"({"method": "ngram", "num_speculative_tokens": 3})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->method, SpeculativeMethod::kNgram);
  EXPECT_EQ(c->num_speculative_tokens, 3);
  EXPECT_EQ(c->prompt_lookup_min, 5);
  EXPECT_EQ(c->prompt_lookup_max, 5);
  EXPECT_EQ(c->disable_by_batch_size, 8);
}

TEST(SpeculativeConfigFlagTest, OneLookupBoundSetsBothAndAModelNamedNgramMeansNgram) {
  Result<SpeculativeConfig> c =
      parse_speculative_config(R"({"model": "[ngram]", "num_speculative_tokens": 2, "prompt_lookup_max": 4})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->prompt_lookup_min, 4);
  EXPECT_EQ(c->prompt_lookup_max, 4);
  c = parse_speculative_config(
      R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "disable_by_batch_size": 0})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->prompt_lookup_min, 2);
  EXPECT_EQ(c->prompt_lookup_max, 2);
  EXPECT_EQ(c->disable_by_batch_size, 0);
}

// vLLM: "draft_model" by name, or any model that is not "ngram" without a method.
TEST(SpeculativeConfigFlagTest, DraftModelByMethodOrByModelAlone) {
  for (const char* json : {R"({"method": "draft_model", "model": "/m/small", "num_speculative_tokens": 4})",
                           R"({"model": "/m/small", "num_speculative_tokens": 4})"}) {
    Result<SpeculativeConfig> c = parse_speculative_config(json);
    ASSERT_TRUE(c.is_ok()) << c.status().message();
    EXPECT_EQ(c->method, SpeculativeMethod::kDraftModel);
    EXPECT_EQ(c->model, "/m/small");
    EXPECT_EQ(c->num_speculative_tokens, 4);
  }
}

TEST(SpeculativeConfigFlagTest, EagleAndEagle3ByMethodWithTheHeadsPath) {
  for (const auto& [name, method] :
       {std::pair{"eagle", SpeculativeMethod::kEagle}, std::pair{"eagle3", SpeculativeMethod::kEagle3}}) {
    Result<SpeculativeConfig> c = parse_speculative_config(std::string(R"({"method": ")") + name +
                                                           R"(", "model": "/m/head", "num_speculative_tokens": 3})");
    ASSERT_TRUE(c.is_ok()) << c.status().message();
    EXPECT_EQ(c->method, method);
    EXPECT_EQ(c->model, "/m/head");
    EXPECT_EQ(c->num_speculative_tokens, 3);
  }
}

TEST(SpeculativeConfigFlagTest, ErrorsNameWhatIsWrong) {
  auto error = [](const std::string& json) {
    Result<SpeculativeConfig> c = parse_speculative_config(json);
    EXPECT_FALSE(c.is_ok()) << json;
    return c.is_ok() ? std::string() : c.status().message();
  };
  EXPECT_EQ(error(R"({"method": "ngram"})"), "--speculative-config: num_speculative_tokens is required");
  EXPECT_EQ(error(R"({"method": "ngram", "num_speculative_tokens": 0})"),
            "--speculative-config: num_speculative_tokens must be in [1, 128], got 0");
  EXPECT_EQ(error(R"({"method": "ngram", "num_speculative_tokens": "3"})"),
            "--speculative-config: num_speculative_tokens must be an integer");
  EXPECT_EQ(
      error(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 4, "prompt_lookup_max": 2})"),
      "--speculative-config: prompt_lookup_min (4) must not be larger than prompt_lookup_max (2)");
  EXPECT_EQ(error(R"({"method": "ngram", "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1})"),
            "--speculative-config: key 'draft_tensor_parallel_size' is not supported");
  EXPECT_EQ(
      error(R"({"method": "medusa", "num_speculative_tokens": 3})"),
      "--speculative-config: method 'medusa' is not supported yet (supported: ngram, draft_model, eagle, eagle3)");
  EXPECT_EQ(error(R"({"method": "draft_model", "num_speculative_tokens": 3})"),
            "--speculative-config: draft_model needs a model path");
  EXPECT_EQ(error(R"({"method": "eagle", "num_speculative_tokens": 3})"),
            "--speculative-config: eagle needs a model path");
  EXPECT_EQ(error(R"({"method": "eagle3", "num_speculative_tokens": 3})"),
            "--speculative-config: eagle3 needs a model path");
  EXPECT_EQ(error(R"([1])"), "--speculative-config: must be a JSON object");
  EXPECT_NE(error(R"({"method": )").find("--speculative-config"), std::string::npos);
}

}  // namespace
}  // namespace vllm::cli
