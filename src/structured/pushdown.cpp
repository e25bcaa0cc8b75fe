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
  counted_.assign(1, 0);  // the empty stack: done
}

int64_t BytesToFinish::of(const StackSet& state) {
  // A node's bytes are its top's and the fewest of the stacks below; the
  // nodes a walk adds are counted as they come, children first.
  for (size_t id = counted_.size(); id < arena_->size(); ++id) {
    const auto node = static_cast<StackId>(id);
    int64_t bytes = PushdownRules::kUnreachable;
    if (arena_->is_join(node)) {
      for (StackId m : arena_->members(node)) bytes = std::min(bytes, counted_[static_cast<size_t>(m)]);
    } else {
      bytes = std::min(counted_[static_cast<size_t>(arena_->below(node))] + rules_->min_bytes_to_end(arena_->top(node)),
                       PushdownRules::kUnreachable);
    }
    counted_.push_back(bytes);
  }
  int64_t best = PushdownRules::kUnreachable;
  for (StackId id : state) best = std::min(best, counted_[static_cast<size_t>(id)]);
  return best;
}

void StackArena::clear() {
  nodes_.assign(1, Node{-1, -1, 0});  // kEmpty
  index_.clear();
  join_members_.clear();
  join_index_.clear();
}

StackId StackArena::push(int32_t pos, StackId below) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(below);
  auto [it, inserted] = index_.try_emplace(key, static_cast<StackId>(nodes_.size()));
  if (inserted) nodes_.push_back(Node{pos, below, nodes_[static_cast<size_t>(below)].depth + 1});
  return it->second;
}

StackId StackArena::join(std::vector<StackId> members) {
  // Members of joins are joined themselves, so that a join holds stacks only.
  for (size_t i = 0, n = members.size(); i < n; ++i) {
    if (is_join(members[i])) {
      const std::vector<StackId>& inner = this->members(members[i]);
      members[i] = inner.front();
      members.insert(members.end(), inner.begin() + 1, inner.end());
    }
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  if (members.size() == 1) return members.front();
  std::string key(reinterpret_cast<const char*>(members.data()), members.size() * sizeof(StackId));
  auto [it, inserted] = join_index_.try_emplace(std::move(key), static_cast<StackId>(nodes_.size()));
  if (inserted) {
    int32_t depth = 0;
    for (StackId m : members) depth = std::max(depth, this->depth(m));
    nodes_.push_back(Node{kJoin, static_cast<StackId>(join_members_.size()), depth});
    join_members_.push_back(std::move(members));
  }
  return it->second;
}

namespace {

// The nodes `set` reaches, in ascending id order (children first).
std::vector<StackId> reachable(const StackArena& arena, const StackSet& set) {
  std::vector<StackId> found;
  std::unordered_set<StackId> seen;
  std::vector<StackId> pending(set.begin(), set.end());
  while (!pending.empty()) {
    const StackId id = pending.back();
    pending.pop_back();
    if (!seen.insert(id).second) continue;
    found.push_back(id);
    if (id == StackArena::kEmpty) continue;
    if (arena.is_join(id)) {
      pending.insert(pending.end(), arena.members(id).begin(), arena.members(id).end());
    } else {
      pending.push_back(arena.below(id));
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

StackSet copy_stacks(const StackArena& from, const StackSet& set, StackArena& to) {
  std::unordered_map<StackId, StackId> copied{{StackArena::kEmpty, StackArena::kEmpty}};
  for (StackId id : reachable(from, set)) {
    if (id == StackArena::kEmpty) continue;
    if (from.is_join(id)) {
      std::vector<StackId> members;
      for (StackId m : from.members(id)) members.push_back(copied.at(m));
      copied[id] = to.join(std::move(members));
    } else {
      copied[id] = to.push(from.top(id), copied.at(from.below(id)));
    }
  }
  StackSet out;
  for (StackId id : set) out.push_back(copied.at(id));
  std::sort(out.begin(), out.end());
  return out;
}

std::string state_key(const StackArena& arena, const StackSet& set) {
  // Ids differ between arenas, so the text follows the nodes' structure:
  // each node's hash, from its children's, orders a join's members and the
  // state's stacks; then the nodes are written depth first, and one met
  // again as its number in that order.  The text describes the graph
  // whole, so no two states share it.
  std::unordered_map<StackId, uint64_t> hash{{StackArena::kEmpty, 0x9e3779b97f4a7c15ull}};
  auto mix = [](uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (h >> 29); };
  for (StackId id : reachable(arena, set)) {
    if (id == StackArena::kEmpty) continue;
    uint64_t h = 0xcbf29ce484222325ull;
    if (arena.is_join(id)) {
      std::vector<uint64_t> members;
      for (StackId m : arena.members(id)) members.push_back(hash.at(m));
      std::sort(members.begin(), members.end());
      for (uint64_t m : members) h = mix(h, m);
    } else {
      h = mix(mix(h, static_cast<uint32_t>(arena.top(id))), hash.at(arena.below(id)));
    }
    hash[id] = h;
  }
  auto by_hash = [&](StackId a, StackId b) { return std::pair(hash.at(a), a) < std::pair(hash.at(b), b); };
  std::string key;
  auto write = [&key](int32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  std::unordered_map<StackId, int32_t> number;
  std::vector<StackId> pending(set.begin(), set.end());
  std::sort(pending.begin(), pending.end(), by_hash);
  std::reverse(pending.begin(), pending.end());  // the smallest is taken first
  write(static_cast<int32_t>(set.size()));
  while (!pending.empty()) {
    const StackId id = pending.back();
    pending.pop_back();
    auto [it, first] = number.try_emplace(id, static_cast<int32_t>(number.size()));
    if (!first) {
      write(-3);  // a node written before
      write(it->second);
    } else if (id == StackArena::kEmpty) {
      write(-1);
    } else if (arena.is_join(id)) {
      std::vector<StackId> members = arena.members(id);
      std::sort(members.begin(), members.end(), by_hash);
      write(-2);
      write(static_cast<int32_t>(members.size()));
      pending.insert(pending.end(), members.rbegin(), members.rend());
    } else {
      write(arena.top(id));
      pending.push_back(arena.below(id));
    }
  }
  return key;
}

void PushdownWalker::normalize(StackSet& set) {
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  auto top = [this](StackId id) { return id == StackArena::kEmpty ? -1 : arena_.top(id); };
  std::stable_sort(set.begin(), set.end(), [&](StackId a, StackId b) { return top(a) < top(b); });
  size_t kept = 0;
  for (size_t i = 0; i < set.size();) {
    size_t end = i + 1;
    while (end < set.size() && top(set[end]) == top(set[i])) ++end;
    if (end - i == 1) {
      set[kept++] = set[i];
    } else {
      std::vector<StackId> belows;
      for (size_t j = i; j < end; ++j) belows.push_back(arena_.below(set[j]));
      set[kept++] = arena_.push(top(set[i]), arena_.join(std::move(belows)));
    }
    i = end;
  }
  set.resize(kept);
  std::sort(set.begin(), set.end());
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

void PushdownWalker::expand(StackId root, StackSet& out) {
  // Depth first, in the order of the grammar's alternatives, on a stack of
  // its own: a chain of nullable symbols (`(a?){0,9000}`) is as long as the
  // grammar, too deep for the call stack.  An entry is a stack to expand,
  // or (rule >= 0) the alternatives of `rule` from `next` on, returning to
  // `id`; each alternative's stack is made when its turn comes.
  struct Pending {
    StackId id;
    int32_t rule = -1;
    size_t next = 0;
  };
  std::vector<Pending> pending{{root}};
  while (!pending.empty()) {
    const Pending p = pending.back();
    pending.pop_back();
    if (p.rule >= 0) {
      const std::vector<int32_t>& starts = rules_.alternative_starts(p.rule);
      if (p.next + 1 < starts.size()) pending.push_back({p.id, p.rule, p.next + 1});
      pending.push_back({arena_.push(starts[p.next], p.id)});
      continue;
    }
    const StackId id = p.id;
    // A stack reached again within one expansion adds nothing: what it
    // expands to depends on the stack alone.  Without this, nullable rules
    // (an empty alternative, an optional repeat) reach the same stacks
    // along exponentially many paths, e.g. `(a|){0,22}`.
    if (!expanding_.insert(id).second) continue;
    if (id == StackArena::kEmpty) {
      out.push_back(id);
      continue;
    }
    if (arena_.is_join(id)) {
      const std::vector<StackId>& members = arena_.members(id);
      for (size_t i = members.size(); i-- > 0;) pending.push_back({members[i]});
      continue;
    }
    const int32_t pos = arena_.top(id);
    const Symbol& s = rules_.symbol(pos);
    switch (s.kind) {
      case Symbol::Kind::kBytes:
        out.push_back(id);
        break;
      case Symbol::Kind::kEnd:
        pending.push_back({arena_.below(id)});
        break;
      case Symbol::Kind::kRule: {
        // Return to the symbol after the reference, unless the rule ends
        // there (a tail call: the stack does not grow with right recursion).
        StackId ret = arena_.below(id);
        if (rules_.symbol(pos + 1).kind != Symbol::Kind::kEnd) ret = arena_.push(pos + 1, ret);
        if (arena_.depth(ret) >= StackArena::kMaxDepth) break;
        if (!rules_.alternative_starts(s.index).empty()) pending.push_back({ret, s.index, 0});
        break;
      }
    }
  }
}

}  // namespace vllm::structured
