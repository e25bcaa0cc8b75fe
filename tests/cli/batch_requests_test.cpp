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
  Result<BatchRequest> r = parse_batch_request(
      R"({"prompt_token_ids": [1, 2], "seed": 4, "ignore_eos": true, "cache_salt": "t"})", defaults);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->prompt.token_ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r->prompt.cache_salt, "t");
  EXPECT_EQ(r->params.max_tokens, 9);
  EXPECT_DOUBLE_EQ(r->params.temperature, 0.5);
  EXPECT_EQ(r->params.seed, 4);
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
  EXPECT_TRUE(error("{").starts_with("not valid JSON (")) << error("{");
  EXPECT_EQ(error("[1]"), "not a JSON object");
  EXPECT_EQ(error("{}"), "needs 'prompt' or 'prompt_token_ids'");
  EXPECT_EQ(error(R"({"prompt": "a", "prompt_token_ids": [1]})"), "give 'prompt' or 'prompt_token_ids', not both");
  EXPECT_EQ(error(R"({"prompt": 3})"), "field 'prompt' must be a string");
  EXPECT_EQ(error(R"({"prompt_token_ids": ["a"]})"), "field 'prompt_token_ids' must be an array of token ids");
  EXPECT_EQ(error(R"({"prompt": "a", "max_tokens": 1.5})"), "field 'max_tokens' must be an integer");
  EXPECT_EQ(error(R"({"prompt": "a", "top_kk": 5})"), "unknown field 'top_kk'");
  EXPECT_EQ(error(R"({"prompt": "a", "stop": [1]})"), "field 'stop' must be a string or an array of strings");
  EXPECT_EQ(error(R"({"prompt": "a", "logit_bias": {"x": 1}})"), "logit_bias key 'x' is not a token id");
  EXPECT_EQ(error(R"({"prompt": "a", "logit_bias": {"5": "up"}})"), "field 'logit_bias' must be a number");
  EXPECT_EQ(error(R"({"prompt": "a", "n": 2, "best_of": 3})"), "best_of must be null or equal to n (2), got 3");
  EXPECT_EQ(error(R"({"prompt": "a", "logprobs": true})"), "field 'logprobs' must be an integer");
  EXPECT_EQ(error(R"({"prompt": "a", "n": 2, "beam_width": 3})"), "beam_width and n differ");
}

TEST(BatchRequestTest, ReadsEverySamplingField) {
  Result<BatchRequest> r = parse_batch_request(
      R"({"prompt": "a", "n": 3, "best_of": 3, "temperature": 0.8, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
          "seed": -1, "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.2,
          "logit_bias": {"17": -100, "3": 2.5}, "min_tokens": 2, "max_tokens": 30, "stop": "\n",
          "stop_token_ids": [5, 6], "include_stop_str_in_output": true, "ignore_eos": true, "logprobs": 5,
          "prompt_logprobs": 1, "skip_special_tokens": false, "spaces_between_special_tokens": false,
          "length_penalty": 0.7})",
      SamplingParams{});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const SamplingParams& p = r->params;
  EXPECT_EQ(p.n, 3);
  EXPECT_DOUBLE_EQ(p.temperature, 0.8);
  EXPECT_DOUBLE_EQ(p.top_p, 0.9);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_DOUBLE_EQ(p.min_p, 0.05);
  EXPECT_FALSE(p.seed.has_value());  // -1: no seed
  EXPECT_DOUBLE_EQ(p.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(p.frequency_penalty, -0.5);
  EXPECT_DOUBLE_EQ(p.repetition_penalty, 1.2);
  EXPECT_EQ(p.logit_bias, (std::vector<std::pair<int32_t, double>>{{17, -100.0}, {3, 2.5}}));
  EXPECT_EQ(p.min_tokens, 2);
  EXPECT_EQ(p.max_tokens, 30);
  EXPECT_EQ(p.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_TRUE(p.include_stop_str_in_output);
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_EQ(p.logprobs, 5);
  EXPECT_EQ(p.prompt_logprobs, 1);
  EXPECT_FALSE(p.skip_special_tokens);
  EXPECT_FALSE(p.spaces_between_special_tokens);
  EXPECT_DOUBLE_EQ(p.length_penalty, 0.7);
  EXPECT_TRUE(p.validate().is_ok());

  r = parse_batch_request(R"({"prompt": "a", "use_beam_search": true, "beam_width": 4, "temperature": 0})",
                          SamplingParams{});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->params.use_beam_search);
  EXPECT_EQ(r->params.n, 4);
}

TEST(BatchRequestTest, OutputLineHasRequestOutputShape) {
  RequestOutput out;
  out.prompt_token_ids = {1, 2};
  CompletionOutput c;
  c.text = "hi";
  c.token_ids = {5};
  c.cumulative_logprob = -0.5;
  c.finish_reason = FinishReason::kStop;
  c.stop_reason = 7;
  out.outputs.push_back(c);
  EXPECT_EQ(batch_output_json(3, out).dump(),
            R"({"index":3,"prompt_token_ids":[1,2],"outputs":[{"index":0,"text":"hi","token_ids":[5],)"
            R"("cumulative_logprob":-0.5,"finish_reason":"stop","stop_reason":7}]})");
  // Asked-for logprobs: the chosen token, then the top ones; the first prompt token has none.
  out.outputs[0].stop_reason = std::string("!");
  out.outputs[0].logprobs = std::vector<PositionLogprobs>{{{5, -0.5f, 2}, {{9, -0.25f, 1}, {5, -0.5f, 2}}}};
  out.prompt_logprobs = std::vector<PositionLogprobs>{{{2, -1.0f, 1}, {}}};
  EXPECT_EQ(batch_output_json(0, out).dump(),
            R"({"index":0,"prompt_token_ids":[1,2],"outputs":[{"index":0,"text":"hi","token_ids":[5],)"
            R"("cumulative_logprob":-0.5,"logprobs":[{"5":-0.5,"9":-0.25}],"finish_reason":"stop","stop_reason":"!"}],)"
            R"("prompt_logprobs":[null,{"2":-1.0}]})");
}

}  // namespace
}  // namespace vllm::cli
