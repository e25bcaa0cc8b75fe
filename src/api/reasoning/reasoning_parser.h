// The thinking part of a reasoning model's output (`--reasoning-parser`):
// DeepSeek-R1 and Qwen3 think between <think> and </think> before they
// answer, and the API returns the two apart, the thought as
// `reasoning_content` and the answer as `content`.  A splitter reads one
// output as it streams, holding back only the bytes that may begin a marker,
// so streamed and whole answers split alike.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm::api {

// How one model family marks its thinking.
struct ReasoningFormat {
  std::string start = "<think>";  // skipped where the output begins with it
  std::string end = "</think>";   // dropped; what follows is the answer
  // Markers that end the thinking without an end marker and begin the
  // answer themselves (Qwen3's <tool_call>).
  std::vector<std::string> implicit_ends;
  // Where the chat template opened the thinking in the prompt, the output
  // starts inside it; otherwise (thinking switched off) it is all answer.
  bool thinking = true;
};

// deepseek_r1, qwen3; `chat_template_kwargs` may switch Qwen3's thinking
// off (enable_thinking: false).  An error names the parsers there are.
Result<ReasoningFormat> reasoning_format(const std::string& parser, const Json& chat_template_kwargs);
Status check_reasoning_parser_name(const std::string& parser);

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(ReasoningFormat format);

  // The next piece of the output's text.
  ReasoningDelta push(std::string_view text);
  // The output ended: what was held back.  An output that never closed its
  // thinking (cut off by max_tokens) is all reasoning, as vLLM reports it.
  ReasoningDelta finish();

 private:
  enum class State { kOpening, kThinking, kAnswering };

  // Moves what `pending_` settles into `out`; keeps what may still be a marker.
  void settle(ReasoningDelta& out, bool final);

  ReasoningFormat format_;
  State state_;
  std::string pending_;
};

}  // namespace vllm::api
