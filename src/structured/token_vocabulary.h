// The vocabulary as the grammar matcher sees it: the bytes each token adds
// to the text, sorted so that tokens sharing a prefix are neighbours (the
// mask walk matches a shared prefix once, like a walk down a trie).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vllm::structured {

class TokenVocabulary {
 public:
  // token_bytes[id]: the bytes token `id` adds; empty for tokens that no
  // grammar may produce (special tokens, unused ids).  EOS tokens are
  // allowed exactly where the grammar may end.
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> eos_token_ids);

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eos_token_ids() const { return eos_; }
  bool is_eos(int32_t id) const;

  // The matchable tokens in byte order, and how many leading bytes each
  // shares with the one before it.
  const std::vector<int32_t>& sorted_ids() const { return sorted_; }
  const std::vector<int32_t>& shared_prefix() const { return shared_prefix_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> eos_;
  std::vector<int32_t> sorted_;
  std::vector<int32_t> shared_prefix_;
};

}  // namespace vllm::structured
