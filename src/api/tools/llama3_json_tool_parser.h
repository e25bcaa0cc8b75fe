// Llama 3.1 / 3.2 JSON calls: the output is the call itself, a JSON object
// {"name": ..., "parameters": {...}} (or "arguments"), perhaps after
// <|python_tag|>, several of them separated by ";".
#pragma once

#include "api/tools/tool_call_parser.h"

namespace vllm::api {

class Llama3JsonToolParser : public ToolCallParser {
 public:
  ToolSectionStart find_start(std::string_view text) const override;
  std::optional<std::vector<ToolCall>> parse_calls(std::string_view section) const override;
};

}  // namespace vllm::api
