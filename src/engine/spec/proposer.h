// A speculative decoding proposer: after a step, it guesses the tokens that
// follow each running request, for the target model to verify in the next
// step (the scheduler schedules them with the request's last token, the
// sampler's rejection sampling keeps those the target agrees with).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/thread_pool.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/runner/kv_cache_storage.h"
#include "engine/sched/request.h"
#include "engine/spec/speculative_config.h"

namespace vllm {

// A running request, and how many drafts it may take: fewer than k near its
// max_tokens or the context length, none when it cannot take drafts now (a
// prompt chunk comes next, a grammar, a large batch), which still lets a
// draft model keep its cache up with the target's.
struct DraftRequest {
  Request* request = nullptr;
  int32_t max_drafts = 0;
  // For a proposer that reads the target's hidden states (EAGLE): those of
  // the tokens the target ran for this request in the last step (empty when
  // it ran none), row i at position target_first_position + i, each of
  // DraftModelResources::target_hidden_width.
  std::span<const float> target_hidden;
  int32_t target_first_position = 0;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Sets each request's draft_token_ids (at most max_drafts; none is fine).
  virtual void propose(std::span<const DraftRequest> batch) = 0;
};

// What a proposer that runs a model (draft_model, eagle) takes from the engine.
struct DraftModelResources {
  Model* model = nullptr;  // the draft model, or the EAGLE head
  ThreadPool* pool = nullptr;
  const KVCacheManager* kv_cache = nullptr;  // the target's block tables, which address the draft's cache too
  KVCacheShape kv_shape;                     // the draft's layers, at the target's block size and dtype
  int32_t num_blocks = 0;                    // the target's pool
  bool resident = false;
  int64_t target_hidden_width = 0;  // an EAGLE head's: what it reads of the target per token
};

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, const DraftModelResources& draft = {});

}  // namespace vllm
