#include "api/tools/tool_request.h"

#include <algorithm>

namespace vllm::api {
namespace {

Status bad(const std::string& message, const char* param) { return invalid_argument(message).with_param(param); }

Status check_tool(const OrderedJson& tool) {
  if (!tool.is_object() || tool.value("type", "") != "function" || !tool.contains("function") ||
      !tool["function"].is_object()) {
    return bad("each tool must be {\"type\": \"function\", \"function\": {...}}", "tools");
  }
  const OrderedJson& function = tool["function"];
  if (!function.contains("name") || !function["name"].is_string() || function["name"].get<std::string>().empty()) {
    return bad("each tool's function needs a non-empty string 'name'", "tools");
  }
  if (function.contains("parameters") && !function["parameters"].is_null() && !function["parameters"].is_object()) {
    return bad("a tool's function 'parameters' must be a JSON schema object", "tools");
  }
  if (function.contains("description") && !function["description"].is_null() && !function["description"].is_string()) {
    return bad("a tool's function 'description' must be a string", "tools");
  }
  return Status::ok();
}

Result<ToolChoice> read_choice(const OrderedJson& v, std::string& function_name) {
  if (v == "none") return ToolChoice::kNone;
  if (v == "auto") return ToolChoice::kAuto;
  if (v == "required") return ToolChoice::kRequired;
  const bool named = v.is_object() && v.value("type", "") == "function" && v.contains("function") &&
                     v["function"].is_object() && v["function"].contains("name") && v["function"]["name"].is_string();
  if (!named) {
    return bad("invalid value for `tool_choice`: " + dump_json(v) +
                   " (only named tools {\"type\": \"function\", \"function\": {\"name\": ...}}, \"none\", \"auto\" "
                   "or \"required\" are supported)",
               "tool_choice");
  }
  function_name = v["function"]["name"].get<std::string>();
  return ToolChoice::kNamed;
}

// The function's parameters schema; a function without one takes an object.
OrderedJson parameters_of(const OrderedJson& tool) {
  const OrderedJson& function = tool["function"];
  if (function.contains("parameters") && function["parameters"].is_object() && !function["parameters"].empty()) {
    return function["parameters"];
  }
  return OrderedJson{{"type", "object"}, {"properties", OrderedJson::object()}};
}

// vLLM's schema of a "required" answer: a list of {"name", "parameters"}
// objects, one branch per tool, the tools' $defs gathered at the root
// where their "#/$defs/..." references look for them.
Result<OrderedJson> required_calls_schema(const ToolRequest& request) {
  OrderedJson branches = OrderedJson::array();
  OrderedJson defs = OrderedJson::object();
  for (const OrderedJson& tool : request.tools) {
    OrderedJson parameters = parameters_of(tool);
    if (parameters.contains("$defs") && parameters["$defs"].is_object()) {
      for (const auto& [name, schema] : parameters["$defs"].items()) {
        if (defs.contains(name) && defs[name] != schema) {
          return bad("tool definition '" + name + "' has multiple schemas, which is not supported", "tools");
        }
        defs[name] = schema;
      }
      parameters.erase("$defs");
    }
    OrderedJson name_schema{{"type", "string"}, {"enum", OrderedJson::array({tool["function"]["name"]})}};
    OrderedJson properties{{"name", std::move(name_schema)}, {"parameters", std::move(parameters)}};
    branches.push_back(
        OrderedJson{{"properties", std::move(properties)}, {"required", OrderedJson::array({"name", "parameters"})}});
  }
  OrderedJson schema{
      {"type", "array"}, {"minItems", 1}, {"items", OrderedJson{{"type", "object"}, {"anyOf", std::move(branches)}}}};
  // vLLM leaves the count to the model; a client that asks for one call gets one.
  if (!request.parallel_tool_calls) schema["maxItems"] = 1;
  if (!defs.empty()) schema["$defs"] = std::move(defs);
  return schema;
}

}  // namespace

Result<ToolRequest> read_tool_request(const OrderedJson& body) {
  ToolRequest r;
  if (body.contains("tools") && !body["tools"].is_null()) {
    if (!body["tools"].is_array()) return bad("field 'tools' must be a list of tools", "tools");
    for (const OrderedJson& tool : body["tools"]) VLLM_RETURN_IF_ERROR(check_tool(tool));
    r.tools = body["tools"];
  }
  const bool has_choice = body.contains("tool_choice") && !body["tool_choice"].is_null();
  if (has_choice) {
    VLLM_ASSIGN_OR_RETURN(r.choice, read_choice(body["tool_choice"], r.function_name));
  } else if (!r.tools.empty()) {
    r.choice = ToolChoice::kAuto;  // OpenAI's default when tools are given
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null()) {
    if (!body["parallel_tool_calls"].is_boolean()) {
      return bad("field 'parallel_tool_calls' must be true or false", "parallel_tool_calls");
    }
    r.parallel_tool_calls = body["parallel_tool_calls"].get<bool>();
  }
  if (r.choice == ToolChoice::kNone) return r;
  if (body.contains("tools") && body["tools"].is_array() && r.tools.empty() && r.choice == ToolChoice::kRequired) {
    r.choice = ToolChoice::kNone;  // "required" of no tools: none, as OpenAI (and vLLM) answer it
    return r;
  }
  if (r.tools.empty()) return bad("when using `tool_choice`, `tools` must be set", "tool_choice");
  if (r.choice == ToolChoice::kNamed) {
    const bool known = std::any_of(r.tools.begin(), r.tools.end(), [&](const OrderedJson& tool) {
      return tool["function"]["name"] == r.function_name;
    });
    if (!known) {
      return bad("the tool specified in `tool_choice` (" + r.function_name + ") does not match any of the `tools`",
                 "tool_choice");
    }
  }
  return r;
}

Result<std::optional<structured::StructuredOutputSpec>> tool_choice_constraint(const ToolRequest& request) {
  if (request.choice != ToolChoice::kRequired && request.choice != ToolChoice::kNamed) {
    return std::optional<structured::StructuredOutputSpec>();
  }
  structured::StructuredOutputSpec spec;
  spec.kind = structured::ConstraintKind::kJsonSchema;
  spec.request_field = "tools";  // a schema error is in a tool's parameters
  if (request.choice == ToolChoice::kRequired) {
    VLLM_ASSIGN_OR_RETURN(const OrderedJson schema, required_calls_schema(request));
    spec.source = schema.dump();
  } else {
    for (const OrderedJson& tool : request.tools) {
      if (tool["function"]["name"] == request.function_name) spec.source = parameters_of(tool).dump();
    }
  }
  return std::optional<structured::StructuredOutputSpec>(std::move(spec));
}

}  // namespace vllm::api
