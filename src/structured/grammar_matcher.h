// One sequence's progress through its grammar: which tokens may come next
// (a bitmask over the vocabulary), and the state after each token it takes.
// Not thread-safe; each sequence has its own.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <span>

#include "structured/compiled_grammar.h"
#include "structured/pushdown.h"

namespace vllm::structured {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);
  GrammarMatcher(const GrammarMatcher&) = delete;
  GrammarMatcher& operator=(const GrammarMatcher&) = delete;

  // Sets bit t of `mask` (bitmask_words(vocabulary size) words) exactly when
  // token t may come next: its bytes continue the text within the grammar,
  // or it is EOS and the grammar may end here.  With `token_budget` tokens
  // left to generate (this one included), a token is allowed only if the
  // grammar can still end within the budget after it (counting a token per
  // byte, which every byte-level or byte-fallback vocabulary can), so that
  // output cut by max_tokens is still complete; if no token can, the budget
  // is ignored.
  void fill_next_token_mask(std::span<uint32_t> mask, int64_t token_budget = INT64_MAX);

  // Takes `token`; false, with nothing changed, if the grammar forbids it.
  bool accept_token(int32_t token);

  // Where the matcher stands, to come back to after trying tokens ahead
  // (speculative decoding's drafts); while one is out the matcher keeps
  // every stack it refers to.  Each checkpoint is rolled back once, the
  // latest first.
  struct Checkpoint {
    StackSet state;
    bool ended;
  };
  Checkpoint checkpoint();
  void rollback(Checkpoint checkpoint);

  // How many leading tokens of `tokens` the grammar takes one after
  // another from here (the state is left as it was).
  int32_t num_accepted_prefix(std::span<const int32_t> tokens);

  // Nothing may follow: the text is complete (or EOS was taken).
  bool is_terminated() const;

 private:
  // Walks the vocabulary; tokens leaving more than `max_bytes_after` bytes to
  // finish are left out.  Returns the most bytes an allowed token leaves;
  // `bytes_after`, if not empty, gets each allowed token's.
  int64_t compute_mask(std::span<uint32_t> mask, int64_t max_bytes_after, std::span<uint8_t> bytes_after = {});
  // The current state's mask for the cache, with its tokens' bytes_after if asked for.
  StateMask state_mask(bool with_bytes_after);
  void compact();

  std::shared_ptr<const CompiledGrammar> grammar_;
  StackArena arena_;
  PushdownWalker walker_;
  StackSet state_;
  StackSet next_;  // scratch of accept_token
  bool ended_ = false;
  int32_t checkpoints_out_ = 0;  // no compaction while a checkpoint refers to the arena
};

}  // namespace vllm::structured
