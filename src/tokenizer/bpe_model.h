// tokenizer.json "model" of type BPE: merge ranks over a vocabulary, with
// SentencePiece-style byte fallback (<0xNN> tokens) and unknown-token fusing.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "tokenizer/tokenizer_model.h"

namespace vllm {

class BpeModel : public TokenizerModel {
 public:
  static Result<BpeModel> from_json(const Json& model);

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override;
  int32_t token_to_id(std::string_view token) const;  // -1 if absent
  const std::string& id_to_token(int32_t id) const override;
  bool is_byte_token(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  struct MergeResult {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }

  void initial_symbols(std::string_view word, std::vector<int32_t>& ids) const;

  // Transparent hashing: look up string_views without building strings.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // Results for words seen before (HF's BPE cache): words repeat a lot in
  // text, and merging is the expensive part.  Shared by the threads that
  // encode; bounded in size.
  struct WordCache {
    std::shared_mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> words;
  };
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, MergeResult> merges_;
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  std::string continuing_subword_prefix_;  // before every character but a word's first
  std::string end_of_word_suffix_;         // after a word's last character
  int32_t byte_ids_[256];                  // id of "<0xNN>", or -1
  std::unique_ptr<WordCache> cache_ = std::make_unique<WordCache>();
};

}  // namespace vllm
