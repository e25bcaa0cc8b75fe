#include "structured/vocabulary_walk.h"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace vllm::structured {
namespace {

struct StackSetHash {
  size_t operator()(const StackSet& set) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (StackId id : set) h = (h ^ static_cast<uint32_t>(id)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};

// The states of one walk, interned, with their transitions as first taken.
class WalkStates {
 public:
  static constexpr int32_t kDead = -1;

  WalkStates(const PushdownRules& rules, StackArena& arena) : walker_(rules, arena) { finish_.reset(rules, arena); }

  int32_t intern(StackSet set) {
    auto [it, inserted] = index_.try_emplace(std::move(set), static_cast<int32_t>(states_.size()));
    if (inserted) {
      State s;
      s.set = &it->first;
      s.next.fill(kUnknown);
      states_.push_back(s);
    }
    return it->second;
  }

  int32_t next(int32_t state, uint8_t byte) {
    int32_t& known = states_[static_cast<size_t>(state)].next[byte];
    if (known != kUnknown) return known;
    walker_.advance(*states_[static_cast<size_t>(state)].set, byte, scratch_);
    const int32_t to = scratch_.empty() ? kDead : intern(scratch_);
    states_[static_cast<size_t>(state)].next[byte] = to;  // `known` may have moved with states_
    return to;
  }

  int64_t bytes_to_finish(int32_t state) {
    State& s = states_[static_cast<size_t>(state)];
    if (s.bytes_to_finish < 0) s.bytes_to_finish = finish_.of(*s.set);
    return s.bytes_to_finish;
  }

 private:
  static constexpr int32_t kUnknown = -2;
  struct State {
    const StackSet* set;  // the key in index_, which does not move
    std::array<int32_t, 256> next;
    int64_t bytes_to_finish = -1;
  };
  PushdownWalker walker_;
  BytesToFinish finish_;
  std::unordered_map<StackSet, int32_t, StackSetHash> index_;
  std::vector<State> states_;
  StackSet scratch_;
};

}  // namespace

void walk_vocabulary(const PushdownRules& rules, StackArena& arena, const TokenVocabulary& vocab, StackSet state,
                     const TokenVisitor& visit) {
  WalkStates states(rules, arena);
  std::erase(state, StackArena::kEmpty);
  thread_local std::vector<int32_t> by_depth;  // the state after the current token's first d bytes
  by_depth.assign(1, states.intern(std::move(state)));
  const std::vector<int32_t>& ids = vocab.sorted_ids();
  const std::vector<int32_t>& shared = vocab.shared_prefix();
  size_t valid = 0;  // by_depth[0..valid] hold the states of the previous token's prefixes
  for (size_t i = 0; i < ids.size();) {
    const std::string& bytes = vocab.bytes(ids[i]);
    size_t d = std::min(static_cast<size_t>(shared[i]), valid);
    if (by_depth.size() < bytes.size() + 1) by_depth.resize(bytes.size() + 1);
    bool dead = false;
    for (; d < bytes.size(); ++d) {
      by_depth[d + 1] = states.next(by_depth[d], static_cast<uint8_t>(bytes[d]));
      if (by_depth[d + 1] == WalkStates::kDead) {
        dead = true;
        break;
      }
    }
    valid = d;
    if (!dead) {
      visit(ids[i], states.bytes_to_finish(by_depth[d]));
      ++i;
      continue;
    }
    // Every following token that starts with bytes[0..d] dies here too.
    for (++i; i < ids.size() && static_cast<size_t>(shared[i]) > d; ++i) {
    }
  }
}

}  // namespace vllm::structured
