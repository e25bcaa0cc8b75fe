// A speculative decoding proposer: after a step, it guesses the tokens that
// follow each running request, for the target model to verify in the next
// step (the scheduler schedules them with the request's last token, the
// sampler's rejection sampling keeps those the target agrees with).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "engine/sched/request.h"
#include "engine/spec/speculative_config.h"

namespace vllm {

// A request to draft for, and how many drafts it may take: fewer than k near
// its max_tokens or the context length.
struct DraftRequest {
  Request* request = nullptr;
  int32_t max_drafts = 0;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Sets each request's draft_token_ids (at most max_drafts; none is fine).
  virtual void propose(std::span<const DraftRequest> batch) = 0;
};

std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config);

}  // namespace vllm
