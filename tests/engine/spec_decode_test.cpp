// Speculative decoding through the whole engine (n-gram drafts, draft
// models, EAGLE heads): greedy outputs and stops exactly as without it among 64 requests
// with chunked prefill and preemption, sampled tokens from the same
// distribution, the counters, and no block left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "base/file_util.h"
#include "base/json.h"
#include "base/regex.h"
#include "engine/chi_square.h"
#include "engine/engine_core.h"
#include "engine/engine_test_util.h"
#include "engine/runner/prompt_scorer.h"
#include "engine/spec/eagle_proposer.h"

namespace vllm {
namespace {

using testing::draft_model_config;
using testing::LoadedModel;
using testing::mixed_workload;
using testing::named_model_dir;
using testing::small_engine;
using testing::TempDir;

// Short matches (one to three tokens), so that a random model's output gets
// many drafts, most of them rejected and some accepted.
SpeculativeConfig ngram(int32_t k) {
  SpeculativeConfig c;
  c.num_speculative_tokens = k;
  c.prompt_lookup_min = 1;
  c.prompt_lookup_max = 3;
  c.disable_by_batch_size = 0;  // drafts in batches of any size
  return c;
}

std::vector<RequestOutput> generate(LLMEngine& engine,
                                    const std::vector<std::pair<PromptInput, SamplingParams>>& work) {
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (const auto& [p, s] : work) {
    prompts.push_back(p);
    params.push_back(s);
  }
  Result<std::vector<RequestOutput>> out = engine.generate(prompts, params);
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  return std::move(out).value();
}

// A target model and its proposer: "ngram", "self" (the target as its own
// draft model), "eagle" or "eagle3" (a random EAGLE or EAGLE-3 head for it), "eagle_pass_through"
// (write_pass_through_eagle_head: its guesses repeat the newest token, which
// a tiny random model's loops accept), or a model name of named_model_dir (a
// tiny random model as the draft).
struct SpecCase {
  std::string target;
  std::string proposer;
};

void PrintTo(const SpecCase& c, std::ostream* os) { *os << c.target << "_" << c.proposer; }

class SpecDecodeModelTest : public ::testing::TestWithParam<SpecCase> {
 protected:
  TempDir target_dir_;
  TempDir draft_dir_;
};

TEST_P(SpecDecodeModelTest, GreedyOutputsAndStopsEqualThoseWithoutSpeculationUnderPreemption) {
  const SpecCase& c = GetParam();
  const std::string target = named_model_dir(c.target, target_dir_);
  LoadedModel m = testing::load_model(target);
  auto work = mixed_workload(static_cast<int32_t>(m.model->config().vocab_size));
  // Stops inside the output, found in a run without them: an end token, a
  // stop token id, a stop string (by text), each on a quarter of the
  // requests.  The stop token and string count only from the middle of the
  // output on (min_tokens), where a random model's greedy output mostly
  // repeats itself: there the n-gram drafts are accepted, and stops fall
  // inside them (and a draft model as good as the target drafts them).
  const std::vector<RequestOutput> plain = generate(*testing::make_engine(m), work);
  for (size_t i = 0; i < work.size(); ++i) {
    SamplingParams& p = work[i].second;
    const std::vector<int32_t>& ids = plain[i].outputs[0].token_ids;
    const size_t middle = ids.size() / 2;
    if (i % 4 == 1) {
      p.stop_token_ids = {ids[middle]};
      p.min_tokens = static_cast<int64_t>(middle);
    }
    if (i % 4 == 2) p.ignore_eos = false;
    if (i % 4 == 3) {
      const std::string tail = m.tokenizer->decode({ids.begin() + static_cast<ptrdiff_t>(middle), ids.end()}, true);
      if (tail.size() >= 4) p.stop = {tail.substr(1, 3)};
      p.min_tokens = static_cast<int64_t>(middle);
    }
    p.logprobs = i % 5 == 0 ? std::optional<int32_t>(2) : std::nullopt;
  }
  // A 32-token budget splits long prompts and trims drafts; 12 blocks force preemption.
  auto reference_engine = testing::make_engine(m, small_engine(m, 32, 12));
  const std::vector<RequestOutput> reference = generate(*reference_engine, work);
  EngineConfig config = small_engine(m, 32, 12);
  if (c.proposer == "ngram") {
    config.speculative = ngram(4);
  } else {
    std::vector<LayerKVSpec> draft_layers;
    if (c.proposer.starts_with("eagle")) {
      const bool eagle3 = c.proposer == "eagle3";
      if (c.proposer == "eagle_pass_through") {
        testing::write_pass_through_eagle_head(target, draft_dir_.path());
      } else {
        testing::write_eagle_head(target, draft_dir_.path(), 0.02, eagle3);
      }
      config.speculative =
          draft_model_config(draft_dir_.path(), 4, eagle3 ? SpeculativeMethod::kEagle3 : SpeculativeMethod::kEagle);
      draft_layers = std::move(eagle3 ? load_eagle3_head(draft_dir_.path(), *m.model)
                                      : load_eagle_head(draft_dir_.path(), *m.model))
                         .value()
                         ->kv_cache_spec();
    } else {
      config.speculative =
          draft_model_config(c.proposer == "self" ? target : named_model_dir(c.proposer, draft_dir_), 4);
      draft_layers = testing::load_model(config.speculative->model).model->kv_cache_spec();
    }
    // The draft's cache takes its share of the pool's bytes: 12 blocks of both.
    const KVCacheShape draft{draft_layers, 16};
    config.cache.kv_cache_memory_bytes += static_cast<int64_t>(draft.bytes_per_block()) * 12;
  }
  auto engine = testing::make_engine(m, config);
  const std::vector<RequestOutput> speculative = generate(*engine, work);

  int stopped = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    const CompletionOutput& want = reference[i].outputs[0];
    const CompletionOutput& got = speculative[i].outputs[0];
    EXPECT_EQ(got.token_ids, want.token_ids) << "request " << i;
    EXPECT_EQ(got.text, want.text) << "request " << i;
    EXPECT_EQ(got.finish_reason, want.finish_reason) << "request " << i;
    EXPECT_EQ(got.stop_reason, want.stop_reason) << "request " << i;
    ASSERT_EQ(got.logprobs.has_value(), want.logprobs.has_value()) << "request " << i;
    if (want.logprobs) {
      ASSERT_EQ(got.logprobs->size(), want.logprobs->size());
      for (size_t t = 0; t < want.logprobs->size(); ++t) {
        const PositionLogprobs& g = (*got.logprobs)[t];
        const PositionLogprobs& w = (*want.logprobs)[t];
        EXPECT_NEAR(g.chosen.logprob, w.chosen.logprob, 1e-4) << "request " << i << " token " << t;
        ASSERT_EQ(g.top.size(), w.top.size());
        for (size_t k = 0; k < w.top.size(); ++k) EXPECT_EQ(g.top[k].token_id, w.top[k].token_id);
      }
    }
    EXPECT_LE(got.token_ids.size(), static_cast<size_t>(work[i].second.max_tokens));
    stopped += want.finish_reason == FinishReason::kStop;
  }
  EXPECT_GT(stopped, 10) << "the stops were met";
  const EngineCoreStats stats = engine->stats();
  EXPECT_EQ(stats.num_free_blocks, stats.num_blocks);
  ASSERT_TRUE(stats.spec_decoding.has_value());
  const SpecDecodingStats& spec = *stats.spec_decoding;
  // Guesses of the newest token are right 91% of the time on a looping tiny
  // model: 146 steps serve all 64 requests, too few for the pool to run short.
  if (c.proposer != "eagle_pass_through") {
    EXPECT_GT(stats.num_preemptions, 0);
  }
  EXPECT_GT(spec.num_draft_tokens, 0);
  // A random head's guesses are rarely what a tiny random target says (none on some).
  if ((c.proposer != "eagle" && c.proposer != "eagle3") || c.target == "stories260k") {
    EXPECT_GT(spec.num_accepted_tokens, 0);
  }
  if (c.proposer == "self") {
    // The target's own greedy guesses: all right but where a different
    // batch shape's rounding flips a near tie.
    EXPECT_GT(spec.acceptance_rate(), 0.95);
  } else {
    EXPECT_LT(spec.num_accepted_tokens, spec.num_draft_tokens);
  }
  ASSERT_EQ(spec.num_accepted_tokens_per_pos.size(), 4u);
  int64_t accepted = 0;
  for (size_t pos = 0; pos < 4; ++pos) {
    accepted += spec.num_accepted_tokens_per_pos[pos];
    if (pos > 0) {
      EXPECT_LE(spec.num_accepted_tokens_per_pos[pos], spec.num_accepted_tokens_per_pos[pos - 1]);
    }
  }
  EXPECT_EQ(accepted, spec.num_accepted_tokens);
}

INSTANTIATE_TEST_SUITE_P(
    Models, SpecDecodeModelTest,
    ::testing::Values(SpecCase{"stories260k", "ngram"}, SpecCase{"tiny_llama", "ngram"},
                      SpecCase{"tiny_qwen2_moe", "ngram"}, SpecCase{"stories260k", "self"},
                      SpecCase{"stories260k", "tiny_llama"}, SpecCase{"tiny_qwen2_moe", "tiny_llama"},
                      SpecCase{"stories260k", "eagle"}, SpecCase{"tiny_llama", "eagle"},
                      SpecCase{"tiny_qwen2_moe", "eagle"}, SpecCase{"stories260k", "eagle3"},
                      SpecCase{"tiny_llama", "eagle3"}, SpecCase{"tiny_qwen2_moe", "eagle3"},
                      SpecCase{"tiny_llama", "eagle_pass_through"}, SpecCase{"tiny_qwen2_moe", "eagle_pass_through"}),
    [](const ::testing::TestParamInfo<SpecCase>& info) { return info.param.target + "_" + info.param.proposer; });

// A draft model that cannot be loaded, or whose vocabulary is not the
// target's, is one clear error at start-up.
TEST(SpecDecodeDraftModelTest, RefusesAMissingDraftOrOneOfAnotherVocabulary) {
  LoadedModel m = testing::load_model(testing::model_dir());
  EngineConfig config;
  config.speculative = draft_model_config("/nonexistent/draft", 2);
  Result<std::unique_ptr<LLMEngine>> engine = LLMEngine::create(*m.model, *m.tokenizer, config);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().message().rfind("the draft model: ", 0), 0u) << engine.status().message();

  TempDir dir;
  TestModelOptions options;
  options.preset = std::move(find_test_model_preset("tiny", "llama")).value();
  options.preset.config["vocab_size"] = 640;
  options.tokenizer_dir = testing::model_dir();
  options.out_dir = dir.path();
  ThreadPool pool(1);
  ASSERT_TRUE(write_test_model(options, pool).is_ok());
  config.speculative = draft_model_config(dir.path(), 2);
  engine = LLMEngine::create(*m.model, *m.tokenizer, config);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().message(),
            "the draft model's vocabulary (640 tokens) differs from the target model's (512)");
}

// An EAGLE head that passes the target's hidden state through guesses the
// newest token, k times over, only when it reads the target's hidden state of
// the newest token's position -- not another row's, nor a rejected draft's.
// Each verification then accepts the run of that token which follows it in
// the output, so the counts follow from the outputs alone.
TEST(SpecDecodeEagleTest, APassThroughHeadsDraftsAreAcceptedAsTheOutputsPredict) {
  TempDir target_dir, head_dir;
  const std::string target = named_model_dir("tiny_llama", target_dir);
  testing::write_pass_through_eagle_head(target, head_dir.path());
  LoadedModel m = testing::load_model(target);
  std::mt19937 rng(5);
  std::vector<std::pair<PromptInput, SamplingParams>> work;
  for (int i = 0; i < 8; ++i) {
    work.emplace_back(PromptInput::from_token_ids(testing::random_tokens(rng, 5 + 9 * i, 512)),
                      testing::greedy(30 + i));
  }
  constexpr int32_t k = 3;
  EngineConfig config;
  config.speculative = draft_model_config(head_dir.path(), k, SpeculativeMethod::kEagle);
  auto engine = testing::make_engine(m, config);
  const std::vector<RequestOutput> outputs = generate(*engine, work);
  SpecDecodingStats predicted;
  for (size_t r = 0; r < work.size(); ++r) {
    const std::vector<int32_t>& ids = outputs[r].outputs[0].token_ids;
    const auto n = static_cast<int64_t>(ids.size());
    ASSERT_EQ(n, work[r].second.max_tokens);
    // Newest token i: drafts ids[i] x room, room leaving the last token to the target.
    for (int64_t i = 0; i + 1 < n;) {
      const int64_t room = std::min<int64_t>(k, n - i - 2);
      int64_t accepted = 0;
      while (accepted < room && ids[static_cast<size_t>(i + accepted + 1)] == ids[static_cast<size_t>(i)]) ++accepted;
      if (room > 0) {
        ++predicted.num_drafts;
        predicted.num_draft_tokens += room;
        predicted.num_accepted_tokens += accepted;
      }
      i += accepted + 1;
    }
  }
  const SpecDecodingStats spec = *engine->stats().spec_decoding;
  EXPECT_GT(predicted.num_accepted_tokens, 20);
  EXPECT_LT(predicted.num_accepted_tokens, predicted.num_draft_tokens);
  EXPECT_EQ(spec.num_drafts, predicted.num_drafts);
  EXPECT_EQ(spec.num_draft_tokens, predicted.num_draft_tokens);
  EXPECT_EQ(spec.num_accepted_tokens, predicted.num_accepted_tokens);
}

// The head's guesses for sequence `s`, recomputed from scratch for each: its
// rows 0 .. L - 2 read tokens s[1 ..] with the target's hidden states
// h[0 .. L - 2] (L = s.size()), each guess's row then reads the guess with
// the output of the row before it.
std::vector<int32_t> recomputed_guesses(Model& head, ThreadPool& pool, std::vector<int32_t> s,
                                        const std::vector<float>& h, int32_t k) {
  const auto width = static_cast<size_t>(head.config().hidden_size);
  const auto vocab = static_cast<size_t>(head.config().vocab_size);
  std::vector<int32_t> tokens(s.begin() + 1, s.end());
  std::vector<float> inputs(h.begin(), h.begin() + static_cast<ptrdiff_t>(tokens.size() * width));
  std::vector<int32_t> guesses;
  for (int32_t j = 0; j < k; ++j) {
    std::vector<float> outputs;
    const std::vector<float> logits =
        std::move(score_all_positions(head, pool, tokens, static_cast<int32_t>(tokens.size()), 16, DType::kF32,
                                      {.input = inputs.data(),
                                       .input_width = static_cast<int64_t>(width),
                                       .tap = HiddenStateTap{},
                                       .output = &outputs}))
            .value();
    const float* last = logits.data() + (tokens.size() - 1) * vocab;
    guesses.push_back(static_cast<int32_t>(std::max_element(last, last + vocab) - last));
    tokens.push_back(guesses.back());
    inputs.insert(inputs.end(), outputs.end() - static_cast<ptrdiff_t>(width), outputs.end());
  }
  return guesses;
}

// The proposer's guesses, made incrementally in its own paged cache, are
// those of the head run over the whole sequence: after a prompt (its rows
// read the next prompt token, the last the sampled one), and after a
// verification that kept one of three drafts (the rejected ones' rows and
// cache entries replaced).  The head's weights are large enough (N(0, 0.3))
// for its attention to move its guesses: positions and cache matter.
TEST(SpecDecodeEagleTest, GuessesEqualTheHeadRunOverTheWholeSequence) {
  LoadedModel m = testing::load_model(testing::model_dir());
  TempDir head_dir;
  testing::write_eagle_head(testing::model_dir(), head_dir.path(), 0.3);
  std::unique_ptr<Model> head = std::move(load_eagle_head(head_dir.path(), *m.model)).value();
  std::unique_ptr<Model> reference_head = std::move(load_eagle_head(head_dir.path(), *m.model)).value();
  ThreadPool pool(2);
  constexpr int32_t k = 3;
  const int32_t block_size = 16;
  KVCacheManager kv_cache(32, block_size, /*enable_caching=*/false);
  EagleProposer proposer(*head, pool, KVCacheShape{head->kv_cache_spec(), block_size, DType::kF32}, 32, false,
                         m.model->config().hidden_size);
  std::mt19937 rng(9);
  const std::vector<int32_t> prompt = testing::random_tokens(rng, 37, 512);
  ASSERT_TRUE(kv_cache.allocate_slots(1, 37 + 1 + 2 * k));
  std::vector<int32_t> tokens = prompt;
  // The runner's state of the request after a step, as the proposer sees it.
  auto draft_request = [&](std::span<const float> target_hidden, int32_t first_position) {
    DraftRequest d;
    d.id = 1;
    d.token_ids = tokens;
    d.num_prompt_tokens = 37;
    d.num_computed_tokens = static_cast<int32_t>(tokens.size()) - 1;
    d.block_table = kv_cache.block_table(1);
    d.max_drafts = k;
    d.target_hidden = target_hidden;
    d.target_first_position = first_position;
    return std::vector<DraftRequest>{d};
  };
  // What the target computes of a sequence: every position's hidden state, and its greedy next token.
  auto target_pass = [&](const std::vector<int32_t>& s) {
    std::vector<float> hidden;
    const std::vector<float> logits =
        std::move(score_all_positions(*m.model, pool, s, static_cast<int32_t>(s.size()), 16, DType::kF32,
                                      {.tap = HiddenStateTap{}, .output = &hidden}))
            .value();
    const float* last = logits.data() + (s.size() - 1) * 512;
    return std::make_pair(hidden, static_cast<int32_t>(std::max_element(last, last + 512) - last));
  };
  const size_t width = static_cast<size_t>(m.model->config().hidden_size);

  // The prompt's step: 37 rows computed, a token sampled.
  auto [prompt_hidden, first] = target_pass(prompt);
  tokens.push_back(first);
  std::vector<DraftRequest> batch = draft_request(prompt_hidden, 0);
  proposer.propose(batch);
  const std::vector<int32_t> drafts = batch[0].drafts;
  EXPECT_EQ(drafts, recomputed_guesses(*reference_head, pool, tokens, prompt_hidden, k));

  // The verification of [first, drafts]: the first draft kept, a correction after it.
  std::vector<int32_t> verified = tokens;
  verified.insert(verified.end(), drafts.begin(), drafts.end());
  auto [verified_hidden, ignored] = target_pass(verified);
  tokens.push_back(drafts[0]);
  tokens.push_back((drafts[1] + 1) % 512);
  const std::span<const float> chunk_rows = std::span<const float>(verified_hidden).subspan(37 * width);
  batch = draft_request(chunk_rows, 37);
  proposer.propose(batch);
  EXPECT_EQ(batch[0].drafts, recomputed_guesses(*reference_head, pool, tokens, verified_hidden, k));
}

// With a head, a prefix-cache hit leaves its last block to be computed again
// (the head's entry at a block's last position depends on the next token):
// a repeated 40-token prompt hits one 16-token block, not two.
TEST(SpecDecodeEagleTest, APrefixCacheHitRecomputesItsLastBlock) {
  LoadedModel m = testing::load_model(testing::model_dir());
  TempDir head_dir;
  testing::write_eagle_head(testing::model_dir(), head_dir.path());
  std::mt19937 rng(3);
  const PromptInput prompt = PromptInput::from_token_ids(testing::random_tokens(rng, 40, 512));
  for (const bool eagle : {false, true}) {
    EngineConfig config;
    if (eagle) config.speculative = draft_model_config(head_dir.path(), 2, SpeculativeMethod::kEagle);
    auto engine = testing::make_engine(m, config);
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(engine->generate({prompt}, {testing::greedy(4)}).is_ok());
    EXPECT_EQ(engine->stats().prefix_cache.hits_tokens, eagle ? 16 : 32);
  }
}

// A head that cannot be read, whose width is not the target's, or that reads
// a layer the target lacks, is one clear error at start-up.
TEST(SpecDecodeEagleTest, RefusesAMissingHeadAWrongWidthOrAMissingLayer) {
  LoadedModel m = testing::load_model(testing::model_dir());
  EngineConfig config;
  config.speculative = draft_model_config("/nonexistent/head", 2, SpeculativeMethod::kEagle);
  Result<std::unique_ptr<LLMEngine>> engine = LLMEngine::create(*m.model, *m.tokenizer, config);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().message().rfind("the EAGLE head: ", 0), 0u) << engine.status().message();

  TempDir head_dir;
  testing::write_eagle_head(testing::model_dir(), head_dir.path());
  const std::string head_config = head_dir.path() + "/config.json";
  Result<Json> json = read_json_file(head_config);
  ASSERT_TRUE(json.is_ok());
  (*json)["hidden_size"] = 96;
  ASSERT_TRUE(write_text_file(head_config, json->dump()).is_ok());
  config.speculative = draft_model_config(head_dir.path(), 2, SpeculativeMethod::kEagle);
  engine = LLMEngine::create(*m.model, *m.tokenizer, config);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().message(), "the EAGLE head: " + head_dir.path() +
                                           "/config.json: the EAGLE head's hidden_size (96) differs from the "
                                           "target model's (64)");

  // An EAGLE-3 head reading a layer the target lacks (stories260k has 5).
  TempDir head3_dir;
  testing::write_eagle_head(testing::model_dir(), head3_dir.path(), 0.02, /*eagle3=*/true);
  const std::string head3_config = head3_dir.path() + "/config.json";
  json = read_json_file(head3_config);
  ASSERT_TRUE(json.is_ok());
  (*json)["eagle_config"] = Json{{"eagle_aux_hidden_state_layer_ids", {1, 3, 7}}};
  ASSERT_TRUE(write_text_file(head3_config, json->dump()).is_ok());
  config.speculative = draft_model_config(head3_dir.path(), 2, SpeculativeMethod::kEagle3);
  engine = LLMEngine::create(*m.model, *m.tokenizer, config);
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(
      engine.status().message(),
      "the EAGLE head: " + head3_config + ": eagle_aux_hidden_state_layer_ids names layer 7 of a target with 5 layers");
}

// disable_by_batch_size: no drafts while that many requests run, the same outputs.
// Drafts under a grammar (structured outputs): the scheduler keeps the
// drafts the grammar takes, each verified row is masked by the grammar's
// state after the drafts before it.  Greedy outputs equal those without
// speculation, sampled ones stay in the language, and drafts are accepted
// (the regexes repeat, so n-gram lookup finds what comes next).
TEST(SpecDecodeGrammarTest, StructuredOutputsUnderDraftsKeepTheirGrammarAndGreedyOutputs) {
  LoadedModel m = testing::load_model(testing::model_dir());
  const std::vector<std::string> regexes = {
      "(Once upon a time, (Lily|Tom|Sue) (had|saw|was) a (big|little) (dog|cat|ball)\\. )+",
      "(([0-9]{2}, ){3}and [a-z]{2,6}\\. )+",
      "(yes|no)( (yes|no)){5,40}",
  };
  std::vector<std::pair<PromptInput, SamplingParams>> work;
  for (const std::string& regex : regexes) {
    for (int i = 0; i < 4; ++i) {
      SamplingParams p = i < 2 ? testing::greedy(48 + 8 * i) : SamplingParams{};
      if (i >= 2) {
        p.seed = 100 + i;
        p.max_tokens = 56;
      }
      p.structured_outputs = structured::StructuredOutputSpec{structured::ConstraintKind::kRegex, regex};
      work.emplace_back(PromptInput::from_text(i % 2 == 0 ? "Once upon a time" : "Tom and Sue"), p);
    }
  }
  const std::vector<RequestOutput> plain = generate(*testing::make_engine(m), work);
  EngineConfig config = small_engine(m, 32, 16);
  config.speculative = ngram(4);
  auto engine = testing::make_engine(m, config);
  const std::vector<RequestOutput> speculative = generate(*engine, work);
  for (size_t i = 0; i < work.size(); ++i) {
    const CompletionOutput& got = speculative[i].outputs[0];
    if (work[i].second.is_greedy()) {
      EXPECT_EQ(got.token_ids, plain[i].outputs[0].token_ids) << "request " << i;
    }
    const Regex whole = std::move(Regex::compile("^(?:" + regexes[i / 4] + ")$")).value();
    EXPECT_EQ(whole.find_all(got.text), (std::vector<std::pair<size_t, size_t>>{{0, got.text.size()}}))
        << "request " << i << ": " << got.text;
  }
  const SpecDecodingStats spec = *engine->stats().spec_decoding;
  EXPECT_GT(spec.num_accepted_tokens, 100);
  EXPECT_LT(spec.num_accepted_tokens, spec.num_draft_tokens);
  EXPECT_EQ(engine->stats().num_free_blocks, engine->stats().num_blocks);
}

TEST(SpecDecodeBatchSizeTest, LargeBatchesStepWithoutDrafts) {
  LoadedModel m = testing::load_model(testing::model_dir());
  const auto work = mixed_workload(static_cast<int32_t>(m.model->config().vocab_size));
  auto drafts_and_outputs = [&](int32_t disable_by_batch_size) {
    EngineConfig config;
    config.speculative = ngram(4);
    config.speculative->disable_by_batch_size = disable_by_batch_size;
    auto engine = testing::make_engine(m, config);
    const std::vector<RequestOutput> out = generate(*engine, work);
    std::vector<std::vector<int32_t>> ids;
    for (const RequestOutput& r : out) ids.push_back(r.outputs[0].token_ids);
    return std::make_pair(engine->stats().spec_decoding->num_drafts, ids);
  };
  const auto [always, always_ids] = drafts_and_outputs(0);
  const auto [small_batches, small_ids] = drafts_and_outputs(8);
  const auto [alone, alone_ids] = drafts_and_outputs(2);  // drafts only once one request is left
  EXPECT_GT(always, small_batches);
  EXPECT_GT(small_batches, alone);
  EXPECT_EQ(small_ids, always_ids);
  EXPECT_EQ(alone_ids, always_ids);
}

// The first two sampled tokens after a prompt holding "421 300", where 421
// is the likely first token and a logit bias makes the draft's guess after
// it about half of the second draws: the second token then comes from
// rejection sampling, accepted or rejected about equally often.  The pairs
// must follow the distribution they have without drafts (drawing a rejected
// draft's replacement from p instead of p without the draft skews them, and
// fails).
constexpr int32_t kLikelyFirst = 421;
constexpr double kBias = 7.0;

std::vector<int32_t> sampling_prompt() {
  std::vector<int32_t> prompt = {1, kLikelyFirst, 300};
  for (int32_t t = 0; t < 13; ++t) prompt.push_back(400 + t);
  return prompt;
}

// Counts of the first two tokens of 20,000 seeded samples, with `favoured`
// biased; 5,000 under a sanitizer (VLLM_TEST_SANITIZED), which checks the
// memory of the same paths at a quarter of the power and many times the cost a sample.
std::map<std::pair<int32_t, int32_t>, int> pair_counts(LoadedModel& m, std::optional<SpeculativeConfig> speculative,
                                                       int32_t favoured) {
  const int num_samples = std::getenv("VLLM_TEST_SANITIZED") != nullptr ? 5000 : 20000;
  EngineConfig config;
  config.scheduler.max_num_seqs = 256;
  config.speculative = speculative;
  auto engine = testing::make_engine(m, config);
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < num_samples; ++i) {
    prompts.push_back(PromptInput::from_token_ids(sampling_prompt()));
    SamplingParams p;
    p.temperature = 1.0;
    p.top_k = 3;  // at most 9 pairs, each likely enough for the test to see a skew
    p.logit_bias = {{favoured, kBias}};
    p.max_tokens = 3;  // room for one draft after the first token
    p.ignore_eos = true;
    p.seed = i;
    params.push_back(p);
  }
  Result<std::vector<RequestOutput>> out = engine->generate(prompts, params);
  EXPECT_TRUE(out.is_ok());
  std::map<std::pair<int32_t, int32_t>, int> counts;
  for (const RequestOutput& r : *out) ++counts[{r.outputs[0].token_ids[0], r.outputs[0].token_ids[1]}];
  if (speculative) {
    const SpecDecodingStats spec = *engine->stats().spec_decoding;
    EXPECT_GT(spec.num_drafts, num_samples / 4);
    EXPECT_GT(spec.acceptance_rate(), 0.2);
    EXPECT_LT(spec.acceptance_rate(), 0.8);
  }
  return counts;
}

void expect_same_distribution(const std::map<std::pair<int32_t, int32_t>, int>& without,
                              const std::map<std::pair<int32_t, int32_t>, int>& with) {
  const testing::ChiSquare fit = testing::chi_square_homogeneity(without, with);
  EXPECT_GT(fit.p_value, 0.001) << "chi-square " << fit.statistic << " over " << fit.degrees_of_freedom << " dof";
  EXPECT_GE(fit.degrees_of_freedom, 4);
}

// The n-gram proposer drafts 300 after 421 (the prompt holds "421 300").
TEST(SpecDecodeSamplingTest, SampledTokensKeepTheirDistributionWithNgramDrafts) {
  LoadedModel m = testing::load_model(testing::model_dir());
  expect_same_distribution(pair_counts(m, std::nullopt, 300), pair_counts(m, ngram(1), 300));
}

// A random model of the same vocabulary drafts its own greedy token after 421
// (tiny_mistral's is 404, which the target's top 3 hold once biased; other
// tiny models guess 421 again, which the bias would make the first token too).
TEST(SpecDecodeSamplingTest, SampledTokensKeepTheirDistributionWithADraftModel) {
  LoadedModel m = testing::load_model(testing::model_dir());
  TempDir draft_dir;
  testing::write_tiny_model(draft_dir.path(), "mistral");
  LoadedModel draft = testing::load_model(draft_dir.path());
  std::vector<int32_t> after_first = sampling_prompt();
  after_first.push_back(kLikelyFirst);
  Result<std::vector<RequestOutput>> guess =
      testing::make_engine(draft)->generate({PromptInput::from_token_ids(after_first)}, {testing::greedy(1)});
  ASSERT_TRUE(guess.is_ok());
  const int32_t drafted = (*guess)[0].outputs[0].token_ids[0];
  expect_same_distribution(pair_counts(m, std::nullopt, drafted),
                           pair_counts(m, draft_model_config(draft_dir.path(), 1), drafted));
}

}  // namespace
}  // namespace vllm
