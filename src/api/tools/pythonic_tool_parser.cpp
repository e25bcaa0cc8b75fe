#include "api/tools/pythonic_tool_parser.h"

#include <cctype>

#include "api/tools/json_text.h"
#include "structured/grammar.h"

namespace vllm::api {
namespace {

// Literals nested deeper than this are not a call a model means.
constexpr int kMaxDepth = 32;

// A recursive-descent reader of the call list; every method returns false
// where the text is not what it expects.
class CallListReader {
 public:
  explicit CallListReader(std::string_view text) : text_(text) {}

  bool read(std::vector<ToolCall>& calls) {
    skip_space();
    if (!eat('[')) return false;
    skip_space();
    while (!eat(']')) {
      ToolCall call;
      if (!read_call(call)) return false;
      calls.push_back(std::move(call));
      skip_space();
      if (eat(',')) {
        skip_space();
      } else if (!at(']')) {
        return false;
      }
    }
    skip_space();
    return pos_ == text_.size() && !calls.empty();
  }

 private:
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool eat(char c) {
    if (!at(c)) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool read_identifier(std::string& out) {
    const size_t begin = pos_;
    if (pos_ >= text_.size() || !(std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      return false;
    }
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    out.assign(text_.substr(begin, pos_ - begin));
    return true;
  }

  bool read_call(ToolCall& call) {
    if (!read_identifier(call.name) || !eat('(')) return false;
    OrderedJson arguments = OrderedJson::object();
    skip_space();
    while (!eat(')')) {
      std::string key;
      if (!read_identifier(key)) return false;  // positional arguments have no name to give
      skip_space();
      if (!eat('=')) return false;
      skip_space();
      OrderedJson value;
      if (!read_value(value, 0)) return false;
      arguments[key] = std::move(value);
      skip_space();
      if (eat(',')) {
        skip_space();
      } else if (!at(')')) {
        return false;
      }
    }
    call.arguments = python_json_dumps(arguments);
    return true;
  }

  // Items up to `close`, each read by `item`, commas between and perhaps after the last.
  template <typename ReadItem>
  bool read_sequence(char close, ReadItem item) {
    skip_space();
    while (!eat(close)) {
      if (!item()) return false;
      skip_space();
      if (eat(',')) {
        skip_space();
      } else if (!at(close)) {
        return false;
      }
    }
    return true;
  }

  bool read_value(OrderedJson& out, int depth) {
    if (depth > kMaxDepth || pos_ >= text_.size()) return false;
    const char c = text_[pos_];
    if (c == '"' || c == '\'') {
      std::string s;
      if (!read_string(s)) return false;
      out = std::move(s);
      return true;
    }
    if (c == '[' || c == '(') {
      ++pos_;
      out = OrderedJson::array();
      return read_sequence(c == '[' ? ']' : ')', [&] {
        OrderedJson item;
        if (!read_value(item, depth + 1)) return false;
        out.push_back(std::move(item));
        return true;
      });
    }
    if (c == '{') {
      ++pos_;
      out = OrderedJson::object();
      return read_sequence('}', [&] {
        std::string key;
        if (!read_string(key)) return false;  // JSON objects have string keys only
        skip_space();
        if (!eat(':')) return false;
        skip_space();
        OrderedJson value;
        if (!read_value(value, depth + 1)) return false;
        out[key] = std::move(value);
        return true;
      });
    }
    std::string word;
    if (read_identifier(word)) {
      if (word == "True")
        out = true;
      else if (word == "False")
        out = false;
      else if (word == "None")
        out = nullptr;
      else
        return false;
      return true;
    }
    return read_number(out);
  }

  bool read_number(OrderedJson& out) {
    const size_t begin = pos_;
    if (at('-') || at('+')) ++pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && (text_[pos_ - 1] | 0x20) == 'e')) {
        is_float = true;
        ++pos_;
      } else {
        break;
      }
    }
    std::string number(text_.substr(begin, pos_ - begin));
    if (!number.empty() && number[0] == '+') number.erase(0, 1);
    if (number.empty() || number == "-") return false;
    if (number.back() == '.') number += '0';  // Python's "1." is 1.0
    if (number[0] == '.' || number.substr(0, 2) == "-.") number.insert(number[0] == '-' ? 1 : 0, "0");
    const OrderedJson value = OrderedJson::parse(number, nullptr, false);
    if (value.is_discarded() || !value.is_number() || (value.is_number_float() != is_float)) return false;
    out = value;
    return true;
  }

  bool read_string(std::string& out) {
    if (!at('"') && !at('\'')) return false;
    const char quote = text_[pos_++];
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == quote) return true;
      if (c == '\n') return false;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) return false;
      const char e = text_[pos_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '0':
          out += '\0';
          break;
        case '\\':
        case '\'':
        case '"':
          out += e;
          break;
        case '\n':
          break;  // a line continuation
        case 'x':
        case 'u':
        case 'U': {
          const int wanted = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          int digits = 0;
          const uint32_t cp = structured::read_hex_digits(text_, pos_, wanted, digits);
          if (digits != wanted || cp > 0x10FFFF) return false;
          structured::append_utf8(cp, out);
          break;
        }
        default:
          out += '\\';
          out += e;  // Python keeps an unknown escape as written
      }
    }
    return false;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

ToolSectionStart PythonicToolParser::find_start(std::string_view text) const { return find_leading_start(text, '['); }

std::optional<std::vector<ToolCall>> PythonicToolParser::parse_calls(std::string_view section) const {
  std::vector<ToolCall> calls;
  if (!CallListReader(section).read(calls)) return std::nullopt;
  return calls;
}

}  // namespace vllm::api
