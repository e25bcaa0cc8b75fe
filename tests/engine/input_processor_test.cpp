// The input processor: each request tokenised, truncated, given its default
// max_tokens and checked once, before the engine sees it.
#include "engine/input_processor.h"

#include <gtest/gtest.h>

#include "engine/engine_test_util.h"

namespace vllm {
namespace {

using testing::LoadedModel;

class InputProcessorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new LoadedModel(testing::load_model(testing::model_dir())); }
  static void TearDownTestSuite() { delete model_; }

  InputProcessorTest() : engine_(testing::make_engine(*model_)) {}
  int64_t max_model_len() const { return engine_->core().config().config.scheduler.max_model_len; }
  Result<ProcessedRequest> process(const PromptInput& prompt, const SamplingParams& params) const {
    const InputProcessor inputs(*model_->tokenizer, engine_->core(), /*loras=*/nullptr, /*max_logprobs=*/5);
    return inputs.process(prompt, params);
  }

  static LoadedModel* model_;
  std::unique_ptr<LLMEngine> engine_;
};

LoadedModel* InputProcessorTest::model_ = nullptr;

TEST_F(InputProcessorTest, TextIsTokenisedAsTheTokenizerEncodesIt) {
  Result<ProcessedRequest> r = process(PromptInput::from_text("Once upon a time"), SamplingParams{});
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->prompt_token_ids, model_->tokenizer->encode("Once upon a time", true));
  PromptInput raw = PromptInput::from_text("Once upon a time");
  raw.add_special_tokens = false;
  EXPECT_EQ(process(raw, SamplingParams{})->prompt_token_ids, model_->tokenizer->encode("Once upon a time", false));
}

TEST_F(InputProcessorTest, TruncationKeepsTheLastTokensAndNamesABadValue) {
  PromptInput prompt = PromptInput::from_token_ids({5, 6, 7, 8, 9});
  prompt.truncate_prompt_tokens = 2;
  EXPECT_EQ(process(prompt, SamplingParams{})->prompt_token_ids, (std::vector<int32_t>{8, 9}));
  prompt.truncate_prompt_tokens = -1;  // the context length: all five
  EXPECT_EQ(process(prompt, SamplingParams{})->prompt_token_ids.size(), 5u);
  prompt.truncate_prompt_tokens = 0;
  Result<ProcessedRequest> bad = process(prompt, SamplingParams{});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().param(), "truncate_prompt_tokens");
}

TEST_F(InputProcessorTest, MaxTokensLeftToTheEngineIsTheRestOfTheContextAfterTruncation) {
  PromptInput prompt = PromptInput::from_token_ids({5, 6, 7, 8, 9, 10});
  prompt.truncate_prompt_tokens = 4;
  SamplingParams params;
  params.max_tokens_from_context = true;
  params.min_tokens = 100;  // checked against the max_tokens the processor sets, not the default 16
  Result<ProcessedRequest> r = process(prompt, params);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->params.max_tokens, max_model_len() - 4);
  params.max_tokens_from_context = false;
  params.min_tokens = 0;
  params.max_tokens = 7;
  EXPECT_EQ(process(prompt, params)->params.max_tokens, 7);
}

TEST_F(InputProcessorTest, RefusesWhatTheEngineCannotRunNamingTheField) {
  SamplingParams params;
  params.logprobs = 6;
  Result<ProcessedRequest> r = process(PromptInput::from_token_ids({5, 6}), params);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().param(), "logprobs");
  r = process(PromptInput::from_token_ids(std::vector<int32_t>(static_cast<size_t>(max_model_len()), 5)), {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().param(), "input_tokens");
  r = process(PromptInput::from_token_ids({5, 100000}), {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().param(), "prompt");
}

}  // namespace
}  // namespace vllm
