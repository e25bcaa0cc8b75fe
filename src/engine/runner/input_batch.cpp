#include "engine/runner/input_batch.h"

#include <utility>

#include "base/logging.h"

namespace vllm {

CachedRequestState::CachedRequestState(NewRequestData data)
    : id(data.request_id),
      params(std::move(data.params)),
      token_ids(std::move(data.prompt_token_ids)),
      num_prompt_tokens(static_cast<int32_t>(token_ids.size())),
      rng(params.seed),
      lora(std::move(data.lora)) {}

void InputBatch::update(const SchedulerOutput& step) {
  // A request aborted before it ever ran is not here: erasing it is a no-op.
  for (RequestId id : step.finished) requests_.erase(id);
  for (RequestId id : step.preempted) request(id).admitting = true;
  for (const NewRequestData& data : step.new_requests) {
    const bool inserted = requests_.try_emplace(data.request_id, data).second;
    VLLM_CHECK(inserted, "a new request is new to the runner");
  }
  if (step.chunks.empty()) return;
  std::vector<CachedRequestState*>& chunks = in_flight_.emplace_back();
  for (const ScheduledChunk& c : step.chunks) {
    CachedRequestState& r = *chunks.emplace_back(&request(c.request_id));
    if (!std::exchange(r.admitting, false)) continue;
    r.num_computed_tokens = c.num_computed_tokens;
    r.num_draft_kv_tokens = c.num_computed_tokens;
  }
}

void InputBatch::finish_oldest() {
  VLLM_CHECK(!in_flight_.empty(), "a step in flight");
  scheduled_ = std::move(in_flight_.front());
  in_flight_.pop_front();
}

void InputBatch::computed(size_t i, const ScheduledChunk& chunk, int32_t num_rejected_drafts) {
  scheduled(i).num_computed_tokens = chunk.num_computed_tokens + chunk.num_new_tokens() - num_rejected_drafts;
}

std::span<const ForwardChunk> InputBatch::forward_chunks(std::span<const ScheduledChunk> chunks) {
  forward_chunks_.clear();
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ScheduledChunk& c = chunks[i];
    const CachedRequestState& r = submitted(i);
    VLLM_CHECK(c.num_computed_tokens + c.num_known_tokens <= static_cast<int32_t>(r.token_ids.size()),
               "the runner knows every token the scheduler schedules");
    ForwardChunk& f = forward_chunks_.emplace_back();
    f.request_id = c.request_id;
    f.token_ids = std::span<const int32_t>(r.token_ids)
                      .subspan(static_cast<size_t>(c.num_computed_tokens), static_cast<size_t>(c.num_known_tokens));
    f.draft_token_ids = c.draft_token_ids;
    f.num_computed_tokens = c.num_computed_tokens;
    f.num_prompt_tokens = r.num_prompt_tokens;
    f.block_table = c.block_table;
    f.num_logits = c.num_logits;
    f.lora_slot = r.lora_slot;
  }
  return forward_chunks_;
}

CachedRequestState& InputBatch::request(RequestId id) {
  const auto it = requests_.find(id);
  VLLM_CHECK(it != requests_.end(), "a scheduled request was sent to the runner when it was first scheduled");
  return it->second;
}

}  // namespace vllm
