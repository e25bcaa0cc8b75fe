// Logprobs in the OpenAI shapes (docs/API.md §7.4, §7.5).  Completions:
// {"tokens", "token_logprobs", "top_logprobs": [{piece: logprob}],
// "text_offset"}; chat: {"content": [{"token", "logprob", "bytes",
// "top_logprobs": [k x {"token", "logprob", "bytes"}]}]}.  A token's string
// is the text it adds after the token before it (so the strings of a
// sequence concatenate to its text); -inf is reported as -9999.0.
#pragma once

#include <cstdint>
#include <vector>

#include "base/json.h"
#include "engine/sample/logprobs.h"
#include "tokenizer/tokenizer.h"

namespace vllm::server {

// Where a sequence's logprobs have got to.
struct LogprobsCursor {
  int32_t previous_token = -1;  // context for the next token's string (-1: none)
  int64_t text_offset = 0;      // characters of text before the next token (completions)
};

class LogprobsFormatter {
 public:
  LogprobsFormatter(const Tokenizer& tokenizer, bool chat, int32_t top_n)
      : tokenizer_(tokenizer), chat_(chat), top_n_(top_n) {}

  // The shape with no tokens yet.
  OrderedJson empty() const;

  // Adds one entry per token to `out` (from empty()).
  void append(OrderedJson& out, const std::vector<int32_t>& token_ids, const std::vector<PositionLogprobs>& logprobs,
              LogprobsCursor& cursor) const;

 private:
  std::string piece(int32_t previous, int32_t id) const;

  const Tokenizer& tokenizer_;
  bool chat_;
  int32_t top_n_;
};

// vLLM's prompt_logprobs: null for the first prompt token, then per token
// {"<id>": {"logprob", "rank", "decoded_token"}} for the prompt's token and
// the top N (the prompt's first when it is among them too).
OrderedJson prompt_logprobs_json(const Tokenizer& tokenizer, const std::vector<PositionLogprobs>& positions);

}  // namespace vllm::server
