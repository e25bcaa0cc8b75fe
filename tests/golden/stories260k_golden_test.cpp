// stories260k against outputs of llama2.c's own float32 forward pass
// (tests/golden/stories260k/README.md): greedy generations must match token
// for token and character for character; log-probabilities within 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "base/json.h"
#include "engine/engine_test_util.h"
#include "engine/llm_engine.h"
#include "model/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace vllm {
namespace {

class Stories260kGoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = std::move(load_model(testing::model_dir())).value().release();
    tokenizer_ = std::move(Tokenizer::load(testing::model_dir())).value().release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokenizer_;
  }
  static std::unique_ptr<LLMEngine> make_engine(std::optional<SpeculativeConfig> speculative = std::nullopt) {
    EngineConfig config;
    config.num_threads = 2;
    config.speculative = speculative;
    return std::move(LLMEngine::create(*model_, *tokenizer_, config)).value();
  }
  // All twelve cases run through the engine together, as one batch;
  // `all_drafts_right`: a draft model that is the target itself.
  static void expect_greedy_goldens(std::optional<SpeculativeConfig> speculative, bool all_drafts_right = false);
  static Json golden(const std::string& file) {
    return Json::parse(testing::read_file(testing::golden_dir() + "/" + file));
  }

  static Model* model_;
  static Tokenizer* tokenizer_;
};

Model* Stories260kGoldenTest::model_ = nullptr;
Tokenizer* Stories260kGoldenTest::tokenizer_ = nullptr;

void Stories260kGoldenTest::expect_greedy_goldens(std::optional<SpeculativeConfig> speculative, bool all_drafts_right) {
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
  std::unique_ptr<LLMEngine> engine = make_engine(speculative);
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
  if (speculative) {
    const SpecDecodingStats spec = *engine->stats().spec_decoding;
    EXPECT_GT(spec.num_accepted_tokens, 0);
    if (all_drafts_right) {
      // Where a different batch shape's rounding flips no near tie.
      EXPECT_GT(spec.acceptance_rate(), 0.95);
    } else {
      // The drafts were verified, and some were right: the test saw both paths.
      EXPECT_LT(spec.num_accepted_tokens, spec.num_draft_tokens);
    }
  }
}

TEST_F(Stories260kGoldenTest, GreedyGenerationsMatchExactly) { expect_greedy_goldens(std::nullopt); }

// Speculative decoding is lossless: n-gram drafts of one to three tokens
// (short matches, so that many are proposed and many rejected) change nothing.
TEST_F(Stories260kGoldenTest, GreedyGenerationsMatchExactlyWithNgramSpeculation) {
  SpeculativeConfig ngram;
  ngram.num_speculative_tokens = 3;
  ngram.prompt_lookup_min = 1;
  ngram.prompt_lookup_max = 3;
  ngram.disable_by_batch_size = 0;  // all twelve run together
  expect_greedy_goldens(ngram);
}

// The target as its own draft model: nearly every guess is right.
TEST_F(Stories260kGoldenTest, GreedyGenerationsMatchExactlyWithTheTargetAsItsDraftModel) {
  expect_greedy_goldens(testing::draft_model_config(testing::model_dir(), 4), true);
}

// A random model of the same vocabulary (and a shorter context, 256, past
// which it guesses nothing): most guesses are wrong.
TEST_F(Stories260kGoldenTest, GreedyGenerationsMatchExactlyWithARandomDraftModel) {
  testing::TempDir dir;
  testing::write_tiny_model(dir.path());
  expect_greedy_goldens(testing::draft_model_config(dir.path(), 4));
}

// A random EAGLE head (in the published layout, one layer over the target's
// hidden states): most guesses are wrong.
TEST_F(Stories260kGoldenTest, GreedyGenerationsMatchExactlyWithARandomEagleHead) {
  testing::TempDir dir;
  testing::write_eagle_head(testing::model_dir(), dir.path());
  expect_greedy_goldens(testing::draft_model_config(dir.path(), 4, SpeculativeMethod::kEagle));
}

// A random EAGLE-3 head (the published layout: three of the target's layers'
// hidden states, half the vocabulary mapped by d2t): most guesses are wrong.
TEST_F(Stories260kGoldenTest, GreedyGenerationsMatchExactlyWithARandomEagle3Head) {
  testing::TempDir dir;
  testing::write_eagle_head(testing::model_dir(), dir.path(), 0.02, /*eagle3=*/true);
  expect_greedy_goldens(testing::draft_model_config(dir.path(), 4, SpeculativeMethod::kEagle3));
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

// The engine's logprobs (logprobs 5, prompt_logprobs 5), with the prompts
// computed in 5-token chunks that read the earlier ones through the paged cache.
TEST_F(Stories260kGoldenTest, Top5LogprobsMatchAtEveryStep) {
  const Json cases = golden("logprobs_top5.json")["cases"];
  ASSERT_EQ(cases.size(), 3u);
  EngineConfig config;
  config.num_threads = 2;
  config.scheduler.max_num_batched_tokens = 5;
  auto engine = std::move(LLMEngine::create(*model_, *tokenizer_, config)).value();
  for (const Json& c : cases) {
    SamplingParams p;
    p.temperature = 0.0;
    p.ignore_eos = true;
    p.max_tokens = c["max_new_tokens"].get<int64_t>();
    p.logprobs = 5;
    p.prompt_logprobs = 5;
    const auto prompt = c["prompt_token_ids"].get<std::vector<int32_t>>();
    Result<std::vector<RequestOutput>> out = engine->generate({PromptInput::from_token_ids(prompt)}, {p});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    const CompletionOutput& seq = out->at(0).outputs.at(0);
    ASSERT_EQ(seq.token_ids, c["output_token_ids"].get<std::vector<int32_t>>()) << c["name"];
    ASSERT_TRUE(seq.logprobs.has_value());
    const Json& positions = c["positions"];
    ASSERT_EQ(seq.logprobs->size(), positions.size());
    for (const Json& pos : positions) {
      const PositionLogprobs& ours = seq.logprobs->at(pos["step"].get<size_t>());
      const std::string where = c["name"].get<std::string>() + " step " + pos["step"].dump();
      EXPECT_EQ(ours.chosen.token_id, pos["token_id"].get<int32_t>()) << where;
      EXPECT_NEAR(ours.chosen.logprob, pos["logprob"].get<double>(), 1e-4) << where;
      EXPECT_EQ(ours.chosen.rank, 1) << where;  // greedy
      ASSERT_EQ(ours.top.size(), 5u) << where;
      for (size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(ours.top[k].token_id, pos["top5"][k]["token_id"].get<int32_t>()) << where << " top " << k;
        EXPECT_NEAR(ours.top[k].logprob, pos["top5"][k]["logprob"].get<double>(), 1e-4) << where << " top " << k;
        EXPECT_EQ(ours.top[k].rank, static_cast<int32_t>(k) + 1) << where;
      }
    }
    // Prompt logprobs: none for the first token, then each token given the ones before.
    const Json& golden_prompt = c["prompt_logprobs"];
    ASSERT_TRUE(out->at(0).prompt_logprobs.has_value());
    const std::vector<PositionLogprobs>& prompt_lp = *out->at(0).prompt_logprobs;
    ASSERT_EQ(prompt_lp.size() + 1, golden_prompt.size()) << c["name"];
    EXPECT_TRUE(golden_prompt[0].is_null());
    for (size_t i = 0; i < prompt_lp.size(); ++i) {
      EXPECT_EQ(prompt_lp[i].chosen.token_id, prompt[i + 1]);
      EXPECT_NEAR(prompt_lp[i].chosen.logprob, golden_prompt[i + 1].get<double>(), 1e-4) << c["name"] << " " << i;
      EXPECT_EQ(prompt_lp[i].top.size(), 5u);
    }
    // Again, now that its blocks are cached: cached positions give no logits,
    // so the request must compute them anyway.
    Result<std::vector<RequestOutput>> again = engine->generate({PromptInput::from_token_ids(prompt)}, {p});
    ASSERT_TRUE(again.is_ok());
    ASSERT_TRUE(again->at(0).prompt_logprobs.has_value());
    ASSERT_EQ(again->at(0).prompt_logprobs->size(), prompt_lp.size());
    for (size_t i = 0; i < prompt_lp.size(); ++i) {
      EXPECT_EQ(again->at(0).prompt_logprobs->at(i).chosen.logprob, prompt_lp[i].chosen.logprob);
    }
  }
}

}  // namespace
}  // namespace vllm
