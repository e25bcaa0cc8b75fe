// Hermes-style calls (Hermes 2/3, Qwen 2.5 and 3): each call is a JSON object
// {"name": ..., "arguments": {...}} between <tool_call> and </tool_call>,
// after any content; the last one may be cut off before its closing tag.
#pragma once

#include "api/tools/tool_call_parser.h"

namespace vllm::api {

class HermesToolParser : public ToolCallParser {
 public:
  ToolSectionStart find_start(std::string_view text) const override;
  std::optional<std::vector<ToolCall>> parse_calls(std::string_view section) const override;
  bool needs_special_tokens() const override { return true; }
};

}  // namespace vllm::api
