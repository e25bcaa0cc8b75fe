// The scheduler without a model: tiny pools, fake sampled tokens, exact
// chunks, block ids and preemption decisions step by step.
#include "engine/sched/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/lora/lora_adapter.h"
#include "structured/regex_grammar.h"

namespace vllm {
namespace {

using Blocks = std::vector<BlockId>;
constexpr int32_t kEos = 2;

std::unique_ptr<Request> make_request(RequestId id, int32_t prompt_len, int64_t max_tokens = 100,
                                      bool ignore_eos = false) {
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  std::iota(prompt.begin(), prompt.end(), 100 + static_cast<int32_t>(id) * 1000);
  SamplingParams params;
  params.temperature = 0;
  params.max_tokens = max_tokens;
  params.ignore_eos = ignore_eos;
  return std::make_unique<Request>(id, std::move(prompt), params, "");
}

struct Harness {
  Harness(int32_t num_blocks, int32_t block_size, SchedulerConfig config, bool caching = false)
      : kv(num_blocks, block_size, caching), scheduler(config, kv, {kEos}) {}

  // Schedules one step and feeds back `token` for every chunk that samples.
  std::pair<SchedulerOutput, std::vector<EngineCoreOutput>> step(int32_t token = 7) {
    SchedulerOutput out = scheduler.schedule();
    std::vector<EngineCoreOutput> outputs = update(out, token);
    return {std::move(out), std::move(outputs)};
  }

  // Feeds back `token` for every chunk of `out` that samples.
  std::vector<EngineCoreOutput> update(const SchedulerOutput& out, int32_t token = 7) {
    ModelRunnerOutput sampled;
    sampled.prompt_logprobs.resize(out.chunks.size());
    for (const ScheduledChunk& c : out.chunks) {
      sampled.sampled_tokens.emplace_back();
      if (c.sample) sampled.sampled_tokens.back().push_back(SampledToken{token, 0.0f, std::nullopt});
    }
    return scheduler.update_from_output(out, sampled);
  }

  KVCacheManager kv;
  Scheduler scheduler;
};

SchedulerConfig config(int32_t budget, int32_t max_seqs = 128, bool chunked = true) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = max_seqs;
  c.max_model_len = 1000;
  c.enable_chunked_prefill = chunked;
  return c;
}

TEST(SchedulerTest, RunningRequestsFirstThenWaitingOnesChunkedToTheBudget) {
  Harness h(100, 4, config(10));
  h.scheduler.add_request(make_request(1, 6));
  h.scheduler.add_request(make_request(2, 6));
  auto [first, out1] = h.step();
  ASSERT_EQ(first.chunks.size(), 2u);
  EXPECT_EQ(first.chunks[0].request_id, 1);
  EXPECT_EQ(first.chunks[0].num_new_tokens(), 6);
  EXPECT_EQ(first.chunks[0].num_logits, 1);
  EXPECT_EQ(first.chunks[1].request_id, 2);
  EXPECT_EQ(first.chunks[1].num_new_tokens(), 4);  // the rest of the budget
  EXPECT_EQ(first.chunks[1].num_logits, 0);        // mid-prompt: nothing to sample
  EXPECT_FALSE(first.chunks[1].sample);
  EXPECT_EQ(first.total_num_scheduled_tokens, 10);
  ASSERT_EQ(out1.size(), 1u);
  EXPECT_EQ(out1[0].request_id, 1);

  auto [second, out2] = h.step();
  ASSERT_EQ(second.chunks.size(), 2u);
  EXPECT_EQ(second.chunks[0].request_id, 1);  // decode of the sampled token
  EXPECT_EQ(second.chunks[0].num_computed_tokens, 6);
  EXPECT_EQ(second.chunks[0].num_new_tokens(), 1);
  EXPECT_EQ(second.chunks[0].num_known_tokens, 1);
  EXPECT_EQ(second.chunks[1].request_id, 2);  // the prompt's last two tokens
  EXPECT_EQ(second.chunks[1].num_computed_tokens, 4);
  EXPECT_EQ(second.chunks[1].num_new_tokens(), 2);
  EXPECT_EQ(second.chunks[1].num_logits, 1);
  EXPECT_EQ(out2.size(), 2u);
}

TEST(SchedulerTest, LongPromptIsSplitAcrossStepsAndItsBlockTableGrows) {
  Harness h(100, 4, config(8));
  h.scheduler.add_request(make_request(1, 20));
  std::vector<int32_t> chunk_sizes;
  for (int i = 0; i < 3; ++i) {
    auto [out, outputs] = h.step();
    ASSERT_EQ(out.chunks.size(), 1u);
    chunk_sizes.push_back(out.chunks[0].num_new_tokens());
    EXPECT_EQ(out.chunks[0].num_computed_tokens, 8 * i);
    EXPECT_EQ(out.chunks[0].block_table.size(), static_cast<size_t>((8 * i + chunk_sizes.back() + 3) / 4));
    EXPECT_EQ(outputs.size(), i == 2 ? 1u : 0u);
  }
  EXPECT_EQ(chunk_sizes, (std::vector<int32_t>{8, 8, 4}));
  EXPECT_EQ(h.kv.block_table(1), (Blocks{0, 1, 2, 3, 4}));
}

TEST(SchedulerTest, WithoutChunkedPrefillAPromptWaitsForRoomForAllOfIt) {
  Harness h(100, 4, config(10, 128, /*chunked=*/false));
  h.scheduler.add_request(make_request(1, 6));
  h.scheduler.add_request(make_request(2, 6));
  auto [out, outputs] = h.step();
  ASSERT_EQ(out.chunks.size(), 1u);  // 6 + 6 > 10: the second waits whole
  EXPECT_EQ(h.scheduler.num_waiting(), 1);
  auto [next, next_outputs] = h.step();
  ASSERT_EQ(next.chunks.size(), 2u);
  EXPECT_EQ(next.chunks[1].num_new_tokens(), 6);
}

TEST(SchedulerTest, MaxNumSeqsCapsTheRunningRequests) {
  Harness h(100, 4, config(100, /*max_seqs=*/2));
  for (RequestId id = 1; id <= 3; ++id) h.scheduler.add_request(make_request(id, 3));
  h.step();
  EXPECT_EQ(h.scheduler.num_running(), 2);
  EXPECT_EQ(h.scheduler.num_waiting(), 1);
}

TEST(SchedulerTest, PreemptsTheMostRecentlyAdmittedWhenBlocksRunOut) {
  // 4 blocks of 4 tokens; two 7-token prompts hold two blocks each.
  Harness h(4, 4, config(100));
  h.scheduler.add_request(make_request(1, 7));
  h.scheduler.add_request(make_request(2, 7));
  h.step();  // both prefilled; 8 tokens each
  h.step();  // slot 8 of each still fits in two blocks; 9 tokens each
  EXPECT_EQ(h.kv.pool().num_free_blocks(), 0);
  auto [out, outputs] = h.step();  // request 1 needs a third block
  EXPECT_EQ(out.preempted, (std::vector<RequestId>{2}));
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].request_id, 1);
  EXPECT_EQ(h.kv.block_table(1).size(), 3u);
  const Request* victim = h.scheduler.find_request(2);
  EXPECT_EQ(victim->status, RequestStatus::kPreempted);
  EXPECT_EQ(victim->num_computed_tokens, 0);
  EXPECT_EQ(victim->num_tokens(), 9);  // its generated tokens are kept and recomputed
  EXPECT_EQ(h.scheduler.num_waiting(), 1);
  EXPECT_EQ(h.scheduler.num_preemptions(), 1);

  // Three blocks for all nine tokens do not fit in the one block left: it waits.
  auto [later, later_outputs] = h.step();
  ASSERT_EQ(later.chunks.size(), 1u);
  EXPECT_TRUE(later.preempted.empty());
}

TEST(SchedulerTest, PreemptedRequestResumesFromTheFrontAndRecomputesEverything) {
  Harness h(4, 4, config(100));
  h.scheduler.add_request(make_request(1, 7, /*max_tokens=*/3, /*ignore_eos=*/true));
  h.scheduler.add_request(make_request(2, 7));
  h.scheduler.add_request(make_request(3, 2));
  for (int i = 0; i < 3; ++i) h.step();  // request 2 preempted at step 3, when request 1 finishes
  EXPECT_EQ(h.scheduler.find_request(1), nullptr);
  // Request 2 left ahead of request 3, which arrived earlier but was never admitted.
  auto [out, outputs] = h.step();
  ASSERT_GE(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].request_id, 2);
  EXPECT_EQ(out.chunks[0].num_computed_tokens, 0);
  EXPECT_EQ(out.chunks[0].num_new_tokens(), 9);
}

TEST(SchedulerTest, VictimIsTheLaterAdmittedRequestEvenWhenTheEarlierOneGrows) {
  Harness h(3, 4, config(100));
  h.scheduler.add_request(make_request(1, 4));
  h.scheduler.add_request(make_request(2, 7));
  h.step();                        // 1 holds one block, 2 holds two; 5 and 8 tokens
  auto [out, outputs] = h.step();  // 1 needs a second block: 2 is the victim
  EXPECT_EQ(out.preempted, (std::vector<RequestId>{2}));
  EXPECT_EQ(h.kv.block_table(1).size(), 2u);
}

TEST(SchedulerTest, FinishesOnEosUnlessIgnoredAndOnMaxTokens) {
  Harness h(100, 4, config(100));
  h.scheduler.add_request(make_request(1, 3));
  h.scheduler.add_request(make_request(2, 3, 100, /*ignore_eos=*/true));
  h.scheduler.add_request(make_request(3, 3, /*max_tokens=*/1, /*ignore_eos=*/true));
  auto [out, outputs] = h.step(kEos);
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kStop);
  EXPECT_FALSE(outputs[1].finish_reason.has_value());
  EXPECT_EQ(outputs[2].finish_reason, FinishReason::kLength);
  EXPECT_EQ(h.scheduler.num_running(), 1);
  EXPECT_EQ(h.kv.pool().num_free_blocks(), 99);  // the finished ones gave back their blocks
}

TEST(SchedulerTest, AbortFreesBlocksWhetherRunningOrWaiting) {
  Harness h(10, 4, config(100, /*max_seqs=*/1));
  h.scheduler.add_request(make_request(1, 9));
  h.scheduler.add_request(make_request(2, 9));
  h.step();
  EXPECT_EQ(h.kv.pool().num_free_blocks(), 7);
  EXPECT_TRUE(h.scheduler.abort_request(1));
  EXPECT_EQ(h.kv.pool().num_free_blocks(), 10);
  EXPECT_TRUE(h.scheduler.abort_request(2));
  EXPECT_FALSE(h.scheduler.abort_request(2));
  EXPECT_FALSE(h.scheduler.has_unfinished_requests());
  EXPECT_TRUE(h.scheduler.schedule().chunks.empty());
}

TEST(SchedulerTest, RequestAdmittedInTheSameStepReusesBlocksCachedThere) {
  Harness h(100, 4, config(100), /*caching=*/true);
  h.scheduler.add_request(make_request(1, 10));
  auto twin = make_request(2, 10);
  twin->all_token_ids = h.scheduler.find_request(1)->all_token_ids;
  h.scheduler.add_request(std::move(twin));
  auto [out, outputs] = h.step();
  ASSERT_EQ(out.chunks.size(), 2u);
  EXPECT_EQ(out.chunks[1].num_computed_tokens, 8);  // two full blocks, computed by request 1 in this very step
  EXPECT_EQ(out.chunks[1].num_new_tokens(), 2);
  EXPECT_EQ(h.kv.prefix_cache_stats().hits_tokens, 8);
}

// --request-timeout: a request that never ran and waited past the limit
// finishes unscheduled; one that has run (preempted since) waits on.
TEST(SchedulerTest, RequestsThatNeverRanExpireAfterMaxQueueSeconds) {
  SchedulerConfig c = config(4, /*max_seqs=*/1);
  c.max_queue_seconds = 1000;
  Harness h(100, 4, c);
  h.scheduler.add_request(make_request(1, 2, 50, /*ignore_eos=*/true));
  h.scheduler.add_request(make_request(2, 2));
  h.scheduler.add_request(make_request(3, 2));
  h.step();                                           // 1 runs; 2 and 3 wait behind it (one sequence at a time)
  h.scheduler.find_request(2)->arrival_time -= 2000;  // as if it had waited 2000 s
  auto [out, outputs] = h.step();
  EXPECT_EQ(out.timed_out, std::vector<RequestId>{2});
  EXPECT_EQ(h.scheduler.find_request(2), nullptr);  // finished and gone
  EXPECT_EQ(h.scheduler.num_waiting(), 1);          // 3 still waits
  // A request that has run (running now, or preempted since) does not expire, however long ago it came.
  h.scheduler.find_request(1)->arrival_time -= 2000;
  auto [later, later_outputs] = h.step();
  EXPECT_TRUE(later.timed_out.empty());
  EXPECT_NE(h.scheduler.find_request(1), nullptr);
}

// Speculative decoding: a request's drafts ride with its last token; the
// rejected ones are taken back from its computed tokens.
ModelRunnerOutput tokens(std::vector<int32_t> ids) {
  ModelRunnerOutput out;
  out.prompt_logprobs.resize(1);
  out.sampled_tokens.emplace_back();
  for (int32_t id : ids) out.sampled_tokens.back().push_back(SampledToken{id, 0.0f, std::nullopt});
  return out;
}

TEST(SchedulerTest, DraftsAreScheduledWithTheLastTokenAndRejectedOnesTakenBack) {
  Harness h(100, 4, config(10));
  h.scheduler.add_request(make_request(1, 6, 50, /*ignore_eos=*/true));
  h.step();  // the prompt, and a first token
  Request* r = h.scheduler.find_request(1);
  r->draft_token_ids = {11, 12, 13};
  SchedulerOutput out = h.scheduler.schedule();
  ASSERT_EQ(out.chunks.size(), 1u);
  const ScheduledChunk& c = out.chunks[0];
  EXPECT_EQ(c.num_new_tokens(), 4);
  EXPECT_EQ(c.num_draft_tokens(), 3);
  EXPECT_EQ(c.num_logits, 4);
  EXPECT_TRUE(c.sample);
  EXPECT_EQ(c.num_known_tokens, 1);  // the sampled 7, which the runner has
  EXPECT_EQ(c.draft_token_ids[2], 13);
  EXPECT_EQ(h.kv.block_table(1).size(), 3u);  // 6 + 1 + 3 draft tokens: their slots too
  // Two drafts accepted, the third replaced by the target's 99.
  const std::vector<EngineCoreOutput> outputs = h.scheduler.update_from_output(out, tokens({11, 12, 99}));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].new_token_ids, (std::vector<int32_t>{11, 12, 99}));
  EXPECT_EQ(r->num_computed_tokens, 9);  // prompt, 7, 11, 12; not 13
  EXPECT_EQ(r->num_tokens_to_compute(), 1);
  EXPECT_TRUE(r->draft_token_ids.empty());
  const SpecDecodingStats& stats = h.scheduler.spec_decoding_stats();
  EXPECT_EQ(stats.num_drafts, 1);
  EXPECT_EQ(stats.num_draft_tokens, 3);
  EXPECT_EQ(stats.num_accepted_tokens, 2);
  EXPECT_EQ(stats.num_accepted_tokens_per_pos, (std::vector<int64_t>{1, 1, 0}));
}

// A draft model's guesses need KV slots past the chunk: num_lookahead_tokens
// more, from the first prompt chunk on, but never past the request's last
// fed-back token (prompt + max_tokens - 1).
TEST(SchedulerTest, LookaheadSlotsFollowEachChunkUpToWhatTheRequestMayNeed) {
  SchedulerConfig c = config(8);
  c.num_lookahead_tokens = 3;
  Harness h(100, 4, c);
  h.scheduler.add_request(make_request(1, 10, 20, /*ignore_eos=*/true));  // 29 slots at most
  h.step();                                                               // 8 prompt tokens
  EXPECT_EQ(h.kv.block_table(1).size(), 3u);                              // 8 + 3 slots
  const Request* r = h.scheduler.find_request(1);
  auto step_until_computed = [&](int32_t n) {
    while (r->num_computed_tokens < n) h.step();
  };
  step_until_computed(24);
  EXPECT_EQ(h.kv.block_table(1).size(), 7u);  // 24 + 3 slots
  step_until_computed(26);
  EXPECT_EQ(h.kv.block_table(1).size(), 8u);  // 26 + 3 = 29 slots
  step_until_computed(28);
  EXPECT_EQ(h.kv.block_table(1).size(), 8u);  // still 29, not 28 + 3
}

TEST(SchedulerTest, AShortBudgetTrimsTheDrafts) {
  Harness h(100, 4, config(3));
  h.scheduler.add_request(make_request(1, 2, 50, /*ignore_eos=*/true));
  h.step();
  h.scheduler.find_request(1)->draft_token_ids = {11, 12, 13, 14};
  SchedulerOutput out = h.scheduler.schedule();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].num_new_tokens(), 3);
  EXPECT_EQ(out.chunks[0].draft_token_ids.size(), 2u);
  EXPECT_EQ(out.chunks[0].draft_token_ids[1], 12);
}

TEST(SchedulerTest, NothingAfterAStopInsideTheAcceptedDraftsIsOutput) {
  Harness h(100, 4, config(10));
  h.scheduler.add_request(make_request(1, 6));
  h.step();
  h.scheduler.find_request(1)->draft_token_ids = {11, kEos, 13};
  SchedulerOutput out = h.scheduler.schedule();
  const std::vector<EngineCoreOutput> outputs = h.scheduler.update_from_output(out, tokens({11, kEos, 13, 14}));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].new_token_ids, (std::vector<int32_t>{11, kEos}));
  EXPECT_EQ(outputs[0].finish_reason, FinishReason::kStop);
  EXPECT_TRUE(outputs[0].ended_by_stop_token);
  EXPECT_EQ(h.scheduler.find_request(1), nullptr);
  EXPECT_EQ(h.kv.pool().num_free_blocks(), 100);
}

// The runner keeps its own state of each request: the scheduler sends a
// request's prompt and parameters once, when it is first scheduled (not
// again after a preemption, whose recomputation the runner's history
// covers), and names each request that finished at the next schedule().
TEST(SchedulerTest, TheRunnerMeetsARequestOnceAndHearsWhenItFinished) {
  Harness h(4, 4, config(32));
  h.scheduler.add_request(make_request(1, 6, 100, /*ignore_eos=*/true));
  h.scheduler.add_request(make_request(2, 6, 100, /*ignore_eos=*/true));
  auto [first, out1] = h.step();
  ASSERT_EQ(first.new_requests.size(), 2u);
  EXPECT_EQ(first.new_requests[0].request_id, 1);
  EXPECT_EQ(first.new_requests[0].prompt_token_ids, (std::vector<int32_t>{1100, 1101, 1102, 1103, 1104, 1105}));
  EXPECT_EQ(first.new_requests[0].params.max_tokens, 100);
  EXPECT_EQ(first.new_requests[1].request_id, 2);
  EXPECT_TRUE(first.finished.empty());
  // Both grow until the 4 blocks run out and request 2 is preempted.
  SchedulerOutput preempting;
  while (preempting.preempted.empty()) {
    preempting = h.step().first;
    EXPECT_TRUE(preempting.new_requests.empty());
  }
  EXPECT_EQ(preempting.preempted, (std::vector<RequestId>{2}));
  h.scheduler.abort_request(1);
  // Request 2 is recomputed from its first token: the runner has them all.
  auto [resumed, resumed_out] = h.step();
  EXPECT_EQ(resumed.finished, (std::vector<RequestId>{1}));
  EXPECT_TRUE(resumed.new_requests.empty());
  ASSERT_EQ(resumed.chunks.size(), 1u);
  EXPECT_EQ(resumed.chunks[0].request_id, 2);
  EXPECT_EQ(resumed.chunks[0].num_computed_tokens, 0);
  EXPECT_GT(resumed.chunks[0].num_known_tokens, 6);
  EXPECT_TRUE(h.step().first.finished.empty());  // said once
  // A request aborted before it ever ran is news to nobody.
  h.scheduler.add_request(make_request(3, 6));
  h.scheduler.abort_request(3);
  h.scheduler.abort_request(2);
  EXPECT_EQ(h.scheduler.schedule().finished, (std::vector<RequestId>{2}));
}

// Drafts for a request under a grammar: the scheduler keeps the leading
// ones the grammar takes (vLLM's validate_tokens), none before the grammar
// starts, and none for a request that is no longer running.
TEST(SchedulerTest, DraftsAreCutWhereTheGrammarStopsTakingThem) {
  std::vector<std::string> bytes(257);
  for (int b = 0; b < 256; ++b) bytes[static_cast<size_t>(b)] = std::string(1, static_cast<char>(b));
  auto vocab = std::make_shared<structured::TokenVocabulary>(std::move(bytes), std::vector<int32_t>{256});
  Result<structured::Grammar> regex = structured::regex_grammar("ab+c");
  ASSERT_TRUE(regex.is_ok());
  auto grammar = std::make_shared<const structured::CompiledGrammar>(*regex, vocab);
  Harness h(100, 4, config(32));
  std::unique_ptr<Request> constrained = make_request(1, 6);
  constrained->params.grammar = grammar;
  h.scheduler.add_request(std::make_unique<Request>(1, std::vector<int32_t>(6, 100), constrained->params, ""));
  SamplingParams thinking = constrained->params;
  thinking.grammar_after_token_id = 9;  // the grammar starts after token 9
  h.scheduler.add_request(std::make_unique<Request>(2, std::vector<int32_t>(6, 100), thinking, ""));
  h.step('a');  // both take 'a'; only request 1's grammar has started
  h.scheduler.update_draft_token_ids(1, {'b', 'b', 'x', 'c'});
  EXPECT_EQ(h.scheduler.find_request(1)->draft_token_ids, (std::vector<int32_t>{'b', 'b'}));
  h.scheduler.update_draft_token_ids(1, {'b', 'c', 256, 'b'});  // the end, then nothing
  EXPECT_EQ(h.scheduler.find_request(1)->draft_token_ids, (std::vector<int32_t>{'b', 'c', 256}));
  h.scheduler.update_draft_token_ids(1, {'c'});  // a 'b' must come first
  EXPECT_TRUE(h.scheduler.find_request(1)->draft_token_ids.empty());
  h.scheduler.update_draft_token_ids(2, {'b', 'c'});
  EXPECT_TRUE(h.scheduler.find_request(2)->draft_token_ids.empty());
  h.scheduler.abort_request(1);
  h.scheduler.update_draft_token_ids(1, {'b'});  // finished: dropped, no harm
  EXPECT_EQ(h.scheduler.find_request(1), nullptr);
}

// --max-loras 2: a waiting request of a third adapter is passed over (those
// behind it, and base-model requests, go first) until a running adapter's
// requests are all gone; the names of the running and waiting adapters are
// what vllm:lora_requests_info reports.
TEST(SchedulerTest, AdaptersInTheRunningBatchAreCappedAtMaxLoras) {
  SchedulerConfig c = config(100);
  c.max_loras = 2;
  Harness h(100, 4, c);
  auto adapter = [](int64_t id, const char* name) {
    return std::make_shared<const LoraAdapter>(LoraAdapter{id, name, {}});
  };
  const auto a = adapter(1, "a"), b = adapter(2, "b"), third = adapter(3, "c");
  auto with = [](std::unique_ptr<Request> r, std::shared_ptr<const LoraAdapter> lora) {
    r->lora = std::move(lora);
    return r;
  };
  h.scheduler.add_request(with(make_request(1, 4, /*max_tokens=*/2, true), a));
  h.scheduler.add_request(with(make_request(2, 4, 20, true), b));
  h.scheduler.add_request(with(make_request(3, 4, 20, true), third));
  h.scheduler.add_request(make_request(4, 4, 20, true));
  h.scheduler.add_request(with(make_request(5, 4, 3, true), a));
  auto ids = [](const SchedulerOutput& out) {
    std::vector<RequestId> v;
    for (const ScheduledChunk& chunk : out.chunks) v.push_back(chunk.request_id);
    return v;
  };
  auto [first, out1] = h.step();
  EXPECT_EQ(ids(first), (std::vector<RequestId>{1, 2, 4, 5}));  // 3 waits: a and b hold both slots
  EXPECT_EQ(h.scheduler.running_lora_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(h.scheduler.waiting_lora_names(), (std::vector<std::string>{"c"}));
  auto [second, out2] = h.step();  // request 1 finishes (max_tokens 2); request 5 still runs adapter a
  EXPECT_EQ(ids(second), (std::vector<RequestId>{1, 2, 4, 5}));
  EXPECT_EQ(h.scheduler.find_request(1), nullptr);
  auto [third_step, out3] = h.step();  // request 5's last token
  EXPECT_EQ(ids(third_step), (std::vector<RequestId>{2, 4, 5}));
  EXPECT_EQ(h.scheduler.find_request(5), nullptr);
  // Adapter a has left the running batch: c takes its slot.
  auto [fourth, out4] = h.step();
  EXPECT_EQ(ids(fourth), (std::vector<RequestId>{2, 4, 3}));
  EXPECT_EQ(h.scheduler.running_lora_names(), (std::vector<std::string>{"b", "c"}));
  EXPECT_TRUE(h.scheduler.waiting_lora_names().empty());
}

// Pipeline stages keep several steps in flight: a request in one is not
// scheduled again, nor preempted, until its step is back.
TEST(SchedulerTest, RequestsInFlightAreNeitherScheduledAgainNorPreempted) {
  Harness h(6, 1, config(100));
  h.scheduler.add_request(make_request(1, 2));
  h.scheduler.add_request(make_request(2, 2));
  h.step();                                         // both prompts: 4 of 6 blocks, 3 tokens each
  SchedulerOutput first = h.scheduler.schedule(1);  // request 1's token: in flight
  ASSERT_EQ(first.chunks.size(), 1u);
  EXPECT_EQ(first.chunks[0].request_id, 1);
  SchedulerOutput second = h.scheduler.schedule();  // request 1 is in flight: only 2 runs
  ASSERT_EQ(second.chunks.size(), 1u);
  EXPECT_EQ(second.chunks[0].request_id, 2);
  EXPECT_EQ(h.scheduler.schedule().chunks.size(), 0u);  // both in flight
  h.update(first);
  // Request 1 needs a block and none is free: request 2, behind it, is in
  // flight, so request 1 is the one preempted.
  SchedulerOutput third = h.scheduler.schedule();
  EXPECT_EQ(third.preempted, std::vector<RequestId>{1});
  EXPECT_TRUE(third.chunks.empty());
  h.update(second);
  EXPECT_EQ(h.scheduler.num_running(), 1);
  EXPECT_EQ(h.scheduler.find_request(2)->num_tokens(), 4);
}

TEST(SchedulerTest, AnAbortInFlightFreesTheBlocksWhenTheStepIsBack) {
  Harness h(10, 1, config(100));
  h.scheduler.add_request(make_request(1, 3));
  SchedulerOutput first = h.scheduler.schedule();
  EXPECT_TRUE(h.scheduler.abort_request(1));
  EXPECT_EQ(h.kv.pool().num_free_blocks(), 7);  // a later stage may still write them
  EXPECT_TRUE(h.scheduler.has_unfinished_requests());
  EXPECT_TRUE(h.update(first).empty());  // no output for an aborted request
  EXPECT_EQ(h.kv.pool().num_free_blocks(), 10);
  EXPECT_FALSE(h.scheduler.has_unfinished_requests());
  EXPECT_EQ(h.scheduler.schedule().finished, std::vector<RequestId>{1});  // the runner forgets it
}

}  // namespace
}  // namespace vllm
