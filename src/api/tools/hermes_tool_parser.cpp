#include "api/tools/hermes_tool_parser.h"

#include "api/tools/json_text.h"

namespace vllm::api {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

}  // namespace

ToolSectionStart HermesToolParser::find_start(std::string_view text) const { return find_marker_start(text, kOpen); }

std::optional<std::vector<ToolCall>> HermesToolParser::parse_calls(std::string_view section) const {
  std::vector<ToolCall> calls;
  size_t at = section.find(kOpen);
  while (at != std::string_view::npos) {
    const size_t body = at + kOpen.size();
    const size_t close = section.find(kClose, body);
    const std::string_view inner =
        section.substr(body, close == std::string_view::npos ? std::string_view::npos : close - body);
    const size_t begin = skip_json_whitespace(inner);
    size_t end = 0;
    std::optional<OrderedJson> json = parse_json_container_at(inner, begin, end);
    if (!json || skip_json_whitespace(inner, end) != inner.size()) return std::nullopt;
    std::optional<ToolCall> call = tool_call_from_json(*json, {"arguments"});
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    if (close == std::string_view::npos) break;
    at = section.find(kOpen, close + kClose.size());
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace vllm::api
