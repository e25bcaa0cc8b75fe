// JSON through nlohmann::json, with parsing errors turned into Status so that
// no exception leaves the module that parses.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace vllm {

using Json = nlohmann::json;
// Keeps object keys in document order (Python dict semantics), for values a
// template may print (tools | tojson).  Its inserts are linear: build large
// ones with to_ordered_json, never key by key.
using OrderedJson = nlohmann::ordered_json;

// Bounds on a document from outside (a request body, a line of input),
// checked in a streaming pass before any of it is built: a hostile text costs
// no more memory than itself, and no later recursion over the document
// (dump, conversion, the chat template) can go deeper than max_depth.
struct JsonLimits {
  int max_depth = 64;                         // arrays and objects inside each other
  size_t max_string_bytes = size_t{8} << 20;  // each string and each key
  size_t max_array_items = size_t{1} << 20;
  size_t max_object_members = size_t{1} << 18;
  size_t max_values = size_t{1} << 21;  // every value of the document, containers included
};

// Parses `text`; `what` names the source (a file path) in the error.
Result<Json> parse_json(const std::string& text, const std::string& what);
Result<Json> read_json_file(const std::string& path);

// Parses `text` if it keeps within `limits`.  A syntax error or a limit
// passed is an InvalidArgument status whose message names the limit (or the
// syntax error) and where in the text it was met.
Result<Json> parse_json_within(std::string_view text, const JsonLimits& limits);

// The same value with its object keys in `value`'s (sorted) order, built in
// linear time.  Recursion follows the nesting: only for documents whose
// depth was bounded when they were parsed.
OrderedJson to_ordered_json(const Json& value);

// Appends `s` as a JSON string the way Python's json.dumps(ensure_ascii=False)
// writes it (what chat templates' tojson and vLLM's tool-call arguments show):
// quotes, backslashes and control characters escaped, all else as it is.
void append_python_json_string(std::string& out, const std::string& s);

// Compact text of `value`.  Bytes that are not UTF-8 (a client's URL, the
// text of a token that is half a character) become U+FFFD instead of
// throwing: output never fails on what the input held.
template <typename JsonValue>
std::string dump_json(const JsonValue& value) {
  return value.dump(-1, ' ', false, JsonValue::error_handler_t::replace);
}

}  // namespace vllm
