// The bodies of POST /tokenize and /detokenize (docs/API.md §4): every field
// type-checked, a wrong type or an id outside the vocabulary an error naming
// the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/chat_prompt.h"
#include "tokenizer/tokenizer.h"

namespace vllm::server {

struct TokenizeRequest {
  std::string text;  // the prompt, or the chat rendered by the template
  bool add_special_tokens = true;
  bool return_token_strs = false;
};

// The completion form {"prompt": text} or the chat form {"messages": [...]}
// (its render gives up once `stop` is requested).
Result<TokenizeRequest> parse_tokenize_request(const std::string& body, const ChatRenderer& renderer,
                                               std::stop_token stop = {});

// {"tokens": [id, ...]}, every id inside [0, vocab_size).
Result<std::vector<int32_t>> parse_detokenize_request(const std::string& body, int32_t vocab_size);

}  // namespace vllm::server
