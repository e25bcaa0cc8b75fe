#include "structured/gbnf.h"

#include <cctype>

namespace vllm::structured {
namespace {

constexpr int kMaxNesting = 64;  // ( groups ) inside each other

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_'; }

class GbnfParser {
 public:
  GbnfParser(std::string_view text, Grammar& grammar) : text_(text), g_(grammar) {}

  Result<int32_t> parse() {
    skip_space();
    while (pos_ < text_.size()) {
      const std::string name = read_name();
      if (name.empty()) return error("expected a rule name");
      skip_space();
      if (!consume("::=")) return error("expected '::=' after rule name '" + name + "'");
      const int32_t rule = g_.rule(name);
      if (!g_.rules()[static_cast<size_t>(rule)].alternatives.empty()) {
        return error("rule '" + name + "' is defined twice");
      }
      VLLM_ASSIGN_OR_RETURN(std::vector<Grammar::Sequence> alternatives, parse_alternatives(0));
      for (Grammar::Sequence& alt : alternatives) g_.add_alternative(rule, std::move(alt));
    }
    for (size_t i = 0; i < g_.rules().size(); ++i) {
      if (g_.rules()[i].name == "root") return static_cast<int32_t>(i);
    }
    return invalid_argument("the grammar has no rule named 'root'");
  }

 private:
  Status error(const std::string& what) const {
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      column = text_[i] == '\n' ? 1 : column + 1;
      line += text_[i] == '\n' ? 1 : 0;
    }
    return invalid_argument("grammar, line " + std::to_string(line) + " column " + std::to_string(column) + ": " +
                            what);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool consume(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }

  void skip_space() {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string read_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // Whether a rule definition (`name ::=`) starts here.
  bool at_definition() const {
    size_t p = pos_;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  Result<std::vector<Grammar::Sequence>> parse_alternatives(int depth) {
    std::vector<Grammar::Sequence> alternatives;
    while (true) {
      VLLM_ASSIGN_OR_RETURN(Grammar::Sequence seq, parse_sequence(depth));
      alternatives.push_back(std::move(seq));
      if (!consume("|")) return alternatives;
    }
  }

  Result<Grammar::Sequence> parse_sequence(int depth) {
    Grammar::Sequence seq;
    while (true) {
      skip_space();
      const char c = peek();
      if (at_end() || c == '|' || c == ')' || at_definition()) return seq;
      VLLM_ASSIGN_OR_RETURN(Grammar::Sequence element, parse_element(depth));
      skip_space();
      VLLM_ASSIGN_OR_RETURN(element, parse_postfix(std::move(element)));
      seq.insert(seq.end(), element.begin(), element.end());
    }
  }

  Result<Grammar::Sequence> parse_element(int depth) {
    const char c = peek();
    if (c == '"') {
      ++pos_;
      std::string bytes;
      while (!at_end() && peek() != '"') {
        VLLM_ASSIGN_OR_RETURN(uint32_t cp, parse_char());
        append_utf8(cp, bytes);
      }
      if (!consume("\"")) return error("unterminated string literal");
      return g_.literal(bytes);
    }
    if (c == '[') {
      ++pos_;
      const bool negated = consume("^");
      CodePointRanges ranges;
      while (!at_end() && peek() != ']') {
        VLLM_ASSIGN_OR_RETURN(uint32_t first, parse_char());
        uint32_t last = first;
        if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
          ++pos_;
          VLLM_ASSIGN_OR_RETURN(last, parse_char());
          if (last < first) return error("character range is out of order");
        }
        ranges.emplace_back(first, last);
      }
      if (!consume("]")) return error("unterminated character class");
      return Grammar::Sequence{g_.code_points(negated ? complement(std::move(ranges)) : ranges)};
    }
    if (c == '.') {
      ++pos_;
      return Grammar::Sequence{g_.code_points({{0, kMaxCodePoint}})};
    }
    if (c == '(') {
      if (depth >= kMaxNesting) return error("groups are nested too deeply");
      ++pos_;
      VLLM_ASSIGN_OR_RETURN(std::vector<Grammar::Sequence> alternatives, parse_alternatives(depth + 1));
      skip_space();
      if (!consume(")")) return error("expected ')'");
      return Grammar::Sequence{g_.group(std::move(alternatives))};
    }
    if (is_name_char(c)) return Grammar::Sequence{Grammar::ref(g_.rule(read_name()))};
    return error(std::string("unexpected character '") + c + "'");
  }

  Result<Grammar::Sequence> parse_postfix(Grammar::Sequence element) {
    const char c = peek();
    int64_t min = 0;
    std::optional<int64_t> max;
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      ++pos_;
      min = 1;
    } else if (c == '?') {
      ++pos_;
      max = 1;
    } else if (c == '{') {
      ++pos_;
      skip_space();
      VLLM_ASSIGN_OR_RETURN(std::optional<int64_t> lo, parse_count());
      skip_space();
      if (consume(",")) {
        skip_space();
        VLLM_ASSIGN_OR_RETURN(max, parse_count());
      } else {
        if (!lo) return error("expected a count in '{}'");
        max = lo;
      }
      skip_space();
      if (!consume("}")) return error("expected '}'");
      min = lo.value_or(0);
    } else {
      return element;
    }
    Result<Symbol> repeated = g_.repeat(element, min, max);
    if (!repeated.is_ok()) return error(repeated.status().message());
    return Grammar::Sequence{*repeated};
  }

  Result<std::optional<int64_t>> parse_count() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return std::optional<int64_t>();
    int64_t n = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      n = n * 10 + (peek() - '0');
      if (n > 1000000) return error("repetition count is too large");
      ++pos_;
    }
    return std::optional<int64_t>(n);
  }

  // One character of a literal or class: an escape or one UTF-8 code point.
  Result<uint32_t> parse_char() {
    if (at_end()) return error("unexpected end of grammar");
    const auto lead = static_cast<uint8_t>(text_[pos_]);
    if (lead == '\\') {
      ++pos_;
      if (at_end()) return error("unexpected end after '\\'");
      const char e = text_[pos_++];
      switch (e) {
        case 'n':
          return uint32_t{'\n'};
        case 'r':
          return uint32_t{'\r'};
        case 't':
          return uint32_t{'\t'};
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        default:
          if (std::ispunct(static_cast<unsigned char>(e))) return static_cast<uint32_t>(e);
          return error(std::string("unknown escape '\\") + e + "'");
      }
    }
    std::optional<uint32_t> cp = next_code_point(text_, pos_);
    if (!cp) return error("invalid UTF-8 in the grammar");
    return *cp;
  }

  Result<uint32_t> parse_hex(int digits) {
    int read = 0;
    const uint32_t v = read_hex_digits(text_, pos_, digits, read);
    if (read != digits) return error("expected " + std::to_string(digits) + " hex digits");
    if (v > kMaxCodePoint) return error("code point beyond U+10FFFF");
    return v;
  }

  std::string_view text_;
  Grammar& g_;
  size_t pos_ = 0;
};

}  // namespace

Result<int32_t> parse_gbnf_into(std::string_view text, Grammar& grammar) { return GbnfParser(text, grammar).parse(); }

Result<Grammar> parse_gbnf(std::string_view text) {
  Grammar g;
  VLLM_ASSIGN_OR_RETURN(int32_t root, parse_gbnf_into(text, g));
  g.set_root(root);
  VLLM_RETURN_IF_ERROR(g.validate());
  return g;
}

}  // namespace vllm::structured
