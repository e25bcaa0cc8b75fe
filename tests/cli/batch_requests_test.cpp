// generate's request lines and sizes as people write them.
#include "cli/batch_requests.h"

#include <gtest/gtest.h>

#include "cli/engine_flags.h"
#include "cli/human_readable.h"

namespace vllm::cli {
namespace {

TEST(HumanReadableIntTest, ReadsDecimalAndBinarySuffixes) {
  EXPECT_EQ(*parse_human_readable_int("2048"), 2048);
  EXPECT_EQ(*parse_human_readable_int("1k"), 1000);
  EXPECT_EQ(*parse_human_readable_int("1K"), 1024);
  EXPECT_EQ(*parse_human_readable_int("4GiB"), int64_t{4} << 30);
  EXPECT_EQ(*parse_human_readable_int("512MB"), 512000000);
  EXPECT_EQ(*parse_human_readable_int("1.5G"), int64_t{3} << 29);
  EXPECT_EQ(*parse_human_readable_int("100B"), 100);
  for (const char* bad : {"", "GiB", "4Gb", "-1", "1.5", "1e3", "4 GiB", "99999999999T"}) {
    EXPECT_FALSE(parse_human_readable_int(bad).is_ok()) << bad;
  }
}

TEST(EngineFlagsTest, KVCacheSizeComesFromTheFlagThenTheEnvironment) {
  EngineFlags flags;
  ASSERT_EQ(setenv("VLLM_CPU_KVCACHE_SPACE", "2", 1), 0);
  EXPECT_EQ(make_engine_config(flags)->cache.kv_cache_memory_bytes, int64_t{2} << 30);
  flags.kv_cache_memory_bytes = "512MiB";
  EXPECT_EQ(make_engine_config(flags)->cache.kv_cache_memory_bytes, int64_t{512} << 20);  // the flag wins
  flags.kv_cache_memory_bytes.clear();
  ASSERT_EQ(setenv("VLLM_CPU_KVCACHE_SPACE", "0", 1), 0);
  EXPECT_EQ(make_engine_config(flags)->cache.kv_cache_memory_bytes, 0);  // automatic
  ASSERT_EQ(setenv("VLLM_CPU_KVCACHE_SPACE", "-1", 1), 0);
  EXPECT_FALSE(make_engine_config(flags).is_ok());
  ASSERT_EQ(unsetenv("VLLM_CPU_KVCACHE_SPACE"), 0);
  flags.max_model_len = "1K";
  EXPECT_EQ(make_engine_config(flags)->scheduler.max_model_len, 1024);
}

TEST(BatchRequestTest, ReadsPromptAndSamplingFieldsOverTheDefaults) {
  SamplingParams defaults;
  defaults.max_tokens = 9;
  defaults.temperature = 0.5;
  Result<BatchRequest> r =
      parse_batch_request(R"({"prompt_token_ids": [1, 2], "seed": 4, "ignore_eos": true, "cache_salt": "t"})", defaults);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->prompt.token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r->prompt.cache_salt, "t");
  EXPECT_EQ(r->params.max_tokens, 9);
  EXPECT_DOUBLE_EQ(r->params.temperature, 0.5);
  EXPECT_EQ(r->params.seed, 4u);
  EXPECT_TRUE(r->params.ignore_eos);
  r = parse_batch_request(R"({"prompt": "hi", "max_tokens": 3, "temperature": 0})", defaults);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->prompt.text, "hi");
  EXPECT_FALSE(r->prompt.token_ids.has_value());
  EXPECT_EQ(r->params.max_tokens, 3);
  EXPECT_DOUBLE_EQ(r->params.temperature, 0.0);
}

TEST(BatchRequestTest, NamesWhatIsWrong) {
  const SamplingParams d;
  const auto error = [&](const std::string& line) { return parse_batch_request(line, d).status().message(); };
  EXPECT_EQ(error("{"), "not valid JSON");
  EXPECT_EQ(error("[1]"), "not a JSON object");
  EXPECT_EQ(error("{}"), "needs 'prompt' or 'prompt_token_ids'");
  EXPECT_EQ(error(R"({"prompt": "a", "prompt_token_ids": [1]})"), "give 'prompt' or 'prompt_token_ids', not both");
  EXPECT_EQ(error(R"({"prompt": 3})"), "field 'prompt' must be a string");
  EXPECT_EQ(error(R"({"prompt_token_ids": ["a"]})"), "field 'prompt_token_ids' must be an array of token ids");
  EXPECT_EQ(error(R"({"prompt": "a", "max_tokens": 1.5})"), "field 'max_tokens' must be an integer");
  EXPECT_EQ(error(R"({"prompt": "a", "top_k": 5})"), "unknown field 'top_k'");
}

TEST(BatchRequestTest, OutputLineHasRequestOutputShape) {
  RequestOutput out;
  out.prompt_token_ids = {1, 2};
  out.outputs.push_back(CompletionOutput{0, "hi", {5}, FinishReason::kStop});
  EXPECT_EQ(batch_output_json(3, out).dump(),
            R"({"index":3,"prompt_token_ids":[1,2],"outputs":[{"index":0,"text":"hi","token_ids":[5],"finish_reason":"stop"}]})");
}

}  // namespace
}  // namespace vllm::cli
