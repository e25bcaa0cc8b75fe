// A speculative decoding proposer: after a step, it guesses the tokens that
// follow each request the step ran, for the target model to verify in the
// next step (the scheduler schedules them with the request's last token, the
// sampler's rejection sampling keeps those the target agrees with).  It reads
// the runner's state of each request, never the scheduler's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/runner/kv_cache_storage.h"
#include "engine/spec/speculative_config.h"
#include "model/model.h"

namespace vllm {

// A request the step ran, and how many drafts it may take: fewer than k near
// its max_tokens or the context length, none when it cannot take drafts now
// (a prompt chunk comes next, a grammar, a large batch), which still lets a
// draft model keep its cache up with the target's.
struct DraftRequest {
  RequestId id = 0;
  std::span<const int32_t> token_ids;  // the prompt, then the output up to its newest token
  int32_t num_prompt_tokens = 0;
  int32_t num_computed_tokens = 0;         // leading tokens in the target's cache after the step
  std::span<const BlockId> block_table;    // the target's, which addresses a draft model's cache too
  int32_t* num_draft_kv_tokens = nullptr;  // a draft model's progress in its own cache (the runner keeps it)
  int32_t max_drafts = 0;
  // For a proposer that reads the target's hidden states (EAGLE): those of
  // the tokens the target ran for this request in the last step (empty when
  // it ran none), row i at position target_first_position + i, each of
  // DraftModelResources::target_hidden_width.
  std::span<const float> target_hidden;
  int32_t target_first_position = 0;
  std::vector<int32_t> drafts;  // the proposer's guesses (at most max_drafts; none is fine)

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Sets each request's drafts.
  virtual void propose(std::span<DraftRequest> batch) = 0;
};

// What a proposer that runs a model (draft_model, eagle) takes from the engine.
struct DraftModelResources {
  Model* model = nullptr;  // the draft model, or the EAGLE head
  ThreadPool* pool = nullptr;
  KVCacheShape kv_shape;   // the draft's layers, at the target's block size and dtype
  int32_t num_blocks = 0;  // the target's pool
  bool resident = false;
  int64_t target_hidden_width = 0;  // an EAGLE head's: what it reads of the target per token
};

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, const DraftModelResources& draft = {});

}  // namespace vllm
