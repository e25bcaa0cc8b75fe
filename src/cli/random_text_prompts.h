// Random text prompts of a known token count, for servers that refuse
// token-id prompts (llama.cpp's llama-server rejects them on
// /v1/completions): words that the tokenizer encodes as one token each,
// joined by spaces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {

struct TextPrompt {
  std::string text;
  int64_t tokens = 0;  // as `tokenizer` encodes it, without special tokens
};

// `count` prompts of `words` words each; fails if the vocabulary has too few
// one-token words to draw from.
Result<std::vector<TextPrompt>> random_text_prompts(const Tokenizer& tokenizer, int count, int words, uint64_t seed);

}  // namespace vllm::cli
