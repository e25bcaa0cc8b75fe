#include "structured/grammar_matcher.h"

#include <algorithm>

#include "structured/vocabulary_walk.h"

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
  if (checkpoints_out_ == 0 && arena_.size() > kCompactAfter) compact();
  return true;
}

GrammarMatcher::Checkpoint GrammarMatcher::checkpoint() {
  ++checkpoints_out_;
  return {state_, ended_};
}

void GrammarMatcher::rollback(Checkpoint checkpoint) {
  state_ = std::move(checkpoint.state);
  ended_ = checkpoint.ended;
  if (--checkpoints_out_ == 0 && arena_.size() > kCompactAfter) compact();
}

int32_t GrammarMatcher::num_accepted_prefix(std::span<const int32_t> tokens) {
  Checkpoint start = checkpoint();
  int32_t accepted = 0;
  while (accepted < static_cast<int32_t>(tokens.size()) && accept_token(tokens[static_cast<size_t>(accepted)])) {
    ++accepted;
  }
  rollback(std::move(start));
  return accepted;
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
  // Near the end of the budget some tokens would leave too much to write:
  // they are dropped, by the bytes each leaves (kept with the state's mask).
  const int64_t bytes_after = token_budget == INT64_MAX ? token_budget : token_budget - 1;
  const bool near_end = bytes_after < StateMask::kSaturated;
  std::shared_ptr<const StateMask> cached = grammar_->cached_mask(key);
  if (!cached || (near_end && cached->most_bytes_to_finish > bytes_after && cached->bytes_after.empty())) {
    auto computed = std::make_shared<StateMask>(state_mask(near_end));
    // Counts no request this close to the end needs are not kept.
    if (computed->most_bytes_to_finish <= bytes_after) computed->bytes_after = {};
    if (cached) {
      grammar_->replace_mask(key, computed);
    } else {
      grammar_->store_mask(key, computed);
    }
    cached = std::move(computed);
  }
  std::copy(cached->allowed.begin(), cached->allowed.end(), mask.begin());
  if (cached->most_bytes_to_finish <= bytes_after) return;
  if (!near_end) {
    // Far from the end still, but some token leaves more than the counts
    // hold: a walk of its own (rare: a budget of hundreds of tokens).
    std::fill(mask.begin(), mask.end(), 0u);
    compute_mask(mask, bytes_after);
    if (std::any_of(mask.begin(), mask.end(), [](uint32_t w) { return w != 0; })) return;
    std::copy(cached->allowed.begin(), cached->allowed.end(), mask.begin());
    return;
  }
  bool any = false;
  for (size_t t = 0; t < cached->bytes_after.size(); ++t) {
    if (cached->bytes_after[t] > bytes_after) mask[t / 32] &= ~(uint32_t{1} << (t % 32));
  }
  for (uint32_t w : mask) any = any || w != 0;
  // If no token can end in time, the budget is ignored: the whole mask.
  if (!any) std::copy(cached->allowed.begin(), cached->allowed.end(), mask.begin());
}

StateMask GrammarMatcher::state_mask(bool with_bytes_after) {
  StateMask out;
  out.allowed.assign(bitmask_words(grammar_->vocabulary().size()), 0u);
  if (with_bytes_after) out.bytes_after.assign(static_cast<size_t>(grammar_->vocabulary().size()), 0);
  out.most_bytes_to_finish = compute_mask(out.allowed, PushdownRules::kUnreachable, out.bytes_after);
  return out;
}

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
  scratch.clear();
  walk_vocabulary(grammar_->rules(), scratch, vocab, copy_stacks(arena_, state_, scratch),
                  [&](int32_t token, int64_t left) {
                    if (left > max_bytes_after) return;
                    set_bit(mask, token);
                    most_bytes_after = std::max(most_bytes_after, left);
                    if (!bytes_after.empty())
                      bytes_after[static_cast<size_t>(token)] =
                          static_cast<uint8_t>(std::min<int64_t>(left, StateMask::kSaturated));
                  });
  if (scratch.size() > kScratchKept) scratch = StackArena();
  return most_bytes_after;
}

}  // namespace vllm::structured
