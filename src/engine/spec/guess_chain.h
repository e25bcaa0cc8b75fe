// The passes of a proposer that runs a model greedily ahead of the target
// (draft_model, eagle): a first pass over each request's chunk, those that
// guess first (logits row i of a pass is guessing request i), then passes of
// one token each, every guessing request's newest guess, until it has its
// max_drafts.  A guess is the argmax, so q is one-hot.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runner/forward_chunk.h"
#include "engine/spec/proposer.h"

namespace vllm {

class GuessChain {
 public:
  void clear();
  // A request's first-pass chunk: `tokens` from `first_position` on, in the
  // target's blocks (which address the proposer's cache too).  With
  // max_drafts > 0 it guesses from the last row into r.drafts (add those
  // before the others); with none, it only writes the proposer's cache.
  void add(DraftRequest& r, int32_t first_position, std::span<const int32_t> tokens, int32_t max_drafts);

  bool done() const { return chunks_.empty(); }
  std::span<const ForwardChunk> chunks() const { return chunks_; }

  // After a pass: each guessing request takes its row's argmax; one that
  // wants more runs that guess alone next, at position num_tokens - 1 +
  // (its guesses) + `position_offset` (-1 where a row sits one position
  // before its token, as EAGLE's do).  Returns the rows of the requests that
  // go on, in their new order; valid until the next call.
  std::span<const size_t> advance(std::span<const float> logits, int32_t vocab_size, int32_t position_offset);

 private:
  struct Pass {
    DraftRequest* request = nullptr;
    int32_t max_drafts = 0;
  };
  std::vector<Pass> passes_;
  std::vector<ForwardChunk> chunks_;
  std::vector<size_t> kept_rows_;
};

}  // namespace vllm
