#include "api/structured_output_fields.h"

#include "api/json_fields.h"

namespace vllm::api {
namespace {

using structured::ConstraintKind;
using structured::StructuredOutputSpec;

Status bad(const std::string& message, const std::string& field) { return invalid_argument(message).with_param(field); }

// A schema given as an object or as its JSON text.
Result<std::string> schema_text(const Json& v, const std::string& field) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() || v.is_boolean()) return v.dump();
  return bad("field '" + field + "' must be a JSON schema (an object, or its JSON text)", field);
}

Result<std::vector<std::string>> choices(const Json& v, const std::string& field) {
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const Json& c : v) {
      if (!c.is_string()) break;
      out.push_back(c.get<std::string>());
    }
    if (out.size() == v.size() && !out.empty()) return out;
  }
  return bad("field '" + field + "' must be a non-empty list of strings", field);
}

Result<StructuredOutputSpec> spec(ConstraintKind kind, const Json& v, const std::string& field) {
  StructuredOutputSpec s;
  s.kind = kind;
  s.request_field = field;
  switch (kind) {
    case ConstraintKind::kJsonSchema: {
      VLLM_ASSIGN_OR_RETURN(s.source, schema_text(v, field));
      break;
    }
    case ConstraintKind::kChoice: {
      VLLM_ASSIGN_OR_RETURN(s.choices, choices(v, field));
      break;
    }
    case ConstraintKind::kRegex:
    case ConstraintKind::kGrammar: {
      VLLM_ASSIGN_OR_RETURN(s.source, read_string(v, field));
      break;
    }
    case ConstraintKind::kJsonObject:
      break;
  }
  return s;
}

// vLLM's StructuredOutputsParams: one constraint, and options.
Status read_structured_outputs(StructuredOutputFields& fields, const Json& v) {
  const std::string field = "structured_outputs";
  if (!v.is_object()) return bad("field 'structured_outputs' must be an object", field);
  const size_t first = fields.size();
  bool any_whitespace = true;
  for (const auto& [key, value] : v.items()) {
    if (value.is_null()) continue;
    const std::string name = field + "." + key;
    if (key == "json") {
      VLLM_ASSIGN_OR_RETURN(StructuredOutputSpec s, spec(ConstraintKind::kJsonSchema, value, name));
      fields.push_back(std::move(s));
    } else if (key == "regex") {
      VLLM_ASSIGN_OR_RETURN(StructuredOutputSpec s, spec(ConstraintKind::kRegex, value, name));
      fields.push_back(std::move(s));
    } else if (key == "choice") {
      VLLM_ASSIGN_OR_RETURN(StructuredOutputSpec s, spec(ConstraintKind::kChoice, value, name));
      fields.push_back(std::move(s));
    } else if (key == "grammar") {
      VLLM_ASSIGN_OR_RETURN(StructuredOutputSpec s, spec(ConstraintKind::kGrammar, value, name));
      fields.push_back(std::move(s));
    } else if (key == "json_object") {
      VLLM_ASSIGN_OR_RETURN(bool on, read_bool(value, name));
      if (on) fields.push_back(StructuredOutputSpec{ConstraintKind::kJsonObject, "", {}, name});
    } else if (key == "disable_fallback" || key == "disable_additional_properties") {
      // There is one backend, so nothing to fall back from; and no schema
      // without additionalProperties: true gets properties it does not name.
      VLLM_ASSIGN_OR_RETURN(bool ignored, read_bool(value, name));
      (void)ignored;
    } else if (key == "disable_any_whitespace") {
      VLLM_ASSIGN_OR_RETURN(bool off, read_bool(value, name));
      any_whitespace = !off;
    } else if (key == "whitespace_pattern" || key == "structural_tag") {
      return bad("structured_outputs." + key + " is not supported yet", name);
    } else {
      return bad("unknown field '" + key + "' in structured_outputs", name);
    }
  }
  for (size_t f = first; f < fields.size(); ++f) fields[f].any_whitespace = any_whitespace;
  return Status::ok();
}

// OpenAI's response_format: text (no constraint), json_object, json_schema.
Status read_response_format(StructuredOutputFields& fields, const Json& v) {
  const std::string field = "response_format";
  if (!v.is_object() || !v.contains("type") || !v["type"].is_string()) {
    return bad("field 'response_format' must be an object with a string 'type'", field);
  }
  const std::string type = v["type"].get<std::string>();
  if (type == "text") return Status::ok();
  if (type == "json_object") {
    fields.push_back(StructuredOutputSpec{ConstraintKind::kJsonObject, "", {}, field});
    return Status::ok();
  }
  if (type == "json_schema") {
    if (!v.contains("json_schema") || !v["json_schema"].is_object()) {
      return bad("response_format of type json_schema needs a 'json_schema' object", field);
    }
    const Json& js = v["json_schema"];
    // OpenAI's json_schema without a schema allows any JSON value; so does ours.
    const Json schema = js.contains("schema") && !js["schema"].is_null() ? js["schema"] : Json::object();
    VLLM_ASSIGN_OR_RETURN(StructuredOutputSpec s, spec(ConstraintKind::kJsonSchema, schema, field));
    fields.push_back(std::move(s));
    return Status::ok();
  }
  return bad("response_format type '" + type + "' is not supported (text, json_object or json_schema)", field);
}

}  // namespace

Result<bool> read_structured_output_field(StructuredOutputFields& fields, const std::string& key, const Json& value) {
  if (key == "structured_outputs") {
    if (!value.is_null()) VLLM_RETURN_IF_ERROR(read_structured_outputs(fields, value));
  } else if (key == "response_format") {
    if (!value.is_null()) VLLM_RETURN_IF_ERROR(read_response_format(fields, value));
  } else if (key == "guided_json" || key == "guided_regex" || key == "guided_choice" || key == "guided_grammar") {
    if (value.is_null()) return true;
    const ConstraintKind kind = key == "guided_json"     ? ConstraintKind::kJsonSchema
                                : key == "guided_regex"  ? ConstraintKind::kRegex
                                : key == "guided_choice" ? ConstraintKind::kChoice
                                                         : ConstraintKind::kGrammar;
    VLLM_ASSIGN_OR_RETURN(StructuredOutputSpec s, spec(kind, value, key));
    fields.push_back(std::move(s));
  } else if (key == "guided_decoding_backend") {
    // One backend serves every name a client may give.
    if (!value.is_null()) VLLM_RETURN_IF_ERROR(read_string(value, key).status());
  } else if (key == "guided_whitespace_pattern") {
    if (!value.is_null()) return bad("guided_whitespace_pattern is not supported yet", key);
  } else {
    return false;
  }
  return true;
}

Result<std::optional<structured::StructuredOutputSpec>> single_constraint(const StructuredOutputFields& fields) {
  if (fields.size() > 1) {
    return bad("only one kind of structured output may be given, got " + fields[0].request_field + " and " +
                   fields[1].request_field,
               fields[1].request_field);
  }
  if (fields.empty()) return std::optional<structured::StructuredOutputSpec>();
  return std::optional<structured::StructuredOutputSpec>(fields[0]);
}

void keep_schema_key_order(std::string_view request_text, std::optional<structured::StructuredOutputSpec>& spec) {
  if (!spec || spec->kind != ConstraintKind::kJsonSchema) return;
  keep_parsed_schema_key_order(OrderedJson::parse(request_text, nullptr, false), spec);
}

void keep_parsed_schema_key_order(const OrderedJson& request, std::optional<structured::StructuredOutputSpec>& spec) {
  if (!spec || spec->kind != ConstraintKind::kJsonSchema || !request.is_object()) return;
  const OrderedJson* node = nullptr;
  const std::string& field = spec->request_field;
  if (field == "guided_json" && request.contains("guided_json")) {
    node = &request["guided_json"];
  } else if (field == "structured_outputs.json" && request.contains("structured_outputs") &&
             request["structured_outputs"].contains("json")) {
    node = &request["structured_outputs"]["json"];
  } else if (field == "response_format" && request.contains("response_format")) {
    const OrderedJson& format = request["response_format"];
    if (format.contains("json_schema") && format["json_schema"].contains("schema")) {
      node = &format["json_schema"]["schema"];
    }
  }
  // A schema sent as text kept its order already.
  if (node != nullptr && node->is_object()) spec->source = node->dump();
}

}  // namespace vllm::api
