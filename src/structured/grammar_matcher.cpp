#include "structured/grammar_matcher.h"

#include <algorithm>

namespace vllm::structured {
namespace {

// The matcher's own arena holds only what its steps made; past this many
// stacks it keeps just the current state's.
constexpr size_t kCompactAfter = size_t{1} << 16;
// A walk's per-thread arena is kept for the next walk unless it grew past this.
constexpr size_t kScratchKept = size_t{1} << 20;

void set_bit(std::span<uint32_t> mask, int32_t token) {
  mask[static_cast<size_t>(token) / 32] |= uint32_t{1} << (static_cast<uint32_t>(token) % 32);
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), walker_(grammar_->rules(), arena_) {
  state_ = walker_.initial();
}

bool GrammarMatcher::is_terminated() const {
  return ended_ || (state_.size() == 1 && state_.front() == StackArena::kEmpty);
}

bool GrammarMatcher::accept_token(int32_t token) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  if (ended_ || token < 0 || token >= vocab.size()) return false;
  if (vocab.is_eos(token)) {
    if (!PushdownWalker::can_end(state_)) return false;
    ended_ = true;
    return true;
  }
  const std::string& bytes = vocab.bytes(token);
  if (bytes.empty()) return false;
  StackSet state = state_;
  for (char c : bytes) {
    walker_.advance(state, static_cast<uint8_t>(c), next_);
    if (next_.empty()) return false;
    state.swap(next_);
  }
  state_ = std::move(state);
  if (arena_.size() > kCompactAfter) compact();
  return true;
}

void GrammarMatcher::compact() {
  StackArena fresh;
  state_ = copy_stacks(arena_, state_, fresh);
  arena_ = std::move(fresh);
  walker_.reset();
}

void GrammarMatcher::fill_next_token_mask(std::span<uint32_t> mask, int64_t token_budget) {
  std::fill(mask.begin(), mask.end(), 0u);
  if (ended_) return;
  const std::string key = state_key(arena_, state_);
  std::shared_ptr<const StateMask> cached = grammar_->cached_mask(key);
  if (!cached) {
    auto computed = std::make_shared<StateMask>();
    computed->allowed.assign(mask.size(), 0u);
    computed->most_bytes_to_finish = compute_mask(computed->allowed, PushdownRules::kUnreachable);
    grammar_->store_mask(key, computed);
    cached = std::move(computed);
  }
  std::copy(cached->allowed.begin(), cached->allowed.end(), mask.begin());
  // Near the end of the budget some tokens would leave too much to write:
  // they are dropped, by the bytes each leaves (kept with the state's mask).
  const int64_t bytes_after = token_budget == INT64_MAX ? token_budget : token_budget - 1;
  if (cached->most_bytes_to_finish <= bytes_after) return;
  if (bytes_after >= StateMask::kSaturated) {
    // Far from the end still, but some token leaves more than the counts
    // hold: a walk of its own (rare: a budget of hundreds of tokens).
    std::fill(mask.begin(), mask.end(), 0u);
    compute_mask(mask, bytes_after);
    if (std::any_of(mask.begin(), mask.end(), [](uint32_t w) { return w != 0; })) return;
    std::copy(cached->allowed.begin(), cached->allowed.end(), mask.begin());
    return;
  }
  if (cached->bytes_after.empty()) {
    auto computed = std::make_shared<StateMask>(*cached);
    computed->bytes_after.assign(static_cast<size_t>(grammar_->vocabulary().size()), 0);
    computed->allowed.assign(mask.size(), 0u);
    compute_mask(computed->allowed, PushdownRules::kUnreachable, computed->bytes_after);
    grammar_->replace_mask(key, computed);
    cached = std::move(computed);
  }
  bool any = false;
  for (size_t t = 0; t < cached->bytes_after.size(); ++t) {
    if (cached->bytes_after[t] > bytes_after) mask[t / 32] &= ~(uint32_t{1} << (t % 32));
  }
  for (uint32_t w : mask) any = any || w != 0;
  // If no token can end in time, the budget is ignored: the whole mask.
  if (!any) std::copy(cached->allowed.begin(), cached->allowed.end(), mask.begin());
}

// Walks the tokens in byte order: a token's first bytes are those it shares
// with the one before, whose states are kept by depth, so each distinct
// prefix is matched once; a prefix no stack accepts rules out every token
// that starts with it.
int64_t GrammarMatcher::compute_mask(std::span<uint32_t> mask, int64_t max_bytes_after,
                                     std::span<uint8_t> bytes_after) {
  const TokenVocabulary& vocab = grammar_->vocabulary();
  int64_t most_bytes_after = 0;
  if (PushdownWalker::can_end(state_)) {
    for (int32_t eos : vocab.eos_token_ids()) {
      if (eos >= 0 && eos < vocab.size()) set_bit(mask, eos);
    }
  }
  // A walk makes many stacks; they go in a per-thread arena, not the matcher's.
  thread_local StackArena scratch;
  thread_local std::vector<StackSet> by_depth;
  scratch.clear();
  PushdownWalker walker(grammar_->rules(), scratch);
  thread_local BytesToFinish finish;
  finish.reset(grammar_->rules(), scratch);
  by_depth.resize(1);
  by_depth[0] = copy_stacks(arena_, state_, scratch);
  std::erase(by_depth[0], StackArena::kEmpty);

  const std::vector<int32_t>& ids = vocab.sorted_ids();
  const std::vector<int32_t>& shared = vocab.shared_prefix();
  size_t valid = 0;  // by_depth[0..valid] hold the states of the previous token's prefixes
  for (size_t i = 0; i < ids.size();) {
    const std::string& bytes = vocab.bytes(ids[i]);
    size_t d = std::min(static_cast<size_t>(shared[i]), valid);
    bool dead = false;
    for (; d < bytes.size(); ++d) {
      if (by_depth.size() < d + 2) by_depth.resize(d + 2);
      walker.advance(by_depth[d], static_cast<uint8_t>(bytes[d]), by_depth[d + 1]);
      if (by_depth[d + 1].empty()) {
        dead = true;
        break;
      }
    }
    valid = d;
    if (!dead) {
      const int64_t after = finish.of(by_depth[d]);
      if (after <= max_bytes_after) {
        set_bit(mask, ids[i]);
        most_bytes_after = std::max(most_bytes_after, after);
        if (!bytes_after.empty())
          bytes_after[static_cast<size_t>(ids[i])] =
              static_cast<uint8_t>(std::min<int64_t>(after, StateMask::kSaturated));
      }
      ++i;
      continue;
    }
    // Every following token that starts with bytes[0..d] dies here too.
    for (++i; i < ids.size() && static_cast<size_t>(shared[i]) > d; ++i) {
    }
  }
  if (scratch.size() > kScratchKept) scratch = StackArena();
  return most_bytes_after;
}

}  // namespace vllm::structured
