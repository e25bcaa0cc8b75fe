// One chat choice's generated text as the parts of an assistant message:
// reasoning (with --reasoning-parser), content, and tool calls (a forced
// choice's, or those --tool-call-parser finds when the model chooses).
// Streamed and whole answers go through the same pushes, so a stream's
// deltas add up to the whole answer.  Tool calls are emitted whole, when the
// output ends, except a named choice's arguments, which stream as written.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/reasoning/reasoning_parser.h"
#include "api/tools/tool_call_parser.h"
#include "api/tools/tool_request.h"

namespace vllm::api {

struct ToolCallDelta {
  size_t index = 0;
  bool opens = false;  // the call's first delta: its id, type and name go with it
  std::string name;
  std::string arguments;
};

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallDelta> tool_calls;

  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
  void append(ChatDelta&& more);
};

struct ChatOutputOptions {
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string function_name;                    // kNamed
  bool parallel_tool_calls = true;              // false: an auto answer keeps its first call
  const ToolCallParser* tool_parser = nullptr;  // kAuto
  std::optional<ReasoningFormat> reasoning;
};

class ChatOutputParser {
 public:
  explicit ChatOutputParser(ChatOutputOptions options);

  ChatDelta push(std::string_view text);
  ChatDelta finish();

  // The answer is tool calls that the model chose or was required to make
  // (finish_reason "tool_calls"); a named choice's call is not.
  bool chose_tools() const { return chose_tools_; }

 private:
  void take_content(std::string_view content, bool final, ChatDelta& out);
  // The calls of an auto or required answer, from the text held back for them.
  void emit_calls(std::vector<ToolCall> calls, ChatDelta& out);

  ChatOutputOptions options_;
  std::optional<ReasoningSplitter> reasoning_;
  std::string content_;  // auto and required: the content so far
  size_t emitted_ = 0;   // bytes of content_ already emitted as content
  bool section_started_ = false;
  bool named_opened_ = false;
  bool chose_tools_ = false;
};

}  // namespace vllm::api
