// The tool fields of a chat request (OpenAI's `tools`, `tool_choice`,
// `parallel_tool_calls`) as vLLM reads them, and the constraint that makes
// a forced choice valid: "required" and a named function are decoded under
// a JSON schema of the calls, so their arguments always parse.
#pragma once

#include <optional>
#include <string>

#include "base/json.h"
#include "base/status.h"
#include "structured/structured_output.h"

namespace vllm::api {

enum class ToolChoice {
  kNone,      // plain content (the tools still reach the chat template, as vLLM)
  kAuto,      // the model chooses; --tool-call-parser reads its calls
  kRequired,  // at least one call, of any tool
  kNamed,     // one call of the named function
};

struct ToolRequest {
  OrderedJson tools = OrderedJson::array();  // as sent: the chat template's `tools`
  ToolChoice choice = ToolChoice::kNone;
  std::string function_name;  // kNamed
  bool parallel_tool_calls = true;
};

// Reads the fields from the request body (its keys in the order sent: the
// template prints the tools, and a schema's property order is the order
// the model writes).  Errors are 400s naming the field.
Result<ToolRequest> read_tool_request(const OrderedJson& body);

// The schema a required or named choice decodes under; nullopt for none and auto.
Result<std::optional<structured::StructuredOutputSpec>> tool_choice_constraint(const ToolRequest& request);

}  // namespace vllm::api
