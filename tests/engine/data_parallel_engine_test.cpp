// Data parallelism inside one process: the replicas' leaders talk through
// in-process mailboxes instead of MPI, so that the front door, the replica
// loops and their threads run under the sanitizers (ThreadSanitizer
// included) and without mpirun.  The messages' every field survives the
// trip.
#include "engine/data_parallel/data_parallel_engine.h"

#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "engine/data_parallel/replica_messages.h"
#include "engine/data_parallel/replica_server.h"
#include "engine/engine_test_util.h"

namespace vllm {
namespace {

using testing::greedy;
using testing::LoadedModel;

// Ranks of one process: what one posts lands in the other's mailbox.
class Mailboxes {
 public:
  explicit Mailboxes(int size) : boxes_(static_cast<size_t>(size)) {}

  class Rank final : public Communicator {
   public:
    Rank(Mailboxes& boxes, int rank) : boxes_(boxes), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(boxes_.boxes_.size()); }
    void post(std::string bytes, int to) override {
      std::lock_guard lock(boxes_.mutex_);
      boxes_.boxes_[static_cast<size_t>(to)].emplace_back(rank_, std::move(bytes));
    }
    bool poll(std::string& bytes, int& from) override {
      std::lock_guard lock(boxes_.mutex_);
      auto& box = boxes_.boxes_[static_cast<size_t>(rank_)];
      if (box.empty()) return false;
      from = box.front().first;
      bytes = std::move(box.front().second);
      box.pop_front();
      return true;
    }
    void wait_posted() override {}
    // Not used by data parallelism's leaders.
    void all_reduce_sum(float*, int64_t) override { ADD_FAILURE(); }
    void all_gather(const float*, int64_t, float*) override { ADD_FAILURE(); }
    void all_reduce_sum_idle(int64_t*, int64_t) override { ADD_FAILURE(); }
    void all_to_all(const int64_t*, int64_t, int64_t*) override { ADD_FAILURE(); }
    void all_to_all(const float*, const int64_t*, float*, const int64_t*) override { ADD_FAILURE(); }
    void broadcast(void*, int64_t, int) override { ADD_FAILURE(); }
    void broadcast_idle(void*, int64_t, int) override { ADD_FAILURE(); }
    void post_broadcast(const void*, int64_t) override { ADD_FAILURE(); }
    void send(const float*, int64_t, int) override { ADD_FAILURE(); }
    void receive(float*, int64_t, int) override { ADD_FAILURE(); }
    CommunicationStats stats() const override { return {}; }

   private:
    Mailboxes& boxes_;
    int rank_;
  };

 private:
  std::mutex mutex_;
  std::vector<std::deque<std::pair<int, std::string>>> boxes_;
};

// Rank 0's DataParallelEngine over `size` replicas, each with its own
// model and engine; replicas 1.. run serve_replica on their own threads.
class Replicas {
 public:
  explicit Replicas(int size) : mailboxes_(size) {
    for (int r = 0; r < size; ++r) {
      models_.push_back(std::make_unique<LoadedModel>(testing::load_model(testing::model_dir())));
      ranks_.push_back(std::make_unique<Mailboxes::Rank>(mailboxes_, r));
    }
    for (int r = 1; r < size; ++r) {
      threads_.emplace_back([this, r] {
        AsyncEngine engine(testing::make_engine(*models_[static_cast<size_t>(r)]));
        EXPECT_TRUE(serve_replica(engine, *ranks_[static_cast<size_t>(r)]).is_ok());
      });
    }
    front_ = std::make_unique<DataParallelEngine>(std::make_unique<AsyncEngine>(testing::make_engine(*models_[0])),
                                                  *ranks_[0]);
  }
  ~Replicas() {
    front_->shutdown();
    for (std::thread& t : threads_) t.join();
  }

  DataParallelEngine& front() { return *front_; }
  LoadedModel& model() { return *models_[0]; }

 private:
  Mailboxes mailboxes_;
  std::vector<std::unique_ptr<LoadedModel>> models_;
  std::vector<std::unique_ptr<Mailboxes::Rank>> ranks_;
  std::vector<std::thread> threads_;
  std::unique_ptr<DataParallelEngine> front_;
};

TEST(DataParallelEngineTest, ConcurrentCallersGetTheOfflineResultsFromEveryReplica) {
  Replicas replicas(3);
  constexpr int kThreads = 6, kPerThread = 6;
  std::vector<PromptInput> prompts;
  std::vector<SamplingParams> params;
  for (int i = 0; i < kThreads * kPerThread; ++i) {
    prompts.push_back(PromptInput::from_text("Once upon a time " + std::string(static_cast<size_t>(i % 7), 'a')));
    SamplingParams p = greedy(8 + i % 13, /*ignore_eos=*/false);
    if (i % 3 == 0) {  // seeded sampling: the same tokens on any replica
      p.temperature = 0.9;
      p.seed = i;
      p.n = 2;
    }
    if (i % 4 == 0) p.logprobs = 2;
    params.push_back(p);
  }
  Result<std::vector<RequestOutput>> expected = testing::make_engine(replicas.model())->generate(prompts, params);
  ASSERT_TRUE(expected.is_ok());

  std::vector<RequestOutput> got(prompts.size());
  std::vector<int> engine_of(prompts.size(), -1);
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      std::vector<std::pair<size_t, std::shared_ptr<RequestStream>>> streams;
      for (int k = 0; k < kPerThread; ++k) {
        const size_t i = static_cast<size_t>(t * kPerThread + k);
        SamplingParams p = params[i];
        p.output_kind = OutputKind::kFinalOnly;
        Result<std::shared_ptr<RequestStream>> s =
            replicas.front().add_request("req-" + std::to_string(i), prompts[i], p);
        ASSERT_TRUE(s.is_ok()) << s.status().message();
        engine_of[i] = (*s)->engine_index();
        streams.emplace_back(i, *s);
      }
      for (auto& [i, stream] : streams) {
        while (stream->next(got[i])) {
        }
      }
    });
  }
  for (std::thread& c : callers) c.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(got[i].outputs.size(), (*expected)[i].outputs.size()) << i;
    for (size_t s = 0; s < got[i].outputs.size(); ++s) {
      EXPECT_EQ(got[i].outputs[s].token_ids, (*expected)[i].outputs[s].token_ids) << i;
      EXPECT_EQ(got[i].outputs[s].text, (*expected)[i].outputs[s].text) << i;
      EXPECT_EQ(got[i].outputs[s].cumulative_logprob, (*expected)[i].outputs[s].cumulative_logprob) << i;
      EXPECT_EQ(got[i].outputs[s].logprobs.has_value(), (*expected)[i].outputs[s].logprobs.has_value()) << i;
    }
  }
  EXPECT_EQ(std::set<int>(engine_of.begin(), engine_of.end()), (std::set<int>{0, 1, 2}));
}

TEST(DataParallelEngineTest, AbortsReachTheReplicaThatRunsTheRequest) {
  Replicas replicas(2);
  SamplingParams p = greedy(400);
  p.output_kind = OutputKind::kDelta;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 4; ++i) {
    Result<std::shared_ptr<RequestStream>> s =
        replicas.front().add_request("long-" + std::to_string(i), PromptInput::from_text("Once"), p);
    ASSERT_TRUE(s.is_ok());
    streams.push_back(*s);
  }
  EXPECT_FALSE(replicas.front().add_request("long-1", PromptInput::from_text("Again"), p).is_ok());  // id in use
  std::set<int> engines;
  // Aborted right away: a replica's outputs reach the front in bursts, so a
  // request could have run its 400 tokens by the time its first output is
  // read (seen once in ten runs).  A replica takes its messages in order,
  // so the abort still follows the request it names.
  for (int i = 0; i < 4; ++i) {
    engines.insert(streams[static_cast<size_t>(i)]->engine_index());
    replicas.front().abort("long-" + std::to_string(i));
  }
  for (int i = 0; i < 4; ++i) {
    RequestOutput out;
    std::optional<FinishReason> reason;
    while (streams[static_cast<size_t>(i)]->next(out)) reason = out.outputs[0].finish_reason;
    EXPECT_EQ(reason, FinishReason::kAbort) << i;
  }
  EXPECT_EQ(engines, (std::set<int>{0, 1}));
  // Every replica's blocks and requests come back (a replica reports its
  // load once it changes: the aborts of requests still waiting free no
  // blocks, so the wait is for the counts too).
  const auto idle = [](const EngineCoreStats& s) {
    return s.num_free_blocks == s.num_blocks && s.num_running + s.num_waiting == 0;
  };
  for (int wait = 0; wait < 200; ++wait) {
    const std::vector<EngineCoreStats> stats = replicas.front().engine_stats();
    if (idle(stats[0]) && idle(stats[1])) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const EngineCoreStats& s : replicas.front().engine_stats()) {
    EXPECT_EQ(s.num_free_blocks, s.num_blocks);
    EXPECT_EQ(s.num_running + s.num_waiting, 0);
  }
}

TEST(DataParallelEngineTest, ShutdownEndsTheRequestsOfEveryReplica) {
  Replicas replicas(2);
  SamplingParams p = greedy(400);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 4; ++i) {
    streams.push_back(*replicas.front().add_request("r" + std::to_string(i), PromptInput::from_text("Once upon"), p));
  }
  replicas.front().shutdown();
  for (auto& stream : streams) {
    RequestOutput out;
    std::optional<FinishReason> reason;
    while (stream->next(out)) reason = out.outputs[0].finish_reason;
    EXPECT_EQ(reason, FinishReason::kAbort);
  }
  EXPECT_EQ(replicas.front().add_request("late", PromptInput::from_text("x"), p).status().code(),
            StatusCode::kUnavailable);
}

TEST(ReplicaMessagesTest, EveryFieldOfARequestSurvivesTheTrip) {
  data_parallel::AddRequest add;
  add.request_id = "cmpl-1";
  add.prompt = PromptInput::from_text("Hello");
  add.prompt.token_ids = std::vector<int32_t>{1, 2, 3};
  add.prompt.cache_salt = "salt";
  add.prompt.lora_name = "alpha";
  add.prompt.add_special_tokens = false;
  add.prompt.truncate_prompt_tokens = 7;
  SamplingParams& p = add.params;
  p.n = 3;
  p.temperature = 0.25;
  p.top_p = 0.5;
  p.top_k = 9;
  p.min_p = 0.125;
  p.seed = 1234567890123;
  p.presence_penalty = 0.5;
  p.frequency_penalty = -0.5;
  p.repetition_penalty = 1.5;
  p.logit_bias = {{5, 2.5}, {9, -100}};
  p.allowed_token_ids = std::vector<int32_t>{4, 5};
  p.bad_words = {"no", "never"};
  p.bad_words_token_ids = {{8, 9}, {10}};
  p.min_tokens = 2;
  p.max_tokens = 99;
  p.max_tokens_from_context = true;
  p.stop = {"\n", "end"};
  p.stop_token_ids = {2, 3};
  p.include_stop_str_in_output = true;
  p.ignore_eos = true;
  p.logprobs = 4;
  p.prompt_logprobs = 0;
  p.skip_special_tokens = false;
  p.spaces_between_special_tokens = false;
  p.use_beam_search = true;
  p.length_penalty = 0.75;
  p.output_kind = OutputKind::kDelta;
  p.structured_outputs =
      structured::StructuredOutputSpec{structured::ConstraintKind::kChoice, "src", {"a", "b"}, "guided_choice", false};
  p.grammar_after_token_id = 77;
  p.grammar_resume = SamplingParams::GrammarResume{5, 6};

  const auto round_trip = std::get<data_parallel::AddRequest>(data_parallel::decode(data_parallel::encode(add)));
  EXPECT_EQ(round_trip.request_id, add.request_id);
  EXPECT_EQ(round_trip.prompt.text, "Hello");
  EXPECT_EQ(round_trip.prompt.token_ids, add.prompt.token_ids);
  EXPECT_EQ(round_trip.prompt.cache_salt, "salt");
  EXPECT_EQ(round_trip.prompt.lora_name, "alpha");
  EXPECT_FALSE(round_trip.prompt.add_special_tokens);
  EXPECT_EQ(round_trip.prompt.truncate_prompt_tokens, 7);
  const SamplingParams& q = round_trip.params;
  EXPECT_EQ(q.n, p.n);
  EXPECT_EQ(q.temperature, p.temperature);
  EXPECT_EQ(q.top_p, p.top_p);
  EXPECT_EQ(q.top_k, p.top_k);
  EXPECT_EQ(q.min_p, p.min_p);
  EXPECT_EQ(q.seed, p.seed);
  EXPECT_EQ(q.presence_penalty, p.presence_penalty);
  EXPECT_EQ(q.frequency_penalty, p.frequency_penalty);
  EXPECT_EQ(q.repetition_penalty, p.repetition_penalty);
  EXPECT_EQ(q.logit_bias, p.logit_bias);
  EXPECT_EQ(q.allowed_token_ids, p.allowed_token_ids);
  EXPECT_EQ(q.bad_words, p.bad_words);
  EXPECT_EQ(q.bad_words_token_ids, p.bad_words_token_ids);
  EXPECT_EQ(q.min_tokens, p.min_tokens);
  EXPECT_EQ(q.max_tokens, p.max_tokens);
  EXPECT_EQ(q.max_tokens_from_context, p.max_tokens_from_context);
  EXPECT_EQ(q.stop, p.stop);
  EXPECT_EQ(q.stop_token_ids, p.stop_token_ids);
  EXPECT_EQ(q.include_stop_str_in_output, p.include_stop_str_in_output);
  EXPECT_EQ(q.ignore_eos, p.ignore_eos);
  EXPECT_EQ(q.logprobs, p.logprobs);
  EXPECT_EQ(q.prompt_logprobs, p.prompt_logprobs);
  EXPECT_EQ(q.skip_special_tokens, p.skip_special_tokens);
  EXPECT_EQ(q.spaces_between_special_tokens, p.spaces_between_special_tokens);
  EXPECT_EQ(q.use_beam_search, p.use_beam_search);
  EXPECT_EQ(q.length_penalty, p.length_penalty);
  EXPECT_EQ(q.output_kind, p.output_kind);
  ASSERT_TRUE(q.structured_outputs.has_value());
  EXPECT_EQ(q.structured_outputs->kind, structured::ConstraintKind::kChoice);
  EXPECT_EQ(q.structured_outputs->source, "src");
  EXPECT_EQ(q.structured_outputs->choices, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(q.structured_outputs->request_field, "guided_choice");
  EXPECT_FALSE(q.structured_outputs->any_whitespace);
  EXPECT_EQ(q.grammar, nullptr);  // compiled again by the replica
  EXPECT_EQ(q.grammar_after_token_id, 77);
  ASSERT_TRUE(q.grammar_resume.has_value());
  EXPECT_EQ(q.grammar_resume->num_prompt_tokens, 5);
  EXPECT_EQ(q.grammar_resume->token_budget, 6);
}

TEST(ReplicaMessagesTest, OutputsAndCountersSurviveTheTrip) {
  RequestOutput out;
  out.request_id = "r";
  out.prompt_token_ids = {1, 5};
  out.prompt_logprobs = std::vector<PositionLogprobs>{{{5, -0.5f, 2}, {{7, -0.25f, 1}, {5, -0.5f, 2}}}};
  out.finished = true;
  out.queue_times = {0.5};
  out.outputs.resize(2);
  CompletionOutput& c = out.outputs[0];
  c.index = 1;
  c.text = "hi\xff";
  c.token_ids = {9, 10};
  c.cumulative_logprob = -1.25;
  c.logprobs = std::vector<PositionLogprobs>{{{9, -1.0f, 3}, {}}, {{10, -0.25f, 1}, {{10, -0.25f, 1}}}};
  c.finish_reason = FinishReason::kStop;
  c.stop_reason = std::string("end");
  out.outputs[1].stop_reason = int32_t{42};

  const auto got =
      std::get<data_parallel::Outputs>(data_parallel::decode(data_parallel::encode(data_parallel::Outputs{{out}})));
  ASSERT_EQ(got.outputs.size(), 1u);
  const RequestOutput& o = got.outputs[0];
  EXPECT_EQ(o.request_id, "r");
  EXPECT_EQ(o.prompt_token_ids, out.prompt_token_ids);
  ASSERT_TRUE(o.prompt_logprobs.has_value());
  EXPECT_EQ((*o.prompt_logprobs)[0].chosen.token_id, 5);
  EXPECT_EQ((*o.prompt_logprobs)[0].top[1].rank, 2);
  EXPECT_TRUE(o.finished);
  EXPECT_EQ(o.queue_times, out.queue_times);
  ASSERT_EQ(o.outputs.size(), 2u);
  EXPECT_EQ(o.outputs[0].index, 1);
  EXPECT_EQ(o.outputs[0].text, c.text);
  EXPECT_EQ(o.outputs[0].token_ids, c.token_ids);
  EXPECT_EQ(o.outputs[0].cumulative_logprob, -1.25);
  ASSERT_TRUE(o.outputs[0].logprobs.has_value());
  EXPECT_EQ((*o.outputs[0].logprobs)[1].top[0].logprob, -0.25f);
  EXPECT_EQ(o.outputs[0].finish_reason, FinishReason::kStop);
  EXPECT_EQ(o.outputs[0].stop_reason, StopReason(std::string("end")));
  EXPECT_EQ(o.outputs[1].stop_reason, StopReason(int32_t{42}));
  EXPECT_FALSE(o.outputs[1].finish_reason.has_value());
  EXPECT_FALSE(o.outputs[1].logprobs.has_value());

  EngineCoreStats stats;
  stats.num_running = 3;
  stats.num_waiting = 4;
  stats.num_blocks = 100;
  stats.num_free_blocks = 60;
  stats.prefix_cache = {50, 20};
  stats.num_preemptions = 2;
  stats.num_steps = 9;
  stats.num_scheduled_tokens = 77;
  stats.spec_decoding = SpecDecodingStats{5, 10, 6, {4, 2}};
  stats.lora = LoraStats{2, {"a"}, {"b", "c"}, 12.5};
  const auto s =
      std::get<data_parallel::Stats>(data_parallel::decode(data_parallel::encode(data_parallel::Stats{stats}))).stats;
  EXPECT_EQ(s.num_running, 3);
  EXPECT_EQ(s.num_waiting, 4);
  EXPECT_EQ(s.num_free_blocks, 60);
  EXPECT_EQ(s.prefix_cache.hits_tokens, 20);
  EXPECT_EQ(s.num_scheduled_tokens, 77);
  ASSERT_TRUE(s.spec_decoding.has_value());
  EXPECT_EQ(s.spec_decoding->num_accepted_tokens_per_pos, (std::vector<int64_t>{4, 2}));
  ASSERT_TRUE(s.lora.has_value());
  EXPECT_EQ(s.lora->waiting_adapters, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(s.lora->unix_time, 12.5);

  const auto done = std::get<data_parallel::LoraDone>(
      data_parallel::decode(data_parallel::encode(data_parallel::LoraDone{not_found("no adapter 'x'")})));
  EXPECT_EQ(done.status.code(), StatusCode::kNotFound);
  EXPECT_EQ(done.status.message(), "no adapter 'x'");
}

}  // namespace
}  // namespace vllm
