#include "api/tools/tool_call_parser.h"

#include "api/tools/hermes_tool_parser.h"
#include "api/tools/json_text.h"
#include "api/tools/llama3_json_tool_parser.h"
#include "api/tools/mistral_tool_parser.h"
#include "api/tools/pythonic_tool_parser.h"

namespace vllm::api {

std::string default_tool_call_id(std::string_view random_hex) { return "chatcmpl-tool-" + std::string(random_hex); }

std::string ToolCallParser::make_call_id(std::string_view random_hex) const { return default_tool_call_id(random_hex); }

Result<std::unique_ptr<ToolCallParser>> make_tool_call_parser(const std::string& name) {
  if (name == "hermes") return std::unique_ptr<ToolCallParser>(new HermesToolParser());
  if (name == "llama3_json") return std::unique_ptr<ToolCallParser>(new Llama3JsonToolParser());
  if (name == "mistral") return std::unique_ptr<ToolCallParser>(new MistralToolParser());
  if (name == "pythonic") return std::unique_ptr<ToolCallParser>(new PythonicToolParser());
  return invalid_argument("unknown --tool-call-parser '" + name + "' (hermes, llama3_json, mistral, pythonic)");
}

std::optional<ToolCall> tool_call_from_json(const OrderedJson& call,
                                            std::initializer_list<const char*> arguments_keys) {
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
  for (const char* key : arguments_keys) {
    if (!call.contains(key)) continue;
    const OrderedJson& arguments = call[key];
    if (arguments.is_object()) return ToolCall{call["name"].get<std::string>(), python_json_dumps(arguments)};
    // Some models write the arguments object as a JSON string.
    if (!arguments.is_string()) return std::nullopt;
    const OrderedJson parsed = OrderedJson::parse(arguments.get<std::string>(), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
    return ToolCall{call["name"].get<std::string>(), python_json_dumps(parsed)};
  }
  return std::nullopt;
}

ToolSectionStart find_marker_start(std::string_view text, std::string_view marker) {
  const size_t at = text.find(marker);
  if (at != std::string_view::npos) return {true, at};
  return {false, text.size() - partial_marker_length(text, marker)};
}

ToolSectionStart find_leading_start(std::string_view text, char first_byte) {
  const size_t first = skip_json_whitespace(text);
  if (first == text.size()) return {false, 0};  // only whitespace yet: it may lead the calls
  if (text[first] == first_byte) return {true, 0};
  return {false, text.size()};
}

}  // namespace vllm::api
