// vLLM's eagle proposer: an EAGLE head (model/arch/eagle.h) runs greedily
// ahead of the target, reading the target's hidden states.  Its row at
// position p pairs token p + 1 with the target's final hidden state at p
// (so the row at the last computed position, holding the newest token,
// guesses the next), and its keys and values live in a cache of its own that
// the target's block ids address, as a draft model's do.
//
// Per step, one pass runs, for every request the target ran, the rows of the
// positions it computed and kept (rejected drafts' rows are left out, vLLM's
// unpadded drafting); a request whose newest token is at the end guesses
// from the last row.  Each of the k - 1 further passes feeds a guess back at
// the next position with the head's own output as its hidden state.  Guesses
// are the argmax, so q is one-hot.  An EAGLE-3 head reads the target's
// auxiliary hidden states in the first pass, its own output in the others.
#pragma once

#include <vector>

#include "engine/runner/model_runner.h"
#include "engine/spec/guess_chain.h"
#include "engine/spec/proposer.h"

namespace vllm {

class EagleProposer final : public Proposer {
 public:
  // `shape` is the head's
  // layers at the target's block size, `num_blocks` the target's pool;
  // `target_hidden_width`: what the head reads of the target per token.
  EagleProposer(Model& head, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks, bool resident_kv_cache,
                int64_t target_hidden_width);
  void propose(std::span<DraftRequest> batch) override;

 private:
  ModelRunner runner_;
  int32_t vocab_size_;
  int64_t hidden_size_;
  int64_t target_hidden_width_;
  int32_t max_context_length_;  // the head's: no row at a position beyond it
  GuessChain chain_;
  std::vector<float> input_hidden_;  // the pass's hidden state per token, chunk by chunk
  std::vector<float> next_hidden_;   // the next pass's, as the head gives them
};

}  // namespace vllm
