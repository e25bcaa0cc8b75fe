#include "base/json.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "base/file_util.h"

namespace vllm {
namespace {

// nlohmann's SAX interface over the text, building nothing: it stops the
// parse at the first limit passed and remembers why.
class LimitChecker {
 public:
  explicit LimitChecker(const JsonLimits& limits) : limits_(limits) {}

  const std::string& error() const { return error_; }

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(Json::number_integer_t) { return value(); }
  bool number_unsigned(Json::number_unsigned_t) { return value(); }
  bool number_float(Json::number_float_t, const Json::string_t&) { return value(); }
  bool string(Json::string_t& s) { return value() && string_fits(s, "a string"); }
  bool binary(Json::binary_t&) { return value(); }
  bool start_object(size_t) { return open(/*object=*/true); }
  bool key(Json::string_t& k) {
    if (++open_.back().count > limits_.max_object_members) {
      return fail("an object with more members than the limit of " + std::to_string(limits_.max_object_members));
    }
    return string_fits(k, "a key");
  }
  bool end_object() { return close(); }
  bool start_array(size_t) { return open(/*object=*/false); }
  bool end_array() { return close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    const std::string what = e.what();
    const size_t at = what.find("] ");
    error_ = "not valid JSON (" + (at == std::string::npos ? what : what.substr(at + 2)) + ")";
    return false;
  }

 private:
  struct Open {
    bool object;
    size_t count;
  };

  bool fail(const std::string& what) {
    error_ = "JSON with " + what;
    return false;
  }
  // Every value counts towards the document's total and, inside an array, its items.
  bool value() {
    if (++num_values_ > limits_.max_values) {
      return fail("more values than the limit of " + std::to_string(limits_.max_values));
    }
    if (!open_.empty() && !open_.back().object && ++open_.back().count > limits_.max_array_items) {
      return fail("an array of more items than the limit of " + std::to_string(limits_.max_array_items));
    }
    return true;
  }
  bool string_fits(const std::string& s, const char* what) {
    if (s.size() <= limits_.max_string_bytes) return true;
    return fail(std::string(what) + " longer than the limit of " + std::to_string(limits_.max_string_bytes) + " bytes");
  }
  bool open(bool object) {
    if (!value()) return false;
    if (static_cast<int>(open_.size()) >= limits_.max_depth) {
      return fail("arrays and objects nested deeper than the limit of " + std::to_string(limits_.max_depth));
    }
    open_.push_back({object, 0});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  const JsonLimits& limits_;
  std::vector<Open> open_;  // the containers around the current position, at most max_depth
  size_t num_values_ = 0;
  std::string error_;
};

}  // namespace

Result<Json> parse_json(const std::string& text, const std::string& what) {
  // Files are as large as they are (a tokenizer.json holds a whole
  // vocabulary); only their nesting is bounded, for what recurses over them.
  constexpr JsonLimits kFileLimits{.max_depth = 128,
                                   .max_string_bytes = SIZE_MAX,
                                   .max_array_items = SIZE_MAX,
                                   .max_object_members = SIZE_MAX,
                                   .max_values = SIZE_MAX};
  Result<Json> parsed = parse_json_within(text, kFileLimits);
  if (!parsed.is_ok()) return parsed.status().with_context(what);
  return parsed;
}

Result<Json> read_json_file(const std::string& path) {
  VLLM_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return parse_json(text, path);
}

Result<Json> parse_json_within(std::string_view text, const JsonLimits& limits) {
  LimitChecker checker(limits);
  if (!Json::sax_parse(text, &checker, Json::input_format_t::json, /*strict=*/true)) {
    return invalid_argument(checker.error());
  }
  // Known now to be valid and within bounds: the second pass cannot fail.
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

OrderedJson to_ordered_json(const Json& value) {
  if (value.is_array()) {
    OrderedJson out = OrderedJson::array();
    auto& items = out.get_ref<OrderedJson::array_t&>();
    items.reserve(value.size());
    for (const Json& item : value) items.push_back(to_ordered_json(item));
    return out;
  }
  if (value.is_object()) {
    OrderedJson out = OrderedJson::object();
    // The keys of a Json object are unique already: append them without
    // ordered_map's per-insert search, which would make this quadratic.
    auto& members = static_cast<OrderedJson::object_t::Container&>(out.get_ref<OrderedJson::object_t&>());
    members.reserve(value.size());
    for (const auto& [key, item] : value.items()) members.emplace_back(key, to_ordered_json(item));
    return out;
  }
  return OrderedJson(value);  // a scalar converts directly
}

void append_python_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace vllm
