#include "structured/pushdown.h"

#include <algorithm>
#include <queue>

namespace vllm::structured {

PushdownRules::PushdownRules(const Grammar& grammar)
    : starts_(grammar.rules().size()), byte_sets_(grammar.byte_sets()), root_(grammar.root()) {
  for (size_t r = 0; r < grammar.rules().size(); ++r) {
    for (const Grammar::Sequence& alt : grammar.rules()[r].alternatives) {
      starts_[r].push_back(static_cast<int32_t>(symbols_.size()));
      symbols_.insert(symbols_.end(), alt.begin(), alt.end());
      symbols_.push_back(Symbol{Symbol::Kind::kEnd, 0});
    }
  }
  compute_min_bytes(grammar.rules().size());
}

// Each rule's shortest text, by Knuth's generalisation of Dijkstra's
// algorithm: a rule's length is final when it is the smallest tentative
// one, and an alternative's length is known once all its rules are final.
// Then every position's shortest finish is a suffix sum of its alternative.
void PushdownRules::compute_min_bytes(size_t num_rules) {
  struct Alternative {
    int32_t rule;
    int32_t start;
    int64_t known = 0;        // bytes, plus the lengths of its rules final so far
    int32_t num_pending = 0;  // references to rules not yet final
  };
  std::vector<Alternative> alts;
  std::vector<std::vector<int32_t>> used_by(num_rules);  // alternatives referring to a rule, once per reference
  for (size_t r = 0; r < num_rules; ++r) {
    for (int32_t start : starts_[r]) {
      Alternative a{static_cast<int32_t>(r), start};
      for (int32_t p = start; symbols_[static_cast<size_t>(p)].kind != Symbol::Kind::kEnd; ++p) {
        const Symbol& s = symbols_[static_cast<size_t>(p)];
        if (s.kind == Symbol::Kind::kBytes) {
          ++a.known;
        } else {
          ++a.num_pending;
          used_by[static_cast<size_t>(s.index)].push_back(static_cast<int32_t>(alts.size()));
        }
      }
      alts.push_back(a);
    }
  }
  std::vector<int64_t> rule_min(num_rules, kUnreachable);
  std::vector<char> final(num_rules, 0);
  using Entry = std::pair<int64_t, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (const Alternative& a : alts) {
    if (a.num_pending == 0) queue.emplace(a.known, a.rule);
  }
  while (!queue.empty()) {
    const auto [length, rule] = queue.top();
    queue.pop();
    if (final[static_cast<size_t>(rule)]) continue;
    final[static_cast<size_t>(rule)] = 1;
    rule_min[static_cast<size_t>(rule)] = length;
    for (int32_t ai : used_by[static_cast<size_t>(rule)]) {
      Alternative& a = alts[static_cast<size_t>(ai)];
      a.known = std::min(a.known + length, kUnreachable);
      if (--a.num_pending == 0 && !final[static_cast<size_t>(a.rule)]) queue.emplace(a.known, a.rule);
    }
  }
  min_bytes_.assign(symbols_.size(), 0);
  for (const Alternative& a : alts) {
    int32_t end = a.start;
    while (symbols_[static_cast<size_t>(end)].kind != Symbol::Kind::kEnd) ++end;
    for (int32_t p = end - 1; p >= a.start; --p) {
      const Symbol& s = symbols_[static_cast<size_t>(p)];
      const int64_t own = s.kind == Symbol::Kind::kBytes ? 1 : rule_min[static_cast<size_t>(s.index)];
      min_bytes_[static_cast<size_t>(p)] = std::min(own + min_bytes_[static_cast<size_t>(p) + 1], kUnreachable);
    }
  }
}

void BytesToFinish::reset(const PushdownRules& rules, const StackArena& arena) {
  rules_ = &rules;
  arena_ = &arena;
  memo_.assign(1, 0);  // the empty stack: done
}

int64_t BytesToFinish::of(const StackSet& state) {
  int64_t best = PushdownRules::kUnreachable;
  for (StackId id : state) best = std::min(best, of_stack(id));
  return best;
}

int64_t BytesToFinish::of_stack(StackId id) {
  if (memo_.size() < arena_->size()) memo_.resize(arena_->size(), -1);
  // Down to the first stack already counted, then up again: a stack's bytes
  // are its top's and those of the stack below it.
  chain_.clear();
  for (StackId s = id; memo_[static_cast<size_t>(s)] < 0; s = arena_->below(s)) chain_.push_back(s);
  for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
    const int64_t below = memo_[static_cast<size_t>(arena_->below(*it))];
    memo_[static_cast<size_t>(*it)] =
        std::min(below + rules_->min_bytes_to_end(arena_->top(*it)), PushdownRules::kUnreachable);
  }
  return memo_[static_cast<size_t>(id)];
}

void StackArena::clear() {
  nodes_.assign(1, Node{-1, -1, 0});  // kEmpty
  index_.clear();
}

StackId StackArena::push(int32_t pos, StackId below) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(below);
  auto [it, inserted] = index_.try_emplace(key, static_cast<StackId>(nodes_.size()));
  if (inserted) nodes_.push_back(Node{pos, below, nodes_[static_cast<size_t>(below)].depth + 1});
  return it->second;
}

std::vector<int32_t> StackArena::positions(StackId id) const {
  std::vector<int32_t> out;
  for (; id != kEmpty; id = below(id)) out.push_back(top(id));
  std::reverse(out.begin(), out.end());
  return out;
}

StackSet copy_stacks(const StackArena& from, const StackSet& set, StackArena& to) {
  StackSet out;
  for (StackId id : set) {
    StackId copy = StackArena::kEmpty;
    for (int32_t pos : from.positions(id)) copy = to.push(pos, copy);
    out.push_back(copy);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string state_key(const StackArena& arena, const StackSet& set) {
  std::vector<std::vector<int32_t>> stacks;
  for (StackId id : set) stacks.push_back(arena.positions(id));
  std::sort(stacks.begin(), stacks.end());
  std::string key;
  for (const auto& stack : stacks) {
    key.append(reinterpret_cast<const char*>(stack.data()), stack.size() * sizeof(int32_t));
    key.append(4, '\xff');  // no position is -1: a separator
  }
  return key;
}

void PushdownWalker::normalize(StackSet& set) {
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
}

StackSet PushdownWalker::initial() {
  StackSet out;
  expanding_.clear();
  for (int32_t start : rules_.alternative_starts(rules_.root())) {
    expand(arena_.push(start, StackArena::kEmpty), out);
  }
  normalize(out);
  return out;
}

void PushdownWalker::advance(const StackSet& state, uint8_t byte, StackSet& out) {
  out.clear();
  for (StackId id : state) {
    if (id == StackArena::kEmpty) continue;
    const int32_t pos = arena_.top(id);
    if (!rules_.accepts(pos, byte)) continue;
    const std::vector<StackId>& next = expanded(arena_.push(pos + 1, arena_.below(id)));
    out.insert(out.end(), next.begin(), next.end());
  }
  normalize(out);
}

const std::vector<StackId>& PushdownWalker::expanded(StackId id) {
  auto it = expanded_.find(id);
  if (it != expanded_.end()) return it->second;
  StackSet out;
  expanding_.clear();
  expand(id, out);
  normalize(out);
  return expanded_.emplace(id, std::move(out)).first->second;
}

void PushdownWalker::expand(StackId id, StackSet& out) {
  // A stack reached again within one expansion adds nothing: what it
  // expands to depends on the stack alone.  Without this, nullable rules (an
  // empty alternative, an optional repeat) reach the same stacks along
  // exponentially many paths, e.g. `(a|){0,22}`.
  if (!expanding_.insert(id).second) return;
  if (id == StackArena::kEmpty) {
    out.push_back(id);
    return;
  }
  const int32_t pos = arena_.top(id);
  const Symbol& s = rules_.symbol(pos);
  switch (s.kind) {
    case Symbol::Kind::kBytes:
      out.push_back(id);
      return;
    case Symbol::Kind::kEnd:
      expand(arena_.below(id), out);
      return;
    case Symbol::Kind::kRule: {
      // Return to the symbol after the reference, unless the rule ends there
      // (a tail call: the stack does not grow with right recursion).
      StackId ret = arena_.below(id);
      if (rules_.symbol(pos + 1).kind != Symbol::Kind::kEnd) ret = arena_.push(pos + 1, ret);
      if (arena_.depth(ret) >= StackArena::kMaxDepth) return;
      for (int32_t start : rules_.alternative_starts(s.index)) expand(arena_.push(start, ret), out);
      return;
    }
  }
}

}  // namespace vllm::structured
