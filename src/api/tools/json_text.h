// JSON text as the tool-call parsers meet and write it: a value found at the
// start of a longer text, and arguments serialised the way vLLM serialises
// them (Python's json.dumps: ", " and ": " separators, non-ASCII kept).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/json.h"

namespace vllm::api {

// The end of the JSON object or array that begins at `begin` (just past its
// closing bracket), found by matching brackets outside strings; nullopt if
// it does not close within `text`.  Says nothing of the value's validity.
std::optional<size_t> json_container_end(std::string_view text, size_t begin);

// The object or array at `begin`, parsed with its keys in document order;
// `end` is set past it.  nullopt if there is none or it is not valid JSON.
std::optional<OrderedJson> parse_json_container_at(std::string_view text, size_t begin, size_t& end);

// json.dumps(value, ensure_ascii=False) as Python writes it.
std::string python_json_dumps(const OrderedJson& value);

// Index of the first byte of `text` at or after `from` that is not JSON
// whitespace (text.size() if none).
size_t skip_json_whitespace(std::string_view text, size_t from = 0);

// The length of the longest end of `text` that is the start of `marker`
// (and not all of it): bytes to hold back while a marker may be arriving.
size_t partial_marker_length(std::string_view text, std::string_view marker);

}  // namespace vllm::api
