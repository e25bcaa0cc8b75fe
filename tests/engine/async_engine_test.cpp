// The engine thread with concurrent callers: each gets its own stream, the
// same tokens as the offline API, and aborts end streams and free blocks.
#include "engine/async_engine.h"

#include <gtest/gtest.h>

#include <thread>

#include "engine/engine_test_util.h"

namespace vllm {
namespace {

using testing::greedy;
using testing::LoadedModel;

class AsyncEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = new LoadedModel(testing::load_model(testing::model_dir())); }
  static void TearDownTestSuite() { delete model_; }
  static LoadedModel* model_;
};

LoadedModel* AsyncEngineTest::model_ = nullptr;

std::string prompt_text(int i) { return "Once upon a time " + std::string(static_cast<size_t>(i % 5), 'a'); }

TEST_F(AsyncEngineTest, ConcurrentCallersGetTheOfflineResultsOnTheirOwnStreams) {
  constexpr int kThreads = 8, kPerThread = 4;
  std::vector<PromptInput> prompts;
  for (int i = 0; i < kThreads * kPerThread; ++i) prompts.push_back(PromptInput::from_text(prompt_text(i)));
  const SamplingParams params = greedy(24, /*ignore_eos=*/false);
  Result<std::vector<RequestOutput>> expected = testing::make_engine(*model_)->generate(prompts, {params});
  ASSERT_TRUE(expected.is_ok());

  AsyncEngine engine(testing::make_engine(*model_));
  std::vector<std::string> texts(prompts.size());
  std::vector<std::vector<int32_t>> ids(prompts.size());
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      std::vector<std::pair<size_t, std::shared_ptr<RequestStream>>> streams;
      for (int k = 0; k < kPerThread; ++k) {
        const size_t i = static_cast<size_t>(t * kPerThread + k);
        SamplingParams p = params;
        p.output_kind = OutputKind::kDelta;
        Result<std::shared_ptr<RequestStream>> s = engine.add_request("req-" + std::to_string(i), prompts[i], p);
        ASSERT_TRUE(s.is_ok());
        streams.emplace_back(i, *s);
      }
      for (auto& [i, stream] : streams) {
        for (RequestOutput out; stream->next(out);) {
          texts[i] += out.outputs[0].text;
          ids[i].insert(ids[i].end(), out.outputs[0].token_ids.begin(), out.outputs[0].token_ids.end());
        }
      }
    });
  }
  for (std::thread& c : callers) c.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(ids[i], (*expected)[i].outputs[0].token_ids) << i;
    EXPECT_EQ(texts[i], (*expected)[i].outputs[0].text) << i;
  }
}

TEST_F(AsyncEngineTest, AbortEndsTheStreamAndFreesItsBlocks) {
  AsyncEngine engine(testing::make_engine(*model_));
  SamplingParams p = greedy(400);
  p.output_kind = OutputKind::kDelta;
  Result<std::shared_ptr<RequestStream>> stream = engine.add_request("long", PromptInput::from_text("Once"), p);
  ASSERT_TRUE(stream.is_ok());
  EXPECT_FALSE(engine.add_request("long", PromptInput::from_text("Again"), p).is_ok());  // id in use
  RequestOutput out;
  ASSERT_TRUE((*stream)->next(out));
  engine.abort("long");
  std::optional<FinishReason> reason;
  size_t tokens = out.outputs[0].token_ids.size();
  while ((*stream)->next(out)) {
    reason = out.outputs[0].finish_reason;
    tokens += out.outputs[0].token_ids.size();
  }
  EXPECT_EQ(reason, FinishReason::kAbort);
  EXPECT_LT(tokens, 400u);
  // The engine thread publishes its counters after each loop; wait for the one after the abort.
  for (int i = 0; i < 1000 && engine.stats().num_free_blocks != engine.stats().num_blocks; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(engine.stats().num_free_blocks, engine.stats().num_blocks);
}

TEST_F(AsyncEngineTest, InvalidRequestIsRefusedOnTheCallersThread) {
  AsyncEngine engine(testing::make_engine(*model_));
  Result<std::shared_ptr<RequestStream>> s =
      engine.add_request("bad", PromptInput::from_token_ids(std::vector<int32_t>{}), greedy(4));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().message(), "the prompt is empty");
}

TEST_F(AsyncEngineTest, ShutdownEndsUnfinishedStreamsWithAbort) {
  std::shared_ptr<RequestStream> stream;
  {
    AsyncEngine engine(testing::make_engine(*model_));
    SamplingParams p = greedy(400);
    p.output_kind = OutputKind::kFinalOnly;
    stream = std::move(engine.add_request("r", PromptInput::from_text("Once"), p)).value();
  }
  RequestOutput out;
  ASSERT_TRUE(stream->next(out));
  EXPECT_TRUE(out.finished);
  EXPECT_EQ(out.outputs[0].finish_reason, FinishReason::kAbort);
  EXPECT_FALSE(stream->next(out));
}

// --max-waiting-requests: a burst beyond the queue's bound is refused at
// once (ResourceExhausted, the server's 503) and what was accepted runs to the end.
TEST_F(AsyncEngineTest, ABurstBeyondMaxWaitingRequestsIsRefusedAndTheRestRuns) {
  constexpr int kBurst = 40, kMaxWaiting = 5;
  EngineConfig one_at_a_time;
  one_at_a_time.scheduler.max_num_seqs = 1;
  AsyncEngine engine(testing::make_engine(*model_, one_at_a_time), kMaxWaiting);
  SamplingParams params = greedy(400, /*ignore_eos=*/true);  // each keeps the one sequence slot a while
  std::vector<std::shared_ptr<RequestStream>> accepted;
  int refused = 0;
  for (int i = 0; i < kBurst; ++i) {
    Result<std::shared_ptr<RequestStream>> s =
        engine.add_request("burst-" + std::to_string(i), PromptInput::from_text("Once upon a time"), params);
    if (s.is_ok()) {
      accepted.push_back(*s);
    } else {
      EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
      EXPECT_NE(s.status().message().find("--max-waiting-requests 5"), std::string::npos) << s.status().message();
      ++refused;
    }
  }
  EXPECT_GE(accepted.size(), static_cast<size_t>(kMaxWaiting));
  EXPECT_GE(refused, kBurst / 2);  // 40 adds take microseconds, a 400-token request much longer
  for (const auto& stream : accepted) {
    RequestOutput last;
    for (RequestOutput out; stream->next(out);) last = out;
    ASSERT_TRUE(last.finished);
    EXPECT_EQ(last.outputs[0].finish_reason, FinishReason::kLength);
  }
}

}  // namespace
}  // namespace vllm
