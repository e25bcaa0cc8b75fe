// vLLM's n-gram proposer (prompt lookup decoding): no model, the drafts are
// the tokens that followed the sequence's last n tokens where they occurred
// before, in the prompt or the output.  Cheap, and right whenever the output
// repeats its context (code edits, quoting, summaries).
#pragma once

#include <span>
#include <vector>

#include "engine/spec/proposer.h"

namespace vllm {

// The longest suffix of `tokens` of min_n..max_n tokens that occurs earlier in
// them (overlapping the suffix allowed; of equal lengths the earliest
// occurrence), and up to k of the tokens after that occurrence; empty when
// no suffix of min_n tokens recurs.
std::vector<int32_t> ngram_drafts(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t k);

class NgramProposer final : public Proposer {
 public:
  NgramProposer(int32_t min_n, int32_t max_n) : min_n_(min_n), max_n_(max_n) {}
  void propose(std::span<DraftRequest> batch) override;

 private:
  int32_t min_n_;
  int32_t max_n_;
};

}  // namespace vllm
