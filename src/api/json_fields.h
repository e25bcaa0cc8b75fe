// Typed reads of request fields from JSON bodies: a wrong type is an error
// that names the field (and carries it as the Status's param), never a
// silent conversion.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm::api {

// The bounds every request body and input line keeps (base/json.h): deep
// enough for any real tool schema, wide enough for a long prompt's token ids.
inline constexpr JsonLimits kRequestJsonLimits{};

// `text` as a JSON object within kRequestJsonLimits; the error says which
// limit it passed, or that it is not valid JSON, or not an object.
Result<Json> parse_json_object(std::string_view text);

Result<int64_t> read_integer(const Json& value, const std::string& field);
Result<int32_t> read_int32(const Json& value, const std::string& field);
Result<double> read_number(const Json& value, const std::string& field);
Result<bool> read_bool(const Json& value, const std::string& field);
Result<std::string> read_string(const Json& value, const std::string& field);
// null reads as "absent".
Result<std::optional<int32_t>> read_optional_int32(const Json& value, const std::string& field);
Result<std::vector<int32_t>> read_token_ids(const Json& value, const std::string& field);

}  // namespace vllm::api
