// stories260k against outputs of llama2.c's own float32 forward pass
// (tests/golden/stories260k/README.md): greedy generations must match token
// for token and character for character; log-probabilities within 1e-4.
#include <gtest/gtest.h>

#include <cmath>

#include "base/json.h"
#include "engine/llm_engine.h"
#include "engine/runner/prompt_scorer.h"
#include "model/decoder_model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace vllm {
namespace {

class Stories260kGoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = std::move(DecoderModel::load(testing::model_dir())).value().release();
    tokenizer_ = std::move(Tokenizer::load(testing::model_dir())).value().release();
    pool_ = new ThreadPool(2);
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokenizer_;
    delete pool_;
  }
  static std::unique_ptr<LLMEngine> make_engine() {
    EngineConfig config;
    config.num_threads = 2;
    return std::move(LLMEngine::create(*model_, *tokenizer_, config)).value();
  }
  static Json golden(const std::string& file) {
    return Json::parse(testing::read_file(testing::golden_dir() + "/" + file));
  }

  static DecoderModel* model_;
  static Tokenizer* tokenizer_;
  static ThreadPool* pool_;
};

DecoderModel* Stories260kGoldenTest::model_ = nullptr;
Tokenizer* Stories260kGoldenTest::tokenizer_ = nullptr;
ThreadPool* Stories260kGoldenTest::pool_ = nullptr;

// All twelve cases run through the engine together, as one batch.
TEST_F(Stories260kGoldenTest, GreedyGenerationsMatchExactly) {
  const Json cases = golden("greedy.json")["cases"];
  ASSERT_EQ(cases.size(), 12u);
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (const Json& c : cases) {
    const std::string prompt = c["prompt"].get<std::string>();
    const auto prompt_ids = tokenizer_->encode(prompt, true);
    ASSERT_EQ(prompt_ids, c["prompt_token_ids"].get<std::vector<int32_t>>()) << c["name"];
    prompts.push_back(PromptInput::from_text(prompt));
    SamplingParams p;
    p.temperature = 0.0;
    p.ignore_eos = true;
    p.max_tokens = c["max_new_tokens"].get<int64_t>();
    params.push_back(p);
  }
  std::unique_ptr<LLMEngine> engine = make_engine();
  Result<std::vector<RequestOutput>> results = engine->generate(prompts, params);
  ASSERT_TRUE(results.is_ok()) << results.status().message();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Json& c = cases[i];
    const RequestOutput& r = (*results)[i];
    ASSERT_EQ(r.outputs.size(), 1u);
    const std::vector<int32_t>& ids = r.outputs[0].token_ids;
    EXPECT_EQ(ids, c["output_token_ids"].get<std::vector<int32_t>>()) << c["name"];
    std::vector<int32_t> all = r.prompt_token_ids;
    all.insert(all.end(), ids.begin(), ids.end());
    EXPECT_EQ(tokenizer_->decode(all, true), c["full_text"].get<std::string>()) << c["name"];
    EXPECT_EQ(tokenizer_->decode(ids, true), c["output_text_decoded_alone"].get<std::string>()) << c["name"];
    EXPECT_EQ(r.outputs[0].finish_reason, FinishReason::kLength) << c["name"];
  }
}

// The requested 256 tokens after a 300-token prompt exceed the 512-token
// context: the request is refused, never silently shortened.
TEST_F(Stories260kGoldenTest, RefusesPromptPlusMaxTokensBeyondContext) {
  const Json cases = golden("greedy.json")["cases"];
  for (const Json& c : cases) {
    if (c["name"] != "long_300_tokens_256") continue;
    std::unique_ptr<LLMEngine> engine = make_engine();
    SamplingParams params;
    params.temperature = 0.0;
    params.max_tokens = c["max_new_tokens_requested"].get<int64_t>();
    const Status s = engine->add_request(
        "long", PromptInput::from_token_ids(c["prompt_token_ids"].get<std::vector<int32_t>>()), params);
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.message(),
              "the prompt (300 tokens) plus max_tokens (256) exceeds the maximum context length of 512 tokens");
    EXPECT_FALSE(engine->has_unfinished_requests());
    return;
  }
  FAIL() << "case long_300_tokens_256 not found";
}

TEST_F(Stories260kGoldenTest, Top5LogprobsMatchAtEveryStep) {
  const Json cases = golden("logprobs_top5.json")["cases"];
  ASSERT_EQ(cases.size(), 3u);
  const int64_t vocab = model_->config().vocab_size;
  for (const Json& c : cases) {
    std::vector<int32_t> ids = c["prompt_token_ids"].get<std::vector<int32_t>>();
    const size_t prompt_len = ids.size();
    for (int32_t t : c["output_token_ids"].get<std::vector<int32_t>>()) ids.push_back(t);
    // Scored in chunks of 5 tokens: each chunk reads the earlier ones through the paged cache.
    Result<std::vector<float>> logits = score_all_positions(*model_, *pool_, ids, 5);
    ASSERT_TRUE(logits.is_ok());
    for (const Json& pos : c["positions"]) {
      const size_t row = prompt_len - 1 + pos["step"].get<size_t>();
      const float* l = logits->data() + row * static_cast<size_t>(vocab);
      double mx = -1e300, sum = 0;
      for (int64_t i = 0; i < vocab; ++i) mx = std::max(mx, static_cast<double>(l[i]));
      for (int64_t i = 0; i < vocab; ++i) sum += std::exp(l[i] - mx);
      const double log_z = mx + std::log(sum);
      for (const Json& top : pos["top5"]) {
        const double ours = l[top["token_id"].get<int32_t>()] - log_z;
        EXPECT_NEAR(ours, top["logprob"].get<double>(), 1e-4) << c["name"] << " step " << pos["step"];
      }
    }
  }
}

}  // namespace
}  // namespace vllm
