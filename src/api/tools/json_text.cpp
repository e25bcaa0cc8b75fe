#include "api/tools/json_text.h"

#include <algorithm>

namespace vllm::api {

std::optional<size_t> json_container_end(std::string_view text, size_t begin) {
  if (begin >= text.size() || (text[begin] != '{' && text[begin] != '[')) return std::nullopt;
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped byte cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::nullopt;
}

std::optional<OrderedJson> parse_json_container_at(std::string_view text, size_t begin, size_t& end) {
  const std::optional<size_t> close = json_container_end(text, begin);
  if (!close) return std::nullopt;
  // Model output within a request's token budget: small, and parsed with
  // no exceptions; the depth is bounded by the bracket scan's own length.
  OrderedJson value = OrderedJson::parse(text.substr(begin, *close - begin), nullptr, false);
  if (value.is_discarded()) return std::nullopt;
  end = *close;
  return value;
}

namespace {

void append_value(std::string& out, const OrderedJson& v) {
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, member] : v.items()) {
      if (!first) out += ", ";
      first = false;
      append_python_json_string(out, key);
      out += ": ";
      append_value(out, member);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ", ";
      append_value(out, v[i]);
    }
    out += ']';
  } else if (v.is_string()) {
    append_python_json_string(out, v.get_ref<const std::string&>());
  } else {
    out += dump_json(v);  // numbers, booleans, null
  }
}

}  // namespace

std::string python_json_dumps(const OrderedJson& value) {
  std::string out;
  append_value(out, value);
  return out;
}

size_t skip_json_whitespace(std::string_view text, size_t from) {
  while (from < text.size() && (text[from] == ' ' || text[from] == '\n' || text[from] == '\r' || text[from] == '\t')) {
    ++from;
  }
  return from;
}

size_t partial_marker_length(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace vllm::api
