// Sampling through the whole engine on real models: seeded reproducibility
// whatever the batch and chunking, n sequences, stop handling, streaming,
// and beam search checked against brute force.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/engine_test_util.h"
#include "engine/runner/prompt_scorer.h"

namespace vllm {
namespace {

using testing::greedy;
using testing::LoadedModel;

class SamplingEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { stories_ = new LoadedModel(testing::load_model(testing::model_dir())); }
  static void TearDownTestSuite() { delete stories_; }

  static std::vector<int32_t> once_upon_a_time() { return {1, 403, 407, 261, 378}; }

  static SamplingParams seeded(int64_t seed, int64_t max_tokens = 40) {
    SamplingParams p;
    p.temperature = 0.9;
    p.top_p = 0.95;
    p.top_k = 50;
    p.seed = seed;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }

  static std::vector<int32_t> run_one(LLMEngine& engine, const PromptInput& prompt, const SamplingParams& p) {
    Result<std::vector<RequestOutput>> out = engine.generate({prompt}, {p});
    EXPECT_TRUE(out.is_ok()) << out.status().message();
    return out->at(0).outputs.at(0).token_ids;
  }

  static LoadedModel* stories_;
};

LoadedModel* SamplingEngineTest::stories_ = nullptr;

TEST_F(SamplingEngineTest, SeededRequestIsTheSameAloneInABatchOf32AndChunked) {
  const PromptInput prompt = PromptInput::from_token_ids(once_upon_a_time());
  auto alone_engine = testing::make_engine(*stories_);
  const std::vector<int32_t> alone = run_one(*alone_engine, prompt, seeded(42));
  EXPECT_EQ(alone.size(), 40u);
  EXPECT_EQ(run_one(*alone_engine, prompt, seeded(42)), alone);
  EXPECT_NE(run_one(*alone_engine, prompt, seeded(43)), alone);

  // Among 31 others (greedy, other seeds, unseeded, penalised), in 8-token
  // chunks on a pool small enough to preempt.
  auto busy = testing::make_engine(*stories_, testing::small_engine(*stories_, 8, 8));
  std::mt19937 rng(5);
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < 32; ++i) {
    if (i == 17) {
      prompts.push_back(prompt);
      params.push_back(seeded(42));
      continue;
    }
    std::vector<int32_t> ids = testing::random_tokens(rng, 1 + static_cast<int32_t>(rng() % 30), 512);
    ids.insert(ids.begin(), 1);
    prompts.push_back(PromptInput::from_token_ids(ids));
    SamplingParams p = i % 4 == 0 ? greedy(20) : seeded(i, 20);
    if (i % 4 == 1) p.seed.reset();
    if (i % 4 == 2) p.repetition_penalty = 1.3, p.presence_penalty = 0.5;
    params.push_back(p);
  }
  Result<std::vector<RequestOutput>> outs = busy->generate(prompts, params);
  ASSERT_TRUE(outs.is_ok()) << outs.status().message();
  EXPECT_EQ(outs->at(17).outputs.at(0).token_ids, alone);
  EXPECT_GT(busy->stats().num_preemptions, 0);
}

// A preempted request is recomputed from its first token; the runner keeps
// its generator and the prompt positions it has scored, so its samples,
// logprobs and prompt logprobs are those it gets alone (none twice; the
// logprobs within 1e-4, as other batches sum in another order).
TEST_F(SamplingEngineTest, PreemptionChangesNoSampleLogprobOrPromptLogprob) {
  std::mt19937 rng(11);
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < 8; ++i) {
    std::vector<int32_t> ids = testing::random_tokens(rng, 20 + static_cast<int32_t>(rng() % 30), 512);
    ids.insert(ids.begin(), 1);
    prompts.push_back(PromptInput::from_token_ids(ids));
    SamplingParams p = seeded(200 + i, 30);
    p.logprobs = 2;
    p.prompt_logprobs = 3;
    params.push_back(p);
  }
  auto alone_engine = testing::make_engine(*stories_);
  std::vector<RequestOutput> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Result<std::vector<RequestOutput>> out = alone_engine->generate({prompts[i]}, {params[i]});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    alone.push_back(std::move(out->at(0)));
  }
  // 8-token chunks over 8 blocks (128 tokens): prompts and outputs are preempted midway.
  auto busy = testing::make_engine(*stories_, testing::small_engine(*stories_, 8, 8));
  Result<std::vector<RequestOutput>> together = busy->generate(prompts, params);
  ASSERT_TRUE(together.is_ok()) << together.status().message();
  EXPECT_GT(busy->stats().num_preemptions, 4);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const CompletionOutput& got = together->at(i).outputs.at(0);
    const CompletionOutput& want = alone[i].outputs.at(0);
    EXPECT_EQ(got.token_ids, want.token_ids) << "request " << i;
    ASSERT_TRUE(got.logprobs && want.logprobs);
    ASSERT_EQ(got.logprobs->size(), want.logprobs->size()) << "request " << i;
    for (size_t t = 0; t < want.logprobs->size(); ++t) {
      EXPECT_NEAR(got.logprobs->at(t).chosen.logprob, want.logprobs->at(t).chosen.logprob, 1e-4)
          << "request " << i << " token " << t;
    }
    ASSERT_TRUE(together->at(i).prompt_logprobs && alone[i].prompt_logprobs);
    const std::vector<PositionLogprobs>& got_prompt = *together->at(i).prompt_logprobs;
    const std::vector<PositionLogprobs>& want_prompt = *alone[i].prompt_logprobs;
    ASSERT_EQ(got_prompt.size(), want_prompt.size()) << "request " << i;
    for (size_t t = 0; t < want_prompt.size(); ++t) {
      EXPECT_EQ(got_prompt[t].chosen.token_id, want_prompt[t].chosen.token_id) << "request " << i << " position " << t;
      EXPECT_NEAR(got_prompt[t].chosen.logprob, want_prompt[t].chosen.logprob, 1e-4)
          << "request " << i << " position " << t;
    }
  }
}

TEST_F(SamplingEngineTest, NSequencesShareThePromptAndUseSeedPlusIndex) {
  std::vector<int32_t> prompt = once_upon_a_time();
  std::mt19937 rng(9);
  const std::vector<int32_t> more = testing::random_tokens(rng, 35, 512);
  prompt.insert(prompt.end(), more.begin(), more.end());  // 40 tokens: 2 full blocks + 8
  SamplingParams p = seeded(100, 12);
  p.n = 4;
  p.logprobs = 0;
  auto engine = testing::make_engine(*stories_);
  Result<std::vector<RequestOutput>> out = engine->generate({PromptInput::from_token_ids(prompt)}, {p});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const std::vector<CompletionOutput>& seqs = out->at(0).outputs;
  ASSERT_EQ(seqs.size(), 4u);
  // The first sequence computes the prompt; the others find its 2 full blocks cached.
  const EngineCoreStats stats = engine->stats();
  EXPECT_EQ(stats.prefix_cache.hits_tokens, 3 * 32);
  EXPECT_EQ(stats.num_scheduled_tokens, 40 + 3 * 8 + 4 * 11);
  std::set<std::vector<int32_t>> distinct;
  for (int32_t i = 0; i < 4; ++i) {
    const CompletionOutput& c = seqs[static_cast<size_t>(i)];
    EXPECT_EQ(c.index, i);
    distinct.insert(c.token_ids);
    auto solo = testing::make_engine(*stories_);
    EXPECT_EQ(run_one(*solo, PromptInput::from_token_ids(prompt), seeded(100 + i, 12)), c.token_ids) << i;
    // The cumulative logprob is the sum of the sampled tokens' logprobs.
    ASSERT_TRUE(c.logprobs.has_value());
    double sum = 0;
    for (const PositionLogprobs& lp : *c.logprobs) sum += lp.chosen.logprob;
    EXPECT_NEAR(c.cumulative_logprob, sum, 1e-9);
  }
  EXPECT_EQ(distinct.size(), 4u);
}

TEST_F(SamplingEngineTest, StopStringsAndStopTokensEndGreedyGenerationWhereExpected) {
  // Greedy from "Once upon a time": ", there was a little girl named Lily. She loved to play ..."
  auto engine = testing::make_engine(*stories_);
  const PromptInput prompt = PromptInput::from_token_ids(once_upon_a_time());
  SamplingParams p = greedy(40);
  p.stop = {"le gi"};  // spans three tokens: " little" " g" "ir"
  Result<std::vector<RequestOutput>> out = engine->generate({prompt}, {p});
  ASSERT_TRUE(out.is_ok());
  const CompletionOutput& cut = out->at(0).outputs.at(0);
  EXPECT_EQ(cut.text, ", there was a litt");
  EXPECT_EQ(cut.finish_reason, FinishReason::kStop);
  EXPECT_EQ(std::get<std::string>(cut.stop_reason), "le gi");
  EXPECT_EQ(cut.token_ids, (std::vector<int32_t>{432, 383, 286, 261, 376, 298, 315}));  // ends with "ir"
  p.include_stop_str_in_output = true;
  EXPECT_EQ(engine->generate({prompt}, {p})->at(0).outputs.at(0).text, ", there was a little gi");

  // stop_token_ids: " little" (376) ends it; its id is output, its text is not (vLLM's
  // detokenizer skips the stop token unless include_stop_str_in_output); min_tokens 6 masks it until then.
  SamplingParams t = greedy(40);
  t.stop_token_ids = {376};
  const CompletionOutput by_token = engine->generate({prompt}, {t})->at(0).outputs.at(0);
  EXPECT_EQ(by_token.text, ", there was a");
  EXPECT_EQ(by_token.token_ids.back(), 376);
  t.include_stop_str_in_output = true;
  EXPECT_EQ(engine->generate({prompt}, {t})->at(0).outputs.at(0).text, ", there was a little");
  t.include_stop_str_in_output = false;
  EXPECT_EQ(std::get<int32_t>(by_token.stop_reason), 376);
  t.min_tokens = 6;
  const CompletionOutput later = engine->generate({prompt}, {t})->at(0).outputs.at(0);
  ASSERT_GE(later.token_ids.size(), 6u);
  EXPECT_EQ(std::count(later.token_ids.begin(), later.token_ids.begin() + 6, 376), 0);
  EXPECT_EQ(engine->stats().num_running, 0);
  const BlockPool& pool = engine->core().kv_cache().pool();
  EXPECT_EQ(pool.num_free_blocks(), pool.num_blocks());  // stopped sequences left the core
}

TEST_F(SamplingEngineTest, StreamedDeltasConcatenateToTheFinalText) {
  auto engine = testing::make_engine(*stories_);
  const PromptInput prompt = PromptInput::from_text("Lily and Ben went to the park");
  for (const char* stop : {"\n", "park", "ed t", "a"}) {
    for (bool include : {false, true}) {
      SamplingParams p = seeded(7, 60);
      p.stop = {stop};
      p.include_stop_str_in_output = include;
      const CompletionOutput final_output = engine->generate({prompt}, {p})->at(0).outputs.at(0);
      p.output_kind = OutputKind::kDelta;
      ASSERT_TRUE(engine->add_request("s", prompt, p).is_ok());
      std::string streamed;
      std::vector<int32_t> ids;
      bool finished = false;
      while (!finished) {
        for (const RequestOutput& out : engine->step()) {
          streamed += out.outputs.at(0).text;
          ids.insert(ids.end(), out.outputs[0].token_ids.begin(), out.outputs[0].token_ids.end());
          finished = out.finished;
        }
      }
      EXPECT_EQ(streamed, final_output.text) << stop << include;
      EXPECT_EQ(ids, final_output.token_ids) << stop << include;
    }
  }
}

// Each generated token's logprob as scored by a plain forward pass.
double sequence_logprob(LoadedModel& m, const std::vector<int32_t>& prompt, const std::vector<int32_t>& generated) {
  ThreadPool pool(2);
  std::vector<int32_t> ids = prompt;
  ids.insert(ids.end(), generated.begin(), generated.end());
  const std::vector<float> logits = std::move(score_all_positions(*m.model, pool, ids, 64)).value();
  const auto vocab = static_cast<int32_t>(m.model->config().vocab_size);
  double total = 0;
  for (size_t i = prompt.size(); i < ids.size(); ++i) {
    const float* row = logits.data() + (i - 1) * static_cast<size_t>(vocab);
    total += row[ids[i]] - log_sum_exp(row, vocab);
  }
  return total;
}

TEST_F(SamplingEngineTest, BeamSearchReturnsDistinctBeamsOrderedByScore) {
  auto engine = testing::make_engine(*stories_);
  // Long enough (over two blocks) for the beams to share cached blocks.
  const std::vector<int32_t> prompt = stories_->tokenizer->encode(
      "Lily and Ben went to the park. They played on the swings and the slide. Then they saw a big dog.", true);
  ASSERT_GT(prompt.size(), 32u);
  SamplingParams p;
  p.use_beam_search = true;
  p.n = 4;
  p.max_tokens = 12;
  p.length_penalty = 1.0;
  Result<std::vector<RequestOutput>> out = engine->generate({PromptInput::from_token_ids(prompt)}, {p});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const std::vector<CompletionOutput>& beams = out->at(0).outputs;
  ASSERT_EQ(beams.size(), 4u);
  std::set<std::vector<int32_t>> distinct;
  double previous_score = 0;
  for (size_t i = 0; i < beams.size(); ++i) {
    distinct.insert(beams[i].token_ids);
    EXPECT_NEAR(beams[i].cumulative_logprob, sequence_logprob(*stories_, prompt, beams[i].token_ids), 1e-4);
    const double length = static_cast<double>(prompt.size() + beams[i].token_ids.size());
    const double score = beams[i].cumulative_logprob / length;
    if (i > 0) {
      EXPECT_LE(score, previous_score + 1e-12);
    }
    previous_score = score;
  }
  EXPECT_EQ(distinct.size(), 4u);
  // The best beam is at least as likely as greedy decoding over the same length.
  const EngineCoreStats stats = engine->stats();
  const std::vector<int32_t> greedy_ids = run_one(*engine, PromptInput::from_token_ids(prompt), greedy(12));
  EXPECT_GE(beams[0].cumulative_logprob, sequence_logprob(*stories_, prompt, greedy_ids) - 1e-6);
  const BlockPool& pool = engine->core().kv_cache().pool();
  EXPECT_EQ(pool.num_free_blocks(), pool.num_blocks());
  // Beams share their prompt's and each other's blocks through the prefix cache.
  // 12 rounds of 4 beams: without sharing each round would compute every prompt again.
  EXPECT_GT(stats.prefix_cache.hits_tokens, 0);
  EXPECT_LT(stats.num_scheduled_tokens, static_cast<int64_t>(prompt.size()) * 2 + 12 * 4 * 16);
}

TEST_F(SamplingEngineTest, BeamSearchOverTwoTokensMatchesBruteForce) {
  testing::TempDir dir;
  testing::write_tiny_model(dir.path());
  LoadedModel tiny = testing::load_model(dir.path());
  const auto vocab = static_cast<int32_t>(tiny.model->config().vocab_size);
  const std::vector<int32_t> prompt = {1, 300, 42, 77};
  const int32_t width = 3;

  // Every two-token continuation, scored by plain forward passes over the
  // KV cache the engine picks.
  ThreadPool pool(2);
  const DType kv_dtype = auto_kv_cache_dtype(tiny.model->config(), tiny.model->kv_cache_spec());
  const std::vector<float> first = std::move(score_all_positions(*tiny.model, pool, prompt, 64, 16, kv_dtype)).value();
  const float* first_row = first.data() + (prompt.size() - 1) * static_cast<size_t>(vocab);
  const double first_z = log_sum_exp(first_row, vocab);
  std::vector<int32_t> by_first(static_cast<size_t>(vocab));
  std::iota(by_first.begin(), by_first.end(), 0);
  std::stable_sort(by_first.begin(), by_first.end(), [&](int32_t a, int32_t b) { return first_row[a] > first_row[b]; });
  struct Scored {
    double logprob;
    std::vector<int32_t> ids;
  };
  std::vector<Scored> reachable;  // continuations of the width best first tokens
  for (int32_t rank = 0; rank < width; ++rank) {
    const int32_t t1 = by_first[static_cast<size_t>(rank)];
    std::vector<int32_t> ids = prompt;
    ids.push_back(t1);
    const std::vector<float> second = std::move(score_all_positions(*tiny.model, pool, ids, 64, 16, kv_dtype)).value();
    const float* row = second.data() + prompt.size() * static_cast<size_t>(vocab);
    const double z = log_sum_exp(row, vocab);
    for (int32_t t2 = 0; t2 < vocab; ++t2) {
      reachable.push_back({first_row[t1] - first_z + row[t2] - z, {t1, t2}});
    }
  }
  std::stable_sort(reachable.begin(), reachable.end(),
                   [](const Scored& a, const Scored& b) { return a.logprob > b.logprob; });

  SamplingParams p;
  p.use_beam_search = true;
  p.n = width;
  p.max_tokens = 2;
  p.ignore_eos = true;
  auto engine = testing::make_engine(tiny);
  Result<std::vector<RequestOutput>> out = engine->generate({PromptInput::from_token_ids(prompt)}, {p});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const std::vector<CompletionOutput>& beams = out->at(0).outputs;
  ASSERT_EQ(beams.size(), static_cast<size_t>(width));
  for (size_t i = 0; i < beams.size(); ++i) {
    EXPECT_EQ(beams[i].token_ids, reachable[i].ids) << "beam " << i;
    EXPECT_NEAR(beams[i].cumulative_logprob, reachable[i].logprob, 1e-4) << "beam " << i;
  }
}

}  // namespace
}  // namespace vllm
