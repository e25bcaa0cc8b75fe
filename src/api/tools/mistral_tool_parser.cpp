#include "api/tools/mistral_tool_parser.h"

#include "api/tools/json_text.h"

namespace vllm::api {
namespace {

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";
constexpr std::string_view kArgs = "[ARGS]";

// The v11 form: name, optional [ARGS], the arguments object.
std::optional<ToolCall> named_call(std::string_view text, size_t& at) {
  const size_t brace = text.find('{', at);
  if (brace == std::string_view::npos) return std::nullopt;
  std::string_view name = text.substr(at, brace - at);
  if (name.size() >= kArgs.size() && name.substr(name.size() - kArgs.size()) == kArgs) {
    name.remove_suffix(kArgs.size());
  }
  while (!name.empty() && (name.back() == ' ' || name.back() == '\n')) name.remove_suffix(1);
  if (name.empty()) return std::nullopt;
  size_t end = 0;
  std::optional<OrderedJson> arguments = parse_json_container_at(text, brace, end);
  if (!arguments || !arguments->is_object()) return std::nullopt;
  at = end;
  return ToolCall{std::string(name), python_json_dumps(*arguments)};
}

}  // namespace

ToolSectionStart MistralToolParser::find_start(std::string_view text) const {
  return find_marker_start(text, kToolCalls);
}

std::optional<std::vector<ToolCall>> MistralToolParser::parse_calls(std::string_view section) const {
  std::vector<ToolCall> calls;
  size_t at = section.find(kToolCalls);
  while (at != std::string_view::npos) {
    at = skip_json_whitespace(section, at + kToolCalls.size());
    if (at < section.size() && section[at] == '[') {
      size_t end = 0;
      std::optional<OrderedJson> list = parse_json_container_at(section, at, end);
      if (!list || !list->is_array()) return std::nullopt;
      for (const OrderedJson& item : *list) {
        std::optional<ToolCall> call = tool_call_from_json(item, {"arguments"});
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
      }
      at = end;
    } else {
      std::optional<ToolCall> call = named_call(section, at);
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
    at = section.find(kToolCalls, at);
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::string MistralToolParser::make_call_id(std::string_view random_hex) const {
  // Nine of the random digits: letters and digits, as Mistral's templates check.
  return std::string(random_hex.substr(0, 9));
}

}  // namespace vllm::api
