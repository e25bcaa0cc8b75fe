#include "tokenizer/incremental_detokenizer.h"

#include <algorithm>
#include <utility>

#include "tokenizer/utf8.h"

namespace vllm {
namespace {

// How many context tokens before the first generated one are decoded with it.
constexpr size_t kContextWindowTokens = 5;
// The longest clean-up rule (" n't", " 've", ...).
constexpr size_t kMaxCleanupRuleBytes = 4;

bool ends_with_replacement(const std::string& s) {
  return s.size() >= utf8::kReplacement.size() &&
         s.compare(s.size() - utf8::kReplacement.size(), utf8::kReplacement.size(), utf8::kReplacement) == 0;
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                               std::vector<int32_t> context_ids)
    : tokenizer_(tokenizer),
      skip_special_tokens_(skip_special_tokens),
      ids_(std::move(context_ids)),
      prefix_offset_(ids_.size() - std::min(ids_.size(), kContextWindowTokens)),
      read_offset_(ids_.size()) {}

std::string IncrementalDetokenizer::decode_range(size_t begin, size_t end) const {
  return tokenizer_.decode_uncleaned(std::vector<int32_t>(ids_.begin() + static_cast<std::ptrdiff_t>(begin),
                                                          ids_.begin() + static_cast<std::ptrdiff_t>(end)),
                                     skip_special_tokens_);
}

std::string IncrementalDetokenizer::push(int32_t id) {
  ids_.push_back(id);
  // A run of byte-fallback tokens decodes as a whole (valid UTF-8, or one
  // U+FFFD per byte): wait until the run ends.
  if (tokenizer_.is_byte_token(id)) return "";
  const std::string prefix_text = decode_range(prefix_offset_, read_offset_);
  const std::string new_text = decode_range(prefix_offset_, ids_.size());
  // A trailing U+FFFD may be a byte sequence the next token completes: wait.
  if (new_text.size() <= prefix_text.size() || ends_with_replacement(new_text)) return "";
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  uncleaned_ += new_text.substr(prefix_text.size());
  return release(false);
}

std::string IncrementalDetokenizer::release(bool all) {
  if (!tokenizer_.clean_up_tokenization_spaces()) return std::exchange(uncleaned_, "");
  // A rule match starts with a space and spans at most 4 bytes: cut before
  // any space that a match could still extend past the cut.
  size_t cut = uncleaned_.size();
  for (bool moved = !all; moved;) {
    moved = false;
    for (size_t i = cut >= kMaxCleanupRuleBytes - 1 ? cut - (kMaxCleanupRuleBytes - 1) : 0; i < cut; ++i) {
      if (uncleaned_[i] == ' ') {
        cut = i;
        moved = true;
        break;
      }
    }
  }
  std::string stable = clean_up_tokenization(uncleaned_.substr(0, cut));
  uncleaned_.erase(0, cut);
  return stable;
}

std::string IncrementalDetokenizer::flush() {
  if (read_offset_ < ids_.size()) {
    const std::string prefix_text = decode_range(prefix_offset_, read_offset_);
    const std::string new_text = decode_range(prefix_offset_, ids_.size());
    prefix_offset_ = read_offset_;
    read_offset_ = ids_.size();
    if (new_text.size() > prefix_text.size()) uncleaned_ += new_text.substr(prefix_text.size());
  }
  return release(true);
}

}  // namespace vllm
