#include "tokenizer/chat_template/lexer.h"

#include <cctype>
#include <cstdlib>

#include "tokenizer/chat_template/parser.h"

namespace vllm::jinja {
namespace {

// ---- Segmenting the source: text, {{ expressions }} and {% statements %}.

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int line_at(const std::string& s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

// The end of a tag's body: the closer outside of string literals.
size_t find_closer(const std::string& src, size_t from, const std::string& closer) {
  char quote = 0;
  for (size_t i = from; i < src.size(); ++i) {
    const char c = src[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (src.compare(i, closer.size(), closer) == 0) {
      return i;
    }
  }
  return std::string::npos;
}

}  // namespace

std::vector<Segment> segment(const std::string& src) {
  std::vector<Segment> out;
  std::string text;
  bool strip_next_text = false;  // set by a "-" before a closer
  size_t i = 0;
  auto flush_text = [&](int line) {
    if (!text.empty()) out.push_back({Segment::Kind::kText, text, line});
    text.clear();
  };
  while (i < src.size()) {
    const size_t open = src.find('{', i);
    const bool is_tag = open != std::string::npos && open + 1 < src.size() &&
                        (src[open + 1] == '{' || src[open + 1] == '%' || src[open + 1] == '#');
    if (!is_tag) {
      const size_t end = open == std::string::npos ? src.size() : open + 1;
      std::string chunk = src.substr(i, end - i);
      if (strip_next_text) {
        size_t k = 0;
        while (k < chunk.size() && is_space(chunk[k])) ++k;
        chunk.erase(0, k);
        if (!chunk.empty()) strip_next_text = false;
      }
      text += chunk;
      i = end;
      continue;
    }
    // Text before the tag.
    std::string before = src.substr(i, open - i);
    if (strip_next_text) {
      size_t k = 0;
      while (k < before.size() && is_space(before[k])) ++k;
      before.erase(0, k);
      if (!before.empty()) strip_next_text = false;
    }
    text += before;
    const char type = src[open + 1];
    size_t body_start = open + 2;
    const bool strip_before = body_start < src.size() && src[body_start] == '-';
    const bool keep_before = body_start < src.size() && src[body_start] == '+';
    if (strip_before || keep_before) ++body_start;
    if (strip_before) {
      while (!text.empty() && is_space(text.back())) text.pop_back();
    } else if (type != '{' && !keep_before) {
      // lstrip_blocks: spaces and tabs between the start of a source line and
      // a block or comment tag are dropped.
      size_t n = 0;
      while (n < open && (src[open - n - 1] == ' ' || src[open - n - 1] == '\t')) ++n;
      if (n == open || src[open - n - 1] == '\n') {
        for (size_t k = 0; k < n && !text.empty() && (text.back() == ' ' || text.back() == '\t'); ++k) text.pop_back();
      }
    }
    const std::string closer = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    const size_t close = find_closer(src, body_start, closer);
    if (close == std::string::npos) {
      throw TemplateError("line " + std::to_string(line_at(src, open)) + ": unclosed '{" + std::string(1, type) + "'");
    }
    std::string body = src.substr(body_start, close - body_start);
    bool strip_after = false;
    if (!body.empty() && body.back() == '-') {
      body.pop_back();
      strip_after = true;
    } else if (!body.empty() && body.back() == '+') {
      body.pop_back();
    }
    i = close + 2;
    const int line = line_at(src, open);
    if (type != '#') {
      flush_text(line);
      out.push_back({type == '{' ? Segment::Kind::kExpr : Segment::Kind::kStmt, body, line});
    }
    if (strip_after) {
      strip_next_text = true;
    } else if (type != '{' && i < src.size()) {
      // trim_blocks: the first newline after a block or comment tag.
      if (src[i] == '\n') {
        ++i;
      } else if (src[i] == '\r' && i + 1 < src.size() && src[i + 1] == '\n') {
        i += 2;
      }
    }
  }
  flush_text(line_at(src, src.size()));
  return out;
}

// ---- Tokens of an expression or statement body.

std::vector<Token> tokenize(const std::string& s, int line) {
  std::vector<Token> out;
  auto fail = [&](const std::string& msg) { throw TemplateError("line " + std::to_string(line) + ": " + msg); };
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::kName, s.substr(i, j - i), Value()});
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          j = k;
          while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
        }
      }
      std::string num;
      for (size_t k = i; k < j; ++k) {
        if (s[k] != '_') num += s[k];
      }
      if (is_float) {
        out.push_back({Token::Kind::kFloat, num, Value(std::strtod(num.c_str(), nullptr))});
      } else {
        out.push_back({Token::Kind::kInt, num, Value(static_cast<int64_t>(std::strtoll(num.c_str(), nullptr, 10)))});
      }
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string str;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          str += s[j];
          continue;
        }
        const char e = s[++j];
        switch (e) {
          case 'n':
            str += '\n';
            break;
          case 't':
            str += '\t';
            break;
          case 'r':
            str += '\r';
            break;
          case '\\':
            str += '\\';
            break;
          case '\'':
            str += '\'';
            break;
          case '"':
            str += '"';
            break;
          default:
            str += '\\';
            str += e;
        }
      }
      if (j >= s.size()) fail("unterminated string literal");
      out.push_back({Token::Kind::kString, str, Value(str)});
      i = j + 1;
      continue;
    }
    static const char* kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                 ">",  "(",  ")",  "[",  "]",  "{",  "}", ",", ".", ":", "|", "="};
    bool matched = false;
    for (const char* op : kOps) {
      const size_t n = std::char_traits<char>::length(op);
      if (s.compare(i, n, op) == 0) {
        out.push_back({Token::Kind::kOp, op, Value()});
        i += n;
        matched = true;
        break;
      }
    }
    if (!matched) fail(std::string("unexpected character '") + c + "'");
  }
  out.push_back({Token::Kind::kEnd, "", Value()});
  return out;
}

}  // namespace vllm::jinja
