// Python-style calls (Llama 3.2 / 4 and others prompted for them): the
// whole output is a Python list of calls with keyword arguments of literal
// values, `[get_weather(city="Paris", days=3), get_time()]`.  The literals
// (strings, numbers, True/False/None, lists, tuples, dicts) become JSON.
#pragma once

#include "api/tools/tool_call_parser.h"

namespace vllm::api {

class PythonicToolParser : public ToolCallParser {
 public:
  ToolSectionStart find_start(std::string_view text) const override;
  std::optional<std::vector<ToolCall>> parse_calls(std::string_view section) const override;
};

}  // namespace vllm::api
