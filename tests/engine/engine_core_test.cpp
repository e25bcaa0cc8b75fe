// The engine over a real model: batch invariance under chunked prefill and
// preemption, prefix caching, block accounting, admission errors, outputs.
#include "engine/engine_core.h"

#include <gtest/gtest.h>

#include <map>

#include "engine/engine_test_util.h"

namespace vllm {
namespace {

using testing::greedy;
using testing::LoadedModel;
using testing::mixed_workload;
using testing::random_tokens;
using testing::small_engine;

class EngineModelTest : public testing::NamedModelTest {};

TEST_P(EngineModelTest, GreedyOutputAloneEqualsOutputAmong64WithSmallChunksAndPreemption) {
  LoadedModel m = load();
  const auto work = mixed_workload(static_cast<int32_t>(m.model->config().vocab_size));
  std::vector<std::vector<int32_t>> alone;
  for (const auto& [prompt, params] : work) {
    auto engine = testing::make_engine(m);
    Result<std::vector<RequestOutput>> r = engine->generate({prompt}, {params});
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    alone.push_back((*r)[0].outputs[0].token_ids);
    ASSERT_EQ(alone.back().size(), static_cast<size_t>(params.max_tokens));
  }
  // A 32-token budget splits every long prompt; 24 blocks (384 tokens) hold a
  // few of the 64 at once, so requests are preempted and recomputed.
  auto engine = testing::make_engine(m, small_engine(m, 32, 24));
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (const auto& [p, s] : work) {
    prompts.push_back(p);
    params.push_back(s);
  }
  Result<std::vector<RequestOutput>> together = engine->generate(prompts, params);
  ASSERT_TRUE(together.is_ok()) << together.status().message();
  for (size_t i = 0; i < work.size(); ++i) EXPECT_EQ((*together)[i].outputs[0].token_ids, alone[i]) << "request " << i;
  EXPECT_GT(engine->stats().num_preemptions, 0);
  EXPECT_GT(engine->stats().prefix_cache.hits_tokens, 0);
  EXPECT_EQ(engine->stats().num_free_blocks, engine->stats().num_blocks);
}

INSTANTIATE_TEST_SUITE_P(Models, EngineModelTest,
                         ::testing::Values("stories260k", "tiny_llama", "tiny_mistral", "tiny_gemma2", "tiny_qwen2_moe",
                                           "tiny_deepseek_v3"));

// Dynamic NTK rotates a prompt that passes the context for the prompt's
// length (tiny_mistral: past 32 tokens), so the head of a longer prompt holds
// other keys and values than the same tokens alone: never shared.
TEST(DynamicRopePrefixCacheTest, PromptsRotatedForOtherLengthsShareNoBlocks) {
  testing::TempDir dir;
  testing::write_tiny_model(dir.path(), "mistral");
  LoadedModel m = testing::load_model(dir.path());
  std::mt19937 rng(3);
  const std::vector<int32_t> longer = random_tokens(rng, 48, 512);
  const std::vector<int32_t> shorter(longer.begin(), longer.begin() + 40);
  auto run = [](LLMEngine& engine, const std::vector<int32_t>& prompt) {
    Result<std::vector<RequestOutput>> r = engine.generate({PromptInput::from_token_ids(prompt)}, {greedy(4)});
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return (*r)[0].outputs[0];
  };
  auto fresh = testing::make_engine(m);
  const CompletionOutput alone = run(*fresh, shorter);

  auto engine = testing::make_engine(m);
  run(*engine, longer);
  const CompletionOutput after_longer = run(*engine, shorter);
  EXPECT_EQ(engine->stats().prefix_cache.hits_tokens, 0);
  EXPECT_EQ(after_longer.token_ids, alone.token_ids);
  EXPECT_EQ(after_longer.cumulative_logprob, alone.cumulative_logprob);
  // The same prompt again: its two full blocks are reused.
  const CompletionOutput again = run(*engine, shorter);
  EXPECT_EQ(engine->stats().prefix_cache.hits_tokens, 32);
  EXPECT_EQ(again.cumulative_logprob, alone.cumulative_logprob);
}

class EngineCoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new LoadedModel(testing::load_model(testing::model_dir())); }
  static void TearDownTestSuite() { delete model_; }
  static LoadedModel* model_;
};

LoadedModel* EngineCoreTest::model_ = nullptr;

TEST_F(EngineCoreTest, SharedPrefixIsComputedOnceAndHitByTheOthers) {
  std::mt19937 rng(5);
  const std::vector<int32_t> prefix = random_tokens(rng, 200, 512);
  std::vector<PromptInput> prompts;
  for (int i = 0; i < 32; ++i) {
    std::vector<int32_t> p = prefix;
    const std::vector<int32_t> suffix = random_tokens(rng, 10, 512);
    p.insert(p.end(), suffix.begin(), suffix.end());
    prompts.push_back(PromptInput::from_token_ids(p));
  }
  const SamplingParams params = greedy(8);

  auto cached = testing::make_engine(*model_);
  Result<std::vector<RequestOutput>> with_cache = cached->generate(prompts, {params});
  ASSERT_TRUE(with_cache.is_ok());
  const EngineCoreStats stats = cached->stats();
  // 200 tokens = 12 full blocks (192 tokens) shared; the 13th mixes prefix and suffix.
  EXPECT_EQ(stats.prefix_cache.queries_tokens, 32 * 210);
  EXPECT_EQ(stats.prefix_cache.hits_tokens, 31 * 192);
  // Every prompt token not hit is computed once, plus 7 decode steps each.
  EXPECT_EQ(stats.num_scheduled_tokens, 32 * 210 - 31 * 192 + 32 * 7);

  EngineConfig off;
  off.cache.enable_prefix_caching = false;
  auto uncached = testing::make_engine(*model_, off);
  Result<std::vector<RequestOutput>> without_cache = uncached->generate(prompts, {params});
  ASSERT_TRUE(without_cache.is_ok());
  EXPECT_EQ(uncached->stats().prefix_cache.hits_tokens, 0);
  EXPECT_EQ(uncached->stats().num_scheduled_tokens, 32 * 210 + 32 * 7);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ((*with_cache)[i].outputs[0].token_ids, (*without_cache)[i].outputs[0].token_ids) << i;
  }

  // The very same prompt again, after its request finished: all 13 full blocks are reused.
  const int64_t hits_before = cached->stats().prefix_cache.hits_tokens;
  Result<std::vector<RequestOutput>> again = cached->generate({prompts[0]}, {params});
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(cached->stats().prefix_cache.hits_tokens - hits_before, 13 * 16);
  EXPECT_EQ((*again)[0].outputs[0].token_ids, (*with_cache)[0].outputs[0].token_ids);
}

TEST_F(EngineCoreTest, CacheSaltKeepsTenantsApart) {
  auto engine = testing::make_engine(*model_);
  std::mt19937 rng(9);
  const PromptInput prompt = PromptInput::from_token_ids(random_tokens(rng, 40, 512));
  int n = 0;
  for (const char* salt : {"tenant-a", "tenant-b", "tenant-a"}) {
    PromptInput salted = prompt;
    salted.cache_salt = salt;
    Result<ProcessedRequest> r = engine->process_inputs(salted, greedy(2));
    ASSERT_TRUE(r.is_ok());
    ASSERT_TRUE(engine->add_request(std::to_string(n++), std::move(r).value()).is_ok());
    while (engine->has_unfinished_requests()) engine->step();
  }
  EXPECT_EQ(engine->stats().prefix_cache.hits_tokens, 32);  // only the second tenant-a request hit
}

// Random arrivals, lengths, sampling, aborts at random steps, and a pool
// small enough to preempt: every request either completes exactly as asked or
// was aborted, and in the end every block is free with no references left.
TEST_F(EngineCoreTest, NoBlockLeaksUnderRandomWorkloads) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    EngineConfig config = small_engine(*model_, 8 + static_cast<int32_t>(rng() % 64), 30);
    config.scheduler.max_num_seqs = 1 + static_cast<int32_t>(rng() % 16);
    // Seed 3 with speculative decoding: drafts take slots, rejected ones are rolled back.
    if (seed == 3) {
      SpeculativeConfig ngram;
      ngram.num_speculative_tokens = 4;
      ngram.prompt_lookup_min = 1;
      ngram.prompt_lookup_max = 2;
      ngram.disable_by_batch_size = 0;
      config.speculative = ngram;
    }
    auto engine = testing::make_engine(*model_, config);
    const std::vector<int32_t> shared = random_tokens(rng, 48, 512);
    std::map<std::string, SamplingParams> live;
    std::map<std::string, RequestOutput> finished;
    int next = 0, aborted = 0;
    for (int step = 0; step < 1500 || !live.empty(); ++step) {
      if (step < 1500 && rng() % 3 == 0) {
        std::vector<int32_t> prompt = random_tokens(rng, 1 + static_cast<int32_t>(rng() % 150), 512);
        if (rng() % 2 == 0) prompt.insert(prompt.begin(), shared.begin(), shared.begin() + rng() % 48);
        SamplingParams p;
        p.max_tokens = 1 + static_cast<int64_t>(rng() % 60);
        p.temperature = rng() % 2 == 0 ? 0.0 : 1.0;
        p.seed = rng();
        p.ignore_eos = rng() % 2 == 0;
        const std::string id = std::to_string(next++);
        ASSERT_TRUE(engine->add_request(id, PromptInput::from_token_ids(prompt), p).is_ok());
        live.emplace(id, p);
      }
      if (!live.empty() && rng() % 20 == 0) {
        auto victim = std::next(live.begin(), static_cast<long>(rng() % live.size()));
        std::optional<RequestOutput> out = engine->abort_request(victim->first);
        ASSERT_TRUE(out.has_value());
        EXPECT_EQ(out->outputs[0].finish_reason, FinishReason::kAbort);
        live.erase(victim);
        ++aborted;
      }
      for (RequestOutput& out : engine->step()) {
        if (!out.finished) continue;
        const SamplingParams& p = live.at(out.request_id);
        const CompletionOutput& c = out.outputs[0];
        if (c.finish_reason == FinishReason::kLength) {
          EXPECT_EQ(c.token_ids.size(), static_cast<size_t>(p.max_tokens));
        } else {
          EXPECT_EQ(c.finish_reason, FinishReason::kStop);
          EXPECT_FALSE(p.ignore_eos);
          EXPECT_EQ(c.token_ids.back(), 2);
        }
        live.erase(out.request_id);
        finished.emplace(out.request_id, std::move(out));
      }
    }
    EXPECT_FALSE(engine->has_unfinished_requests());
    EXPECT_EQ(static_cast<int>(finished.size()) + aborted, next);
    EXPECT_GT(engine->stats().num_preemptions, 0) << "seed " << seed;
    if (config.speculative) {
      EXPECT_GT(engine->stats().spec_decoding->num_accepted_tokens, 0);
    }
    const BlockPool& pool = engine->core().kv_cache().pool();
    EXPECT_EQ(pool.num_free_blocks(), pool.num_blocks()) << "seed " << seed;
    // The runner forgets at the next step the requests that finished or were aborted.
    engine->step();
    EXPECT_EQ(engine->core().input_batch().num_requests(), 0u) << "seed " << seed;
    for (BlockId b = 0; b < pool.num_blocks(); ++b) ASSERT_EQ(pool.ref_count(b), 0) << "block " << b;
  }
}

TEST_F(EngineCoreTest, RefusesRequestsThatCanNeverRun) {
  auto engine = testing::make_engine(*model_, small_engine(*model_, 2048, 10));  // 160 tokens of KV
  const auto error = [&](std::vector<int32_t> prompt, int64_t max_tokens) {
    return engine->add_request("r", PromptInput::from_token_ids(std::move(prompt)), greedy(max_tokens)).message();
  };
  EXPECT_EQ(error({}, 4), "the prompt is empty");
  EXPECT_EQ(error({1, 600}, 4), "prompt: token id 600 is outside the vocabulary [0, 512)");
  const auto sampling_error = [&](auto set) {
    SamplingParams p = greedy(4);
    set(p);
    return engine->add_request("r", PromptInput::from_token_ids({1, 5}), p).message();
  };
  EXPECT_EQ(sampling_error([](SamplingParams& p) {
              p.stop_token_ids = {2, 512};
            }),
            "stop_token_ids: token id 512 is outside the vocabulary [0, 512)");
  EXPECT_EQ(sampling_error([](SamplingParams& p) {
              p.logit_bias = {{-1, 1.0}};
            }),
            "logit_bias: token id -1 is outside the vocabulary [0, 512)");
  EXPECT_EQ(sampling_error([](SamplingParams& p) { p.logprobs = 21; }),
            "logprobs must be at most 20 (--max-logprobs), got 21.");
  EXPECT_EQ(sampling_error([](SamplingParams& p) { p.use_beam_search = true, p.n = 2; }),
            "beam search cannot stream: its beams are only known at the end.");
  EXPECT_EQ(error(std::vector<int32_t>(512, 5), 4),
            "the maximum context length is 512 tokens, the prompt has 512 tokens");
  EXPECT_EQ(error(std::vector<int32_t>(500, 5), 13),
            "the prompt (500 tokens) plus max_tokens (13) exceeds the maximum context length of 512 tokens");
  EXPECT_EQ(error(std::vector<int32_t>(150, 5), 12),
            "the prompt (150 tokens) plus max_tokens (12) needs 11 KV blocks, more than the whole KV cache holds "
            "(10 blocks of 16 tokens)");
  EXPECT_EQ(error({1, 5}, 0), "max_tokens must be at least 1, got 0.");
  EXPECT_EQ(error({1, 5}, INT64_MAX),
            "the prompt (2 tokens) plus max_tokens (9223372036854775807) exceeds the maximum context length of 512 "
            "tokens");
  // Exactly the whole pool is fine: the last generated token needs no slot.
  EXPECT_TRUE(
      engine->add_request("fits", PromptInput::from_token_ids(std::vector<int32_t>(150, 5)), greedy(11)).is_ok());
  EXPECT_FALSE(engine->add_request("fits", PromptInput::from_token_ids(std::vector<int32_t>{1, 5}), greedy(1))
                   .is_ok());  // id in use
  while (engine->has_unfinished_requests()) engine->step();
}

TEST_F(EngineCoreTest, RefusesConfigurationsThatCannotWork) {
  EngineConfig too_long;
  too_long.scheduler.max_model_len = 513;
  EXPECT_EQ(EngineCore::create(*model_->model, too_long).status().message(),
            "max_model_len 513 is larger than the model's context length of 512 tokens");
  EngineConfig tiny_pool;
  tiny_pool.cache.kv_cache_memory_bytes = 100;
  EXPECT_EQ(EngineCore::create(*model_->model, tiny_pool).status().message(),
            "the KV cache size (100 bytes) is smaller than one block (20480 bytes for 16 tokens)");
  EngineConfig no_chunking;
  no_chunking.scheduler.enable_chunked_prefill = false;
  no_chunking.scheduler.max_num_batched_tokens = 256;
  EXPECT_FALSE(EngineCore::create(*model_->model, no_chunking).is_ok());
}

// "auto" is the checkpoint's dtype; a BF16 cache holds twice the blocks, an FP8 one four times.
TEST_F(EngineCoreTest, KVCacheDtypeFollowsTheModelAndSizesTheBlocks) {
  ModelConfig model = model_->model->config();
  EngineConfig config;
  config.cache.kv_cache_memory_bytes = 20480 * 10;  // ten F32 blocks of stories260k
  Result<ResolvedEngineConfig> f32 = resolve_engine_config(config, model, model_->model->kv_cache_spec());
  ASSERT_TRUE(f32.is_ok());
  EXPECT_EQ(f32->kv_shape.dtype, DType::kF32);
  EXPECT_EQ(f32->num_blocks, 10);
  model.torch_dtype = "bfloat16";
  Result<ResolvedEngineConfig> bf16 = resolve_engine_config(config, model, model_->model->kv_cache_spec());
  ASSERT_TRUE(bf16.is_ok());
  EXPECT_EQ(bf16->kv_shape.dtype, DType::kBF16);
  EXPECT_EQ(bf16->kv_shape.bytes_per_block(), 10240u);
  EXPECT_EQ(bf16->num_blocks, 20);
  config.cache.kv_cache_dtype = DType::kF32;  // --kv-cache-dtype float32 wins
  EXPECT_EQ(resolve_engine_config(config, model, model_->model->kv_cache_spec())->kv_shape.dtype, DType::kF32);
  config.cache.kv_cache_dtype = DType::kF8E4M3;  // --kv-cache-dtype fp8: a byte an element
  Result<ResolvedEngineConfig> fp8 = resolve_engine_config(config, model, model_->model->kv_cache_spec());
  ASSERT_TRUE(fp8.is_ok());
  EXPECT_EQ(fp8->kv_shape.bytes_per_block(), 5120u);
  EXPECT_EQ(fp8->num_blocks, 40);
}

TEST_F(EngineCoreTest, StreamedDeltasConcatenateToTheFinalOutput) {
  auto engine = testing::make_engine(*model_);
  SamplingParams delta = greedy(60, /*ignore_eos=*/false);
  delta.output_kind = OutputKind::kDelta;
  SamplingParams cumulative = greedy(60, false);
  cumulative.output_kind = OutputKind::kCumulative;
  ASSERT_TRUE(engine->add_request("delta", PromptInput::from_text("Once upon a time"), delta).is_ok());
  ASSERT_TRUE(engine->add_request("cumulative", PromptInput::from_text("Once upon a time"), cumulative).is_ok());
  std::string text;
  std::vector<int32_t> ids;
  RequestOutput last;
  int delta_outputs = 0;
  while (engine->has_unfinished_requests()) {
    for (RequestOutput& out : engine->step()) {
      if (out.request_id == "delta") {
        EXPECT_EQ(out.prompt_token_ids.empty(), delta_outputs++ > 0);  // the prompt comes with the first delta only
        text += out.outputs[0].text;
        ids.insert(ids.end(), out.outputs[0].token_ids.begin(), out.outputs[0].token_ids.end());
      } else {
        last = std::move(out);
      }
    }
  }
  ASSERT_TRUE(last.finished);
  EXPECT_EQ(text, last.outputs[0].text);
  EXPECT_EQ(ids, last.outputs[0].token_ids);
  EXPECT_EQ(delta_outputs, static_cast<int>(ids.size()));
  EXPECT_EQ(last.outputs[0].text.rfind(", there was", 0), 0u) << last.outputs[0].text;
}

}  // namespace
}  // namespace vllm
