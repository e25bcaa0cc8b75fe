// Pipeline parallelism's batch queue, in one process: a model that says it
// has stages computes each batch's logits in forward() and hands them out,
// oldest first, in compute_logits(), as a pipeline's last stage would send
// them back.  The engine then keeps a step in flight per stage (micro-
// batches of the requests not in flight), and must give the tokens of the
// engine without stages: preemption, aborts in flight and all.
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <set>

#include "engine/engine_test_util.h"

namespace vllm {
namespace {

using testing::greedy;
using testing::LoadedModel;

class StagedModel final : public Model {
 public:
  StagedModel(Model& inner, int stages) : inner_(inner), stages_(stages) {}

  const ModelConfig& config() const override { return inner_.config(); }
  std::vector<LayerKVSpec> kv_cache_spec() const override { return inner_.kv_cache_spec(); }
  ModelCost cost() const override { return inner_.cost(); }
  int64_t prompt_cache_key(int32_t n) const override { return inner_.prompt_cache_key(n); }
  int pipeline_stages() const override { return stages_; }

  std::span<const float> forward(const ForwardBatch& batch, const KVCacheView& kv, ThreadPool& pool) override {
    std::span<const float> hidden = inner_.forward(batch, kv, pool);
    std::vector<float>& logits = in_flight_.emplace_back(static_cast<size_t>(batch.num_logits * config().vocab_size));
    inner_.compute_logits(hidden.data(), batch.num_logits, logits.data(), pool, nullptr);
    most_in_flight_ = std::max(most_in_flight_, in_flight_.size());
    return hidden;
  }

  void compute_logits(const float*, int64_t num_rows, float* logits, ThreadPool&, const int32_t*) const override {
    EXPECT_FALSE(in_flight_.empty());
    EXPECT_EQ(in_flight_.front().size(), static_cast<size_t>(num_rows * config().vocab_size));
    std::copy(in_flight_.front().begin(), in_flight_.front().end(), logits);
    in_flight_.pop_front();
  }

  size_t most_in_flight() const { return most_in_flight_; }

 private:
  Model& inner_;
  int stages_;
  mutable std::deque<std::vector<float>> in_flight_;
  size_t most_in_flight_ = 0;
};

class PipelinedEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new LoadedModel(testing::load_model(testing::model_dir())); }
  static void TearDownTestSuite() { delete model_; }
  static LoadedModel* model_;
};

LoadedModel* PipelinedEngineTest::model_ = nullptr;

// "r<i>" (appended: GCC 12 warns falsely of "r" + std::to_string(i)).
std::string request_id(size_t i) {
  std::string id = "r";
  id += std::to_string(i);
  return id;
}

std::unique_ptr<LLMEngine> staged_engine(Model& model, const Tokenizer& tokenizer, const EngineConfig& config) {
  Result<std::unique_ptr<LLMEngine>> engine = LLMEngine::create(model, tokenizer, config);
  EXPECT_TRUE(engine.is_ok()) << engine.status().message();
  return std::move(engine).value();
}

TEST_F(PipelinedEngineTest, MicroBatchesGiveTheTokensOfOneBatchEvenUnderPreemption) {
  std::mt19937 rng(11);
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < 24; ++i) {
    prompts.push_back(PromptInput::from_token_ids(
        testing::random_tokens(rng, 5 + i % 17, static_cast<int32_t>(model_->model->config().vocab_size))));
    SamplingParams p = greedy(20 + i % 30);
    if (i % 3 == 0) {
      p.temperature = 0.8;
      p.seed = i;
    }
    if (i % 5 == 0) p.logprobs = 1;
    params.push_back(p);
  }
  // A small pool: requests are preempted and computed again.
  const EngineConfig config = testing::small_engine(*model_, 64, 24);
  Result<std::vector<RequestOutput>> want = testing::make_engine(*model_, config)->generate(prompts, params);
  ASSERT_TRUE(want.is_ok());
  for (int stages : {2, 3}) {
    StagedModel staged(*model_->model, stages);
    std::unique_ptr<LLMEngine> engine = staged_engine(staged, *model_->tokenizer, config);
    Result<std::vector<RequestOutput>> got = engine->generate(prompts, params);
    ASSERT_TRUE(got.is_ok());
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ((*got)[i].outputs[0].token_ids, (*want)[i].outputs[0].token_ids) << stages << " stages, " << i;
      EXPECT_EQ((*got)[i].outputs[0].cumulative_logprob, (*want)[i].outputs[0].cumulative_logprob) << i;
    }
    EXPECT_EQ(staged.most_in_flight(), static_cast<size_t>(stages)) << "a step in flight per stage";
    EXPECT_GT(engine->stats().num_preemptions, 0);
    EXPECT_EQ(engine->stats().num_free_blocks, engine->stats().num_blocks);
  }
}

TEST_F(PipelinedEngineTest, AnAbortInFlightFreesItsBlocksOnceItsStepIsBack) {
  StagedModel staged(*model_->model, 2);
  std::unique_ptr<LLMEngine> engine = staged_engine(staged, *model_->tokenizer, testing::small_engine(*model_, 64, 64));
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        engine->add_request(request_id(static_cast<size_t>(i)), PromptInput::from_text("Once upon a time"), greedy(200))
            .is_ok());
  }
  std::set<std::string> aborted;
  int steps = 0;
  while (engine->has_unfinished_requests()) {
    engine->step();
    // Abort one request every few steps, in flight or not.
    if (++steps % 7 == 0 && aborted.size() < 6) {
      const std::string id = request_id(aborted.size());
      std::optional<RequestOutput> out = engine->abort_request(id);
      ASSERT_TRUE(out.has_value()) << id;
      EXPECT_EQ(out->outputs[0].finish_reason, FinishReason::kAbort);
      aborted.insert(id);
    }
    ASSERT_LT(steps, 10000);
  }
  EXPECT_EQ(aborted.size(), 6u);
  EXPECT_EQ(engine->stats().num_free_blocks, engine->stats().num_blocks);
  EXPECT_EQ(engine->stats().num_running + engine->stats().num_waiting, 0);
}

}  // namespace
}  // namespace vllm
