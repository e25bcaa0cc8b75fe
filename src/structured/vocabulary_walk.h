// Matching the whole vocabulary against one state, as a walk down the trie
// of the tokens' bytes: a token's first bytes are those it shares with the
// one before, whose states are kept by depth, so each distinct prefix is
// matched once, and a prefix no stack accepts rules out every token that
// starts with it.  The states met are interned and their transitions kept as
// they are first taken (a lazily built DFA): inside a string, after any of
// thousands of prefixes the state is one of a few, and a byte from a state
// seen before is an array lookup rather than a pushdown step.
#pragma once

#include <cstdint>
#include <functional>

#include "structured/pushdown.h"
#include "structured/token_vocabulary.h"

namespace vllm::structured {

// Called for each token whose bytes the state accepts, with the fewest bytes
// that complete the grammar after them.
using TokenVisitor = std::function<void(int32_t token, int64_t bytes_to_finish)>;

// `state`'s stacks are in `arena`, which the walk adds its stacks to; the
// empty stack in it is ignored (it takes no bytes).
void walk_vocabulary(const PushdownRules& rules, StackArena& arena, const TokenVocabulary& vocab, StackSet state,
                     const TokenVisitor& visit);

}  // namespace vllm::structured
