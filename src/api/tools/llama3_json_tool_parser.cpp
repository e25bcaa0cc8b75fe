#include "api/tools/llama3_json_tool_parser.h"

#include "api/tools/json_text.h"

namespace vllm::api {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

}  // namespace

ToolSectionStart Llama3JsonToolParser::find_start(std::string_view text) const {
  const ToolSectionStart leading = find_leading_start(text, '{');
  if (leading.started) return leading;
  const ToolSectionStart tagged = find_marker_start(text, kPythonTag);
  if (tagged.started) return tagged;
  return {false, std::min(leading.content_end, tagged.content_end)};
}

std::optional<std::vector<ToolCall>> Llama3JsonToolParser::parse_calls(std::string_view section) const {
  size_t at = skip_json_whitespace(section);
  if (section.substr(at, kPythonTag.size()) == kPythonTag) at = skip_json_whitespace(section, at + kPythonTag.size());
  std::vector<ToolCall> calls;
  while (at < section.size()) {
    size_t end = 0;
    std::optional<OrderedJson> json = parse_json_container_at(section, at, end);
    if (!json) return std::nullopt;
    std::optional<ToolCall> call = tool_call_from_json(*json, {"parameters", "arguments"});
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    at = skip_json_whitespace(section, end);
    if (at < section.size() && section[at] == ';') at = skip_json_whitespace(section, at + 1);
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace vllm::api
