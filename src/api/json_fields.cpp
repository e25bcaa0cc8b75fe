#include "api/json_fields.h"

#include <climits>

namespace vllm::api {
namespace {

Status wrong_type(const std::string& field, const char* expected) {
  return invalid_argument("field '" + field + "' must be " + expected).with_param(field);
}

}  // namespace

Result<Json> parse_json_object(std::string_view text) {
  VLLM_ASSIGN_OR_RETURN(Json j, parse_json_within(text, kRequestJsonLimits));
  if (!j.is_object()) return invalid_argument("not a JSON object");
  return j;
}

Result<int64_t> read_integer(const Json& value, const std::string& field) {
  if (!value.is_number_integer()) return wrong_type(field, "an integer");
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return wrong_type(field, "a 64-bit signed integer");
  }
  return value.get<int64_t>();
}

Result<int32_t> read_int32(const Json& value, const std::string& field) {
  VLLM_ASSIGN_OR_RETURN(int64_t x, read_integer(value, field));
  if (x < INT32_MIN || x > INT32_MAX) return wrong_type(field, "a 32-bit integer");
  return static_cast<int32_t>(x);
}

Result<double> read_number(const Json& value, const std::string& field) {
  if (!value.is_number()) return wrong_type(field, "a number");
  return value.get<double>();
}

Result<bool> read_bool(const Json& value, const std::string& field) {
  if (!value.is_boolean()) return wrong_type(field, "true or false");
  return value.get<bool>();
}

Result<std::string> read_string(const Json& value, const std::string& field) {
  if (!value.is_string()) return wrong_type(field, "a string");
  return value.get<std::string>();
}

Result<std::optional<int32_t>> read_optional_int32(const Json& value, const std::string& field) {
  if (value.is_null()) return std::optional<int32_t>();
  VLLM_ASSIGN_OR_RETURN(int32_t x, read_int32(value, field));
  return std::optional<int32_t>(x);
}

Result<std::vector<int32_t>> read_token_ids(const Json& value, const std::string& field) {
  if (!value.is_array()) return wrong_type(field, "an array of token ids");
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (const Json& v : value) {
    if (!v.is_number_integer()) return wrong_type(field, "an array of token ids");
    VLLM_ASSIGN_OR_RETURN(int32_t id, read_int32(v, field));
    ids.push_back(id);
  }
  return ids;
}

}  // namespace vllm::api
