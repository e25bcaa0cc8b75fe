// vLLM's draft_model proposer: a smaller model of the target's vocabulary
// runs greedily ahead of it.  Its keys and values live in a cache of its own
// that the target's block ids address (a block id means the same positions
// in both), so it takes no blocks of its own; the scheduler keeps k lookahead
// slots past each chunk, where the guesses' keys and values go.
//
// Per step, one pass runs every running request's tokens the draft has not
// seen yet: the target's chunk of a prompt, or the tokens the target accepted
// since the last step and the new last one, whose row gives the first guess;
// k - 1 passes of one token each follow.  So a block the target computed
// holds the draft's keys and values as well when another request finds it in
// the prefix cache.  A guess is the draft's argmax, so q is one-hot, which
// is what the rejection sampler assumes of drafts without probabilities
// (vLLM's default draft_sample_method, "greedy").
#pragma once

#include <vector>

#include "engine/runner/model_runner.h"
#include "engine/spec/guess_chain.h"
#include "engine/spec/proposer.h"

namespace vllm {

class DraftModelProposer final : public Proposer {
 public:
  // `shape` is the draft's
  // layers at the target's block size, `num_blocks` the target's pool.
  DraftModelProposer(Model& draft, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks,
                     bool resident_kv_cache);
  void propose(std::span<DraftRequest> batch) override;

 private:
  ModelRunner runner_;
  int32_t vocab_size_;
  int32_t max_context_length_;  // the draft's: no guess is made at a position beyond it
  GuessChain chain_;
};

}  // namespace vllm
