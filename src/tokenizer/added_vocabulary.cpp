#include "tokenizer/added_vocabulary.h"

#include <algorithm>
#include <cctype>

namespace vllm {
namespace {

// Letters, digits, '_' and any non-ASCII byte count as word characters.
bool is_word_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u) || c == '_';
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

Result<AddedVocabulary> AddedVocabulary::from_json(const Json& added_tokens) {
  AddedVocabulary vocab;
  if (added_tokens.is_null()) return vocab;
  if (!added_tokens.is_array()) return invalid_argument("tokenizer.json: 'added_tokens' must be a list");
  for (const Json& entry : added_tokens) {
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer() || !entry.contains("content") ||
        !entry["content"].is_string()) {
      return invalid_argument("tokenizer.json: each added token needs an integer 'id' and a string 'content'");
    }
    AddedToken t;
    t.id = entry["id"].get<int32_t>();
    t.content = entry["content"].get<std::string>();
    t.special = entry.value("special", false);
    t.lstrip = entry.value("lstrip", false);
    t.rstrip = entry.value("rstrip", false);
    t.single_word = entry.value("single_word", false);
    // Special tokens are always matched in the raw text.
    t.normalized = entry.value("normalized", !t.special) && !t.special;
    if (t.content.empty()) return invalid_argument("tokenizer.json: added token " + std::to_string(t.id) + " is empty");
    vocab.by_id_[t.id] = vocab.tokens_.size();
    vocab.tokens_.push_back(std::move(t));
  }
  for (size_t i = 0; i < vocab.tokens_.size(); ++i) {
    Trie& trie = vocab.tries_[vocab.tokens_[i].normalized ? 1 : 0];
    int32_t node = 0;
    for (char c : vocab.tokens_[i].content) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(c);
      auto it = trie.children.find(key);
      if (it == trie.children.end()) {
        it = trie.children.emplace(key, static_cast<int32_t>(trie.terminal.size())).first;
        trie.terminal.push_back(-1);
      }
      node = it->second;
    }
    trie.terminal[static_cast<size_t>(node)] = static_cast<int32_t>(i);
    trie.first_byte[static_cast<uint8_t>(vocab.tokens_[i].content[0])] = true;
  }
  return vocab;
}

const AddedToken* AddedVocabulary::longest_match(const Trie& trie, std::string_view text, size_t pos) const {
  if (!trie.first_byte[static_cast<uint8_t>(text[pos])]) return nullptr;
  const AddedToken* best = nullptr;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = trie.children.find((static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]));
    if (it == trie.children.end()) break;
    node = it->second;
    const int32_t t = trie.terminal[static_cast<size_t>(node)];
    if (t >= 0) best = &tokens_[static_cast<size_t>(t)];
  }
  return best;
}

std::vector<TextSegment> AddedVocabulary::split(std::string_view text, bool normalized_pass) const {
  const Trie& trie = tries_[normalized_pass ? 1 : 0];
  std::vector<TextSegment> out;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const AddedToken* match = longest_match(trie, text, i);
    if (match != nullptr && match->single_word &&
        ((i > 0 && is_word_byte(text[i - 1])) ||
         (i + match->content.size() < text.size() && is_word_byte(text[i + match->content.size()])))) {
      match = nullptr;
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    size_t left = i;
    if (match->lstrip) {
      while (left > plain_start && is_space(text[left - 1])) --left;
    }
    size_t right = i + match->content.size();
    if (match->rstrip) {
      while (right < text.size() && is_space(text[right])) ++right;
    }
    if (left > plain_start) out.push_back({text.substr(plain_start, left - plain_start), -1});
    out.push_back({text.substr(left, right - left), match->id});
    plain_start = right;
    i = right;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
  return out;
}

bool AddedVocabulary::is_special(int32_t id) const {
  const AddedToken* t = find(id);
  return t != nullptr && t->special;
}

const AddedToken* AddedVocabulary::find(std::string_view content) const {
  for (const AddedToken& t : tokens_) {
    if (t.content == content) return &t;
  }
  return nullptr;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

}  // namespace vllm
