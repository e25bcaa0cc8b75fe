#include "tokenizer/added_vocabulary.h"

#include <algorithm>

namespace vllm {
namespace {

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
    if (t.content.empty()) return invalid_argument("tokenizer.json: added token " + std::to_string(t.id) + " is empty");
    vocab.by_id_[t.id] = vocab.tokens_.size();
    vocab.tokens_.push_back(std::move(t));
  }
  for (size_t i = 0; i < vocab.tokens_.size(); ++i) {
    vocab.by_first_byte_[static_cast<uint8_t>(vocab.tokens_[i].content[0])].push_back(i);
  }
  for (auto& list : vocab.by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return vocab.tokens_[a].content.size() > vocab.tokens_[b].content.size();
    });
  }
  return vocab;
}

std::vector<TextSegment> AddedVocabulary::split(std::string_view text) const {
  std::vector<TextSegment> out;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const AddedToken* match = nullptr;
    for (size_t idx : by_first_byte_[static_cast<uint8_t>(text[i])]) {
      const AddedToken& t = tokens_[idx];
      if (text.compare(i, t.content.size(), t.content) == 0) {
        match = &t;
        break;  // candidates are longest first
      }
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

const AddedToken* AddedVocabulary::find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

}  // namespace vllm
