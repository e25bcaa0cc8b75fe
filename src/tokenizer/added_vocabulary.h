// Added tokens of tokenizer.json ("added_tokens"): matched in the raw text
// before normalization, leftmost-longest, as Hugging Face tokenizers does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;       // also swallow whitespace on the left of a match
  bool rstrip = false;       // and on the right
  bool single_word = false;  // match only between non-word characters
  bool normalized = false;   // matched in the normalized text, not the raw one
};

// A piece of input text: either an added token or text for the model.
struct TextSegment {
  std::string_view text;
  int32_t added_token_id = -1;  // >= 0 for an added token
};

class AddedVocabulary {
 public:
  static Result<AddedVocabulary> from_json(const Json& added_tokens);

  // Splits raw text at the tokens with normalized=false, or (normalized_pass)
  // normalized text at those with normalized=true.
  std::vector<TextSegment> split(std::string_view text, bool normalized_pass = false) const;

  bool is_special(int32_t id) const;
  const AddedToken* find(int32_t id) const;
  const AddedToken* find(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  // A byte trie of token contents: node 0 is the root; a child is found by
  // hashing (node, byte); terminal[node] is the index of the token ending
  // there, or -1.
  struct Trie {
    std::unordered_map<uint64_t, int32_t> children;
    std::vector<int32_t> terminal = {-1};
    bool first_byte[256] = {};
  };
  // The longest added token of `trie` starting at text[pos], or nullptr.
  const AddedToken* longest_match(const Trie& trie, std::string_view text, size_t pos) const;

  Trie tries_[2];  // [0]: raw-text tokens, [1]: normalized-text tokens
};

}  // namespace vllm
