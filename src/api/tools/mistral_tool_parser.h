// Mistral calls: after the [TOOL_CALLS] token, either a JSON list of
// {"name": ..., "arguments": {...}} (tokenizers before v11), or each call as
// its name followed by its arguments object, `name{...}` or
// `name[ARGS]{...}`, each after its own [TOOL_CALLS] (v11 and later).
// Mistral's templates take call ids of 9 letters and digits.
#pragma once

#include "api/tools/tool_call_parser.h"

namespace vllm::api {

class MistralToolParser : public ToolCallParser {
 public:
  ToolSectionStart find_start(std::string_view text) const override;
  std::optional<std::vector<ToolCall>> parse_calls(std::string_view section) const override;
  bool needs_special_tokens() const override { return true; }
  std::string make_call_id(std::string_view random_hex) const override;
};

}  // namespace vllm::api
