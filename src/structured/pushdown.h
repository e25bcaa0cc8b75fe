// The byte-level pushdown automaton of a grammar.  A state is the set of
// parse stacks the bytes so far leave open; each stack is a list of grammar
// positions (the top one is a byte class still to match, the ones below are
// where to return once a rule ends), and the empty stack means the grammar
// may end here.  Stacks are hash-consed in an arena, so that equal stacks
// have equal ids, a state is a sorted list of ids, and advancing a stack by
// a byte is one lookup.  Left recursion is refused by Grammar::validate(),
// which keeps expansion finite.
//
// An ambiguous grammar (`r ::= "a" r "b" | "a" r "c" | ...`) leaves many
// stacks that differ only below their tops, as many as its alternatives to
// the power of the bytes read, which a client could use to stall the engine.
// So stacks with the same top share one node whose `below` is a join: the
// set of stacks under it (a graph-structured stack, as GLR parsers keep).
// A state then holds at most one stack per grammar position.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "structured/grammar.h"

namespace vllm::structured {

// The grammar laid out for matching: every alternative's symbols back to
// back, each alternative closed by a kEnd.
class PushdownRules {
 public:
  explicit PushdownRules(const Grammar& grammar);

  const Symbol& symbol(int32_t pos) const { return symbols_[static_cast<size_t>(pos)]; }
  const std::vector<int32_t>& alternative_starts(int32_t rule) const { return starts_[static_cast<size_t>(rule)]; }
  bool accepts(int32_t pos, uint8_t byte) const {
    return byte_sets_[static_cast<size_t>(symbols_[static_cast<size_t>(pos)].index)].contains(byte);
  }
  int32_t root() const { return root_; }

  // The fewest bytes that finish the alternative from `pos` on (the symbol
  // at `pos` included); kUnreachable if no text can.
  static constexpr int64_t kUnreachable = int64_t{1} << 40;
  int64_t min_bytes_to_end(int32_t pos) const { return min_bytes_[static_cast<size_t>(pos)]; }

 private:
  void compute_min_bytes(size_t num_rules);

  std::vector<Symbol> symbols_;
  std::vector<int64_t> min_bytes_;            // per position
  std::vector<std::vector<int32_t>> starts_;  // per rule
  std::vector<ByteSet> byte_sets_;
  int32_t root_;
};

using StackId = int32_t;
// Sorted, without duplicates.
using StackSet = std::vector<StackId>;

// Every node's children (the stack below it, a join's members) have smaller
// ids than the node, so walking ids upwards meets children first.
class StackArena {
 public:
  static constexpr StackId kEmpty = 0;
  // A bound on nesting: a stack this deep takes no more frames.
  static constexpr int32_t kMaxDepth = 4096;

  StackArena() { clear(); }
  void clear();

  // The stack `below` (a stack or a join) with `pos` on top.
  StackId push(int32_t pos, StackId below);
  // The stacks of `members` (stacks or joins) as one node; a lone stack is itself.
  StackId join(std::vector<StackId> members);

  bool is_join(StackId id) const { return nodes_[static_cast<size_t>(id)].pos == kJoin; }
  // Of a stack (not a join):
  int32_t top(StackId id) const { return nodes_[static_cast<size_t>(id)].pos; }
  StackId below(StackId id) const { return nodes_[static_cast<size_t>(id)].below; }
  // Of a join: its stacks, sorted.
  const std::vector<StackId>& members(StackId id) const {
    return join_members_[static_cast<size_t>(nodes_[static_cast<size_t>(id)].below)];
  }
  // The most frames of any stack the node holds.
  int32_t depth(StackId id) const { return nodes_[static_cast<size_t>(id)].depth; }
  size_t size() const { return nodes_.size(); }

 private:
  static constexpr int32_t kJoin = -2;
  struct Node {
    int32_t pos;    // kJoin for a join
    StackId below;  // a join's index in join_members_
    int32_t depth;
  };
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, StackId> index_;
  std::vector<std::vector<StackId>> join_members_;
  std::unordered_map<std::string, StackId> join_index_;  // by the members' bytes
};

// Moves states between arenas: the same stacks in `to`.
StackSet copy_stacks(const StackArena& from, const StackSet& set, StackArena& to);

// A text that tells a state apart from every other, and is the same in
// every arena that holds the state's nodes in the same shape.
std::string state_key(const StackArena& arena, const StackSet& set);

// The fewest bytes that complete the grammar from a state (0 where it may
// end), over the states of one arena: each stack's count is computed once,
// since the states of a vocabulary walk share most of their stacks.
class BytesToFinish {
 public:
  void reset(const PushdownRules& rules, const StackArena& arena);
  int64_t of(const StackSet& state);

 private:
  const PushdownRules* rules_ = nullptr;
  const StackArena* arena_ = nullptr;
  std::vector<int64_t> counted_;  // by node id, every node up to the arena's size when last asked
};

class PushdownWalker {
 public:
  PushdownWalker(const PushdownRules& rules, StackArena& arena) : rules_(rules), arena_(arena) {}

  // The state before any byte: the root rule's alternatives, expanded.
  StackSet initial();
  // The state after `byte`; empty when no stack accepts it.
  void advance(const StackSet& state, uint8_t byte, StackSet& out);
  // Forgets what it learned of the arena (call after the arena is cleared).
  void reset() { expanded_.clear(); }

  static bool can_end(const StackSet& state) { return !state.empty() && state.front() == StackArena::kEmpty; }

 private:
  // Replaces stack `root` by the stacks whose tops are byte classes (or the
  // empty stack), following rule references and the ends of rules.
  void expand(StackId root, StackSet& out);
  const std::vector<StackId>& expanded(StackId id);
  // Sorts `set`, without duplicates, and joins the stacks that share a top.
  void normalize(StackSet& set);

  const PushdownRules& rules_;
  StackArena& arena_;
  std::unordered_map<StackId, std::vector<StackId>> expanded_;  // memo of expand()
  std::unordered_set<StackId> expanding_;                       // stacks the current expansion has reached
};

}  // namespace vllm::structured
