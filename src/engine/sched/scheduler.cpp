#include "engine/sched/scheduler.h"

#include <algorithm>
#include <utility>

#include "base/clock.h"
#include "base/logging.h"

namespace vllm {

Status SchedulerConfig::validate() const {
  if (max_num_batched_tokens < 1) return invalid_argument("max_num_batched_tokens must be at least 1");
  if (max_num_seqs < 1) return invalid_argument("max_num_seqs must be at least 1");
  if (max_model_len < 1) return invalid_argument("max_model_len must be at least 1");
  if (!(max_queue_seconds >= 0)) return invalid_argument("max_queue_seconds must not be negative");
  if (num_lookahead_tokens < 0) return invalid_argument("num_lookahead_tokens must not be negative");
  if (max_loras < 0) return invalid_argument("max_loras must not be negative");
  if (!enable_chunked_prefill && max_num_batched_tokens < max_model_len) {
    return invalid_argument("without chunked prefill, max_num_batched_tokens (" +
                            std::to_string(max_num_batched_tokens) + ") must be at least max_model_len (" +
                            std::to_string(max_model_len) + ")");
  }
  return Status::ok();
}

Scheduler::Scheduler(const SchedulerConfig& config, KVCacheManager& kv_cache, std::vector<int32_t> eos_token_ids)
    : config_(config), kv_cache_(kv_cache), eos_token_ids_(std::move(eos_token_ids)) {}

void Scheduler::add_request(std::unique_ptr<Request> request) {
  Request* r = request.get();
  const bool inserted = requests_.emplace(r->id, std::move(request)).second;
  VLLM_CHECK(inserted, "request ids are unique");
  r->status = RequestStatus::kWaiting;
  waiting_.push_back(r);
}

const Request* Scheduler::find_request(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

Request* Scheduler::find_request(RequestId id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

bool Scheduler::abort_request(RequestId id) {
  Request* r = find_request(id);
  if (r == nullptr || r->aborted) return false;
  if (r->status == RequestStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), r));
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), r));
  }
  if (r->in_flight) {
    // A later pipeline stage may still write its keys and values: its blocks wait for its step.
    r->aborted = true;
    r->status = RequestStatus::kFinished;
    return true;
  }
  finish(*r);
  return true;
}

void Scheduler::finish(Request& r) {
  kv_cache_.free(r.id);
  if (r.sent_to_runner) finished_since_last_step_.push_back(r.id);
  requests_.erase(r.id);
}

int32_t Scheduler::with_lookahead(const Request& r, int32_t num_tokens) const {
  if (config_.num_lookahead_tokens == 0) return num_tokens;
  // The request's last token is never fed back: it needs prompt + max_tokens - 1
  // slots at most (within max_model_len, as the engine checked).
  const int64_t most = int64_t{r.num_prompt_tokens()} + r.params.max_tokens - 1;
  return static_cast<int32_t>(
      std::max<int64_t>(num_tokens, std::min<int64_t>(int64_t{num_tokens} + config_.num_lookahead_tokens, most)));
}

Request* Scheduler::preemption_victim() const {
  // The most recently admitted request that is not in flight.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (!(*it)->in_flight) return *it;
  }
  return nullptr;
}

void Scheduler::preempt(Request* victim, SchedulerOutput& output) {
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  kv_cache_.free(victim->id);
  victim->num_computed_tokens = 0;
  victim->draft_token_ids.clear();
  victim->status = RequestStatus::kPreempted;
  ++num_preemptions_;
  waiting_.push_front(victim);
  output.preempted.push_back(victim->id);
}

void Scheduler::schedule_running(int32_t& budget, int32_t max_requests, std::vector<Scheduled>& scheduled,
                                 SchedulerOutput& output) {
  for (size_t i = 0; i < running_.size() && budget > 0 && static_cast<int32_t>(scheduled.size()) < max_requests; ++i) {
    Request* r = running_[i];
    if (r->in_flight) continue;  // its next token is not known yet
    VLLM_CHECK(r->num_tokens_to_compute() > 0, "a running request always has a token to compute");
    // Drafts ride along with the last known token; a short budget trims them.
    const int32_t num_new =
        std::min(r->num_tokens_to_compute() + static_cast<int32_t>(r->draft_token_ids.size()), budget);
    const int32_t num_drafts = std::max(0, num_new - r->num_tokens_to_compute());
    r->draft_token_ids.resize(static_cast<size_t>(num_drafts));
    const int32_t num_tokens = r->num_computed_tokens + num_new;
    // Victims come from the back, so none was scheduled earlier in this step
    // (r itself is not in flight: there is always one).
    bool preempted_self = false;
    while (!preempted_self && !kv_cache_.allocate_slots(r->id, with_lookahead(*r, num_tokens))) {
      Request* victim = preemption_victim();
      preempted_self = victim == r;
      preempt(victim, output);
    }
    if (preempted_self) return;
    // Drafts are guesses: no block holding one is cached for other requests.
    kv_cache_.cache_full_blocks(r->id, r->all_token_ids, num_tokens - num_drafts, r->cache_salt);
    scheduled.push_back({r, num_new, num_drafts});
    budget -= num_new;
  }
}

namespace {

// The distinct adapters of `requests`, each once, in their order; base-model requests add none.
template <typename Requests>
std::vector<const Request*> distinct_loras(const Requests& requests) {
  std::vector<const Request*> firsts;
  for (const Request* r : requests) {
    if (r->lora_id() == 0) continue;
    const auto same = [&](const Request* f) { return f->lora_id() == r->lora_id(); };
    if (std::none_of(firsts.begin(), firsts.end(), same)) firsts.push_back(r);
  }
  return firsts;
}

template <typename Requests>
std::vector<std::string> lora_names(const Requests& requests) {
  std::vector<std::string> names;
  for (const Request* r : distinct_loras(requests)) names.push_back(r->lora_name());
  return names;
}

}  // namespace

std::vector<std::string> Scheduler::running_lora_names() const { return lora_names(running_); }
std::vector<std::string> Scheduler::waiting_lora_names() const { return lora_names(waiting_); }

void Scheduler::admit_waiting(int32_t& budget, int32_t max_requests, std::vector<Scheduled>& scheduled) {
  std::vector<int64_t> running_loras;
  for (const Request* r : distinct_loras(running_)) running_loras.push_back(r->lora_id());
  auto it = waiting_.begin();
  while (it != waiting_.end() && budget > 0 && static_cast<int32_t>(running_.size()) < config_.max_num_seqs &&
         static_cast<int32_t>(scheduled.size()) < max_requests) {
    Request* r = *it;
    const bool new_lora =
        r->lora_id() != 0 && std::find(running_loras.begin(), running_loras.end(), r->lora_id()) == running_loras.end();
    // Every slot holds a running adapter: this request waits, those behind it may go first.
    if (new_lora && static_cast<int32_t>(running_loras.size()) >= config_.max_loras) {
      ++it;
      continue;
    }
    // Cached positions produce no logits, so a request that wants prompt logprobs computes everything.
    const ComputedBlocks computed =
        r->wants_prompt_logprobs() ? ComputedBlocks{} : kv_cache_.get_computed_blocks(r->all_token_ids, r->cache_salt);
    int32_t num_new = r->num_tokens() - computed.num_computed_tokens;
    if (!config_.enable_chunked_prefill && num_new > budget) return;
    num_new = std::min(num_new, budget);
    const int32_t num_tokens = computed.num_computed_tokens + num_new;
    // First come, first served: a request that does not fit waits, and so do those behind it.
    if (!kv_cache_.allocate_slots(r->id, with_lookahead(*r, num_tokens), computed)) return;
    it = waiting_.erase(it);
    if (new_lora) running_loras.push_back(r->lora_id());
    r->num_computed_tokens = computed.num_computed_tokens;
    r->status = RequestStatus::kRunning;
    if (!r->queue_time) r->queue_time = now_seconds() - r->arrival_time;
    running_.push_back(r);
    kv_cache_.cache_full_blocks(r->id, r->all_token_ids, num_tokens, r->cache_salt);
    scheduled.push_back({r, num_new, 0});
    budget -= num_new;
  }
}

void Scheduler::expire_waiting(SchedulerOutput& output) {
  const double oldest_arrival = now_seconds() - config_.max_queue_seconds;
  std::erase_if(waiting_, [&](Request* r) {
    if (r->queue_time || r->arrival_time >= oldest_arrival) return false;
    output.timed_out.push_back(r->id);
    finish(*r);
    return true;
  });
}

SchedulerOutput Scheduler::schedule(int32_t max_requests) {
  SchedulerOutput output;
  if (config_.max_queue_seconds > 0) expire_waiting(output);
  int32_t budget = config_.max_num_batched_tokens;
  std::vector<Scheduled> scheduled;
  schedule_running(budget, max_requests, scheduled, output);
  // After a preemption the pool is short: admitting more would only preempt again.
  if (output.preempted.empty()) admit_waiting(budget, max_requests, scheduled);

  output.finished = std::exchange(finished_since_last_step_, {});
  // Spans are taken only now: every block table has reached its size for the step.
  for (const Scheduled& s : scheduled) {
    Request& r = *s.request;
    if (!r.sent_to_runner) {
      output.new_requests.push_back(NewRequestData{
          r.id, std::vector<int32_t>(r.prompt_token_ids().begin(), r.prompt_token_ids().end()), r.params, r.lora});
      r.sent_to_runner = true;
    }
    r.in_flight = true;
    ScheduledChunk chunk;
    chunk.request_id = r.id;
    chunk.num_computed_tokens = r.num_computed_tokens;
    chunk.num_known_tokens = s.num_new_tokens - s.num_draft_tokens;
    chunk.draft_token_ids = r.draft_token_ids;
    chunk.block_table = kv_cache_.block_table(r.id);
    // Only a chunk that reaches the last known token yields a new token.
    chunk.sample = r.num_computed_tokens + chunk.num_known_tokens == r.num_tokens();
    chunk.num_logits = r.wants_prompt_logprobs() ? s.num_new_tokens : (chunk.sample ? 1 + s.num_draft_tokens : 0);
    if (chunk.sample) chunk.grammar = r.active_grammar();
    output.chunks.push_back(chunk);
    output.total_num_scheduled_tokens += s.num_new_tokens;
  }
  return output;
}

std::optional<FinishReason> Scheduler::check_stop(const Request& r, EngineCoreOutput& out) const {
  const int32_t last = r.all_token_ids.back();
  // Until min_tokens exist the sampler masks these tokens anyway.
  if (r.num_output_tokens() >= r.params.min_tokens) {
    if (!r.params.ignore_eos && std::ranges::find(eos_token_ids_, last) != eos_token_ids_.end()) {
      out.ended_by_stop_token = true;
      return FinishReason::kStop;
    }
    if (std::ranges::find(r.params.stop_token_ids, last) != r.params.stop_token_ids.end()) {
      out.stop_token_id = last;
      out.ended_by_stop_token = true;
      return FinishReason::kStop;
    }
  }
  // The structured output is complete: nothing more may follow.
  if (r.active_grammar() != nullptr && r.active_grammar()->is_terminated()) return FinishReason::kStop;
  if (r.num_output_tokens() >= r.params.max_tokens || r.num_tokens() >= config_.max_model_len) {
    return FinishReason::kLength;
  }
  return std::nullopt;
}

void Scheduler::update_draft_token_ids(RequestId id, std::vector<int32_t> draft_token_ids) {
  Request* r = find_request(id);
  // Drafts made for a request that has finished since are dropped.
  if (r == nullptr || r->status != RequestStatus::kRunning) return;
  // Under a grammar only the drafts it takes are verified (vLLM's
  // validate_tokens); none before the grammar starts (after a reasoning
  // model's thought), whose start a draft might pass.
  if (r->params.grammar) {
    structured::GrammarMatcher* grammar = r->active_grammar();
    draft_token_ids.resize(grammar ? static_cast<size_t>(grammar->num_accepted_prefix(draft_token_ids)) : 0);
  }
  r->draft_token_ids = std::move(draft_token_ids);
}

std::vector<EngineCoreOutput> Scheduler::update_from_output(const SchedulerOutput& output,
                                                            const ModelRunnerOutput& sampled) {
  VLLM_CHECK(
      sampled.sampled_tokens.size() == output.chunks.size() && sampled.prompt_logprobs.size() == output.chunks.size(),
      "the runner answers every chunk");
  std::vector<EngineCoreOutput> outputs;
  bool any_finished = false;
  for (size_t i = 0; i < output.chunks.size(); ++i) {
    const ScheduledChunk& chunk = output.chunks[i];
    Request* r = find_request(chunk.request_id);
    VLLM_CHECK(r != nullptr && r->in_flight, "scheduled requests stay until their step is updated");
    r->in_flight = false;
    if (r->aborted) {
      finish(*r);
      continue;
    }
    r->num_computed_tokens += chunk.num_new_tokens();
    const int32_t num_drafts = chunk.num_draft_tokens();
    r->draft_token_ids.clear();  // the chunk's span is not read again
    const std::vector<PositionLogprobs>& prompt_logprobs = sampled.prompt_logprobs[i];
    r->prompt_logprobs.insert(r->prompt_logprobs.end(), prompt_logprobs.begin(), prompt_logprobs.end());
    if (!chunk.sample) continue;
    const std::vector<SampledToken>& tokens = sampled.sampled_tokens[i];
    const auto num_accepted = static_cast<int32_t>(tokens.size()) - 1;
    VLLM_CHECK(num_accepted >= 0 && num_accepted <= num_drafts, "one token more than the accepted drafts");
    if (num_drafts > 0) {
      // The rejected drafts' keys and values are overwritten by the next step.
      r->num_computed_tokens -= num_drafts - num_accepted;
      spec_decoding_stats_.observe_draft(num_drafts, num_accepted);
    }
    EngineCoreOutput out;
    out.request_id = r->id;
    if (!r->queue_time_sent) {
      out.queue_time = r->queue_time;
      r->queue_time_sent = true;
    }
    if (r->params.prompt_logprobs && !r->prompt_logprobs_sent) {
      out.prompt_logprobs = std::move(r->prompt_logprobs);
      r->prompt_logprobs_sent = true;
    }
    for (const SampledToken& token : tokens) {
      r->all_token_ids.push_back(token.token_id);
      r->advance_grammar(token.token_id);
      out.new_token_ids.push_back(token.token_id);
      out.new_token_logprobs.push_back(token.logprob);
      if (token.logprobs) out.new_logprobs.push_back(*token.logprobs);
      out.finish_reason = check_stop(*r, out);
      if (out.finish_reason) break;
    }
    if (out.finish_reason) {
      r->status = RequestStatus::kFinished;
      any_finished = true;
    }
    outputs.push_back(std::move(out));
  }
  if (any_finished) {
    std::erase_if(running_, [](const Request* r) { return r->status == RequestStatus::kFinished; });
    for (const EngineCoreOutput& out : outputs) {
      if (out.finish_reason) finish(*find_request(out.request_id));
    }
  }
  return outputs;
}

}  // namespace vllm
