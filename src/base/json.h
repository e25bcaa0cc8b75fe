// JSON through nlohmann::json, with parsing errors turned into Status so that
// no exception leaves the module that parses.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace vllm {

using Json = nlohmann::json;
// Keeps object keys in document order (Python dict semantics), for values a
// template may print (tools | tojson).  Not for large objects: its inserts
// are linear.
using OrderedJson = nlohmann::ordered_json;

// Parses `text`; `what` names the source (a file path) in the error.
Result<Json> parse_json(const std::string& text, const std::string& what);
Result<Json> read_json_file(const std::string& path);

// Compact text of `value`.  Bytes that are not UTF-8 (a client's URL, the
// text of a token that is half a character) become U+FFFD instead of
// throwing: output never fails on what the input held.
template <typename JsonValue>
std::string dump_json(const JsonValue& value) {
  return value.dump(-1, ' ', false, JsonValue::error_handler_t::replace);
}

}  // namespace vllm
