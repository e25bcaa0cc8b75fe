// The "model" of tokenizer.json: one pre-tokenized word -> ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vllm {

class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;
  // Appends the ids of one pre-tokenized word to `out`.
  virtual void tokenize(std::string_view word, std::vector<int32_t>& out) const = 0;
  virtual const std::string& id_to_token(int32_t id) const = 0;  // "" if absent
  virtual int32_t vocab_size() const = 0;
  // Whether `id` is a byte-fallback token "<0xNN>" (with byte_fallback on).
  virtual bool is_byte_token(int32_t) const { return false; }
};

}  // namespace vllm
