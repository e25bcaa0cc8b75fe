#include "structured/regex_grammar.h"

#include <algorithm>
#include <cctype>

namespace vllm::structured {
namespace {

constexpr int kMaxNesting = 64;

const CodePointRanges kDigits = {{'0', '9'}};
const CodePointRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const CodePointRanges kSpace = {{'\t', '\r'}, {' ', ' '}};  // \t \n \v \f \r and space

// Match lengths saturate here: longer ones only ever meet a schema's maxLength.
constexpr int64_t kLengthCap = int64_t{1} << 40;

// A match of `a` followed by one of `b`.
MatchLength concatenated(const MatchLength& a, const MatchLength& b) {
  return {std::min(kLengthCap, a.min + b.min),
          a.max && b.max ? std::optional<int64_t>(std::min(kLengthCap, *a.max + *b.max)) : std::nullopt};
}

// A match of `a` or one of `b`.
MatchLength either(const MatchLength& a, const MatchLength& b) {
  return {std::min(a.min, b.min), a.max && b.max ? std::optional<int64_t>(std::max(*a.max, *b.max)) : std::nullopt};
}

// `min` to `max` matches of `item`.  A length (at most 2^40) times a count
// (at most 10^9, below 2^30) fits in 64 bits.
MatchLength repetition(const MatchLength& item, int64_t min, std::optional<int64_t> max) {
  MatchLength out{std::min(kLengthCap, item.min * min), std::nullopt};
  if (item.max == 0) {
    out.max = 0;
  } else if (item.max && max) {
    out.max = std::min(kLengthCap, *item.max * *max);
  }
  return out;
}

// A part of a pattern: its symbols and the lengths of its matches.
struct Piece {
  Grammar::Sequence seq;
  MatchLength length;
};

MatchLength one_character() { return {1, 1}; }

class RegexParser {
 public:
  RegexParser(std::string_view pattern, Grammar& grammar, RegexText text) : p_(pattern), g_(grammar), text_(text) {}

  Result<Symbol> parse(MatchLength* length) {
    if (consume('^')) {
    }
    size_t end = p_.size();
    // A trailing unescaped $ (an even run of backslashes before it) is the end anchor.
    if (end > 0 && p_[end - 1] == '$') {
      size_t slashes = 0;
      while (slashes + 1 < end && p_[end - 2 - slashes] == '\\') ++slashes;
      if (slashes % 2 == 0) p_ = p_.substr(0, end - 1);
    }
    VLLM_ASSIGN_OR_RETURN(Alternatives alternatives, parse_alternatives(0));
    if (pos_ < p_.size()) return error(p_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
    if (length != nullptr) *length = alternatives.length;
    return g_.group(std::move(alternatives.sequences), "regex");
  }

 private:
  Status error(const std::string& what) const {
    return invalid_argument("regex: " + what + " at offset " + std::to_string(pos_));
  }
  Status unsupported(const std::string& what) const {
    return invalid_argument("regex: " + what + " (at offset " + std::to_string(pos_) + ") is not supported");
  }

  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[pos_]; }
  bool consume(char c) {
    if (peek() != c || at_end()) return false;
    ++pos_;
    return true;
  }
  bool consume(std::string_view s) {
    if (p_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }

  struct Alternatives {
    std::vector<Grammar::Sequence> sequences;
    MatchLength length;
  };

  Result<Alternatives> parse_alternatives(int depth) {
    Alternatives out;
    while (true) {
      VLLM_ASSIGN_OR_RETURN(Piece piece, parse_sequence(depth));
      out.length = out.sequences.empty() ? piece.length : either(out.length, piece.length);
      out.sequences.push_back(std::move(piece.seq));
      if (!consume('|')) return out;
    }
  }

  Result<Piece> parse_sequence(int depth) {
    Piece out{{}, {0, 0}};
    while (!at_end() && peek() != '|' && peek() != ')') {
      VLLM_ASSIGN_OR_RETURN(Piece atom, parse_atom(depth));
      VLLM_ASSIGN_OR_RETURN(atom, parse_quantifier(std::move(atom)));
      out.seq.insert(out.seq.end(), atom.seq.begin(), atom.seq.end());
      out.length = concatenated(out.length, atom.length);
    }
    return out;
  }

  Result<Piece> parse_atom(int depth) {
    const char c = peek();
    if (c == '(') {
      if (depth >= kMaxNesting) return error("groups are nested too deeply");
      ++pos_;
      if (consume('?')) {
        if (consume(':')) {
        } else if (consume('P') || peek() == '<') {
          if (consume("<=") || consume("<!")) return unsupported("look-behind");
          if (!consume('<')) return unsupported("(?P" + std::string(1, peek()) + " group");
          while (!at_end() && peek() != '>') ++pos_;
          if (!consume('>')) return error("unterminated group name");
        } else if (peek() == '=' || peek() == '!') {
          return unsupported("look-ahead");
        } else {
          return unsupported("inline flags or special group '(?" + std::string(1, peek()) + "'");
        }
      }
      VLLM_ASSIGN_OR_RETURN(Alternatives alternatives, parse_alternatives(depth + 1));
      if (!consume(')')) return error("missing ')'");
      return Piece{{g_.group(std::move(alternatives.sequences))}, alternatives.length};
    }
    if (c == '[') {
      ++pos_;
      VLLM_ASSIGN_OR_RETURN(CodePointRanges ranges, parse_class());
      return Piece{{characters(ranges)}, one_character()};
    }
    if (c == '.') {
      ++pos_;
      return Piece{{characters(complement({{'\n', '\n'}}))}, one_character()};
    }
    if (c == '^' || c == '$') return unsupported("an anchor inside the pattern");
    if (c == '*' || c == '+' || c == '?') return error("nothing to repeat");
    if (c == '\\') {
      ++pos_;
      VLLM_ASSIGN_OR_RETURN(CodePointRanges ranges, parse_escape(false));
      if (ranges.size() == 1 && ranges[0].first == ranges[0].second)
        return Piece{literal(ranges[0].first), one_character()};
      return Piece{{characters(ranges)}, one_character()};
    }
    VLLM_ASSIGN_OR_RETURN(uint32_t cp, read_code_point());
    return Piece{literal(cp), one_character()};
  }

  Grammar::Sequence literal(uint32_t cp) {
    std::string bytes;
    if (text_ == RegexText::kJsonString && needs_json_escape(cp)) return g_.literal(json_escape(cp));
    append_utf8(cp, bytes);
    return g_.literal(bytes);
  }

  // One character of `ranges`, as the text writes it.
  Symbol characters(const CodePointRanges& ranges) {
    if (text_ == RegexText::kRaw) return g_.code_points(ranges);
    // Inside a JSON string the characters that need no escape stand for
    // themselves; the others are written as their escapes.
    CodePointRanges outside = complement(ranges);
    outside.insert(outside.end(), {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
    std::vector<Grammar::Sequence> alternatives = {{g_.code_points(complement(std::move(outside)))}};
    for (uint32_t cp = 0; cp < 0x80; ++cp) {
      if (!needs_json_escape(cp)) continue;
      const bool in =
          std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) { return r.first <= cp && cp <= r.second; });
      if (in) alternatives.push_back(g_.literal(json_escape(cp)));
    }
    return g_.group(std::move(alternatives), "char");
  }

  static bool needs_json_escape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

  static std::string json_escape(uint32_t cp) {
    switch (cp) {
      case '"':
        return "\\\"";
      case '\\':
        return "\\\\";
      case '\n':
        return "\\n";
      case '\t':
        return "\\t";
      case '\r':
        return "\\r";
      case '\b':
        return "\\b";
      case '\f':
        return "\\f";
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        return std::string("\\u00") + kHex[cp >> 4] + kHex[cp & 15];
      }
    }
  }

  Result<Piece> parse_quantifier(Piece atom) {
    int64_t min = 0;
    std::optional<int64_t> max;
    const size_t start = pos_;
    if (consume('*')) {
    } else if (consume('+')) {
      min = 1;
    } else if (consume('?')) {
      max = 1;
    } else if (peek() == '{') {
      ++pos_;
      std::optional<int64_t> lo = read_count();
      if (consume(',')) {
        max = read_count();
      } else {
        max = lo;
      }
      // Not a quantifier ({ alone, {x}): Python and PCRE read it as text.
      if (!consume('}') || (!lo && !max)) {
        pos_ = start;
        return atom;
      }
      min = lo.value_or(0);
    } else {
      return atom;
    }
    if (consume('+')) return unsupported("a possessive quantifier");
    consume('?');  // lazy: the same set of strings
    Result<Symbol> repeated = g_.repeat(atom.seq, min, max);
    if (!repeated.is_ok()) return error(repeated.status().message());
    return Piece{{*repeated}, repetition(atom.length, min, max)};
  }

  std::optional<int64_t> read_count() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) return std::nullopt;
    int64_t n = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      n = std::min<int64_t>(n * 10 + (peek() - '0'), 1000000000);
      ++pos_;
    }
    return n;
  }

  // After '[': the class's code points.
  Result<CodePointRanges> parse_class() {
    const bool negated = consume('^');
    CodePointRanges ranges;
    bool first = true;
    while (!at_end() && (peek() != ']' || first)) {
      first = false;
      if (consume("[:")) return unsupported("a POSIX class");
      CodePointRanges item;
      if (consume('\\')) {
        VLLM_ASSIGN_OR_RETURN(item, parse_escape(true));
      } else {
        VLLM_ASSIGN_OR_RETURN(uint32_t cp, read_code_point());
        item = {{cp, cp}};
      }
      const bool single = item.size() == 1 && item[0].first == item[0].second;
      if (single && peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t last = 0;
        if (consume('\\')) {
          VLLM_ASSIGN_OR_RETURN(CodePointRanges end, parse_escape(true));
          if (end.size() != 1 || end[0].first != end[0].second) return error("a class cannot end a range");
          last = end[0].first;
        } else {
          VLLM_ASSIGN_OR_RETURN(last, read_code_point());
        }
        if (last < item[0].first) return error("a character range is out of order");
        item[0].second = last;
      }
      ranges.insert(ranges.end(), item.begin(), item.end());
    }
    if (!consume(']')) return error("missing ']'");
    return negated ? complement(std::move(ranges)) : ranges;
  }

  // After '\\': the code points the escape stands for.
  Result<CodePointRanges> parse_escape(bool in_class) {
    if (at_end()) return error("a pattern cannot end with '\\'");
    const char e = p_[pos_++];
    auto one = [](uint32_t cp) { return CodePointRanges{{cp, cp}}; };
    switch (e) {
      case 'd':
        return kDigits;
      case 'D':
        return complement(kDigits);
      case 'w':
        return kWord;
      case 'W':
        return complement(kWord);
      case 's':
        return kSpace;
      case 'S':
        return complement(kSpace);
      case 'n':
        return one('\n');
      case 't':
        return one('\t');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case 'a':
        return one('\a');
      case '0':
        return one(0);
      case 'b':
        if (in_class) return one('\b');
        return unsupported("the word boundary \\b");
      case 'x': {
        if (consume('{')) {
          VLLM_ASSIGN_OR_RETURN(uint32_t cp, read_hex(8, true));
          if (!consume('}')) return error("missing '}' after \\x{");
          return one(cp);
        }
        VLLM_ASSIGN_OR_RETURN(uint32_t cp, read_hex(2, false));
        return one(cp);
      }
      case 'u': {
        VLLM_ASSIGN_OR_RETURN(uint32_t cp, read_hex(4, false));
        return one(cp);
      }
      default:
        if (std::isdigit(static_cast<unsigned char>(e))) return unsupported("a backreference");
        if (e == 'p' || e == 'P') return unsupported("a Unicode property class");
        if (std::isalpha(static_cast<unsigned char>(e))) return unsupported(std::string("the escape \\") + e);
        if (static_cast<unsigned char>(e) >= 0x80) {
          --pos_;
          VLLM_ASSIGN_OR_RETURN(uint32_t cp, read_code_point());
          return one(cp);
        }
        return one(static_cast<uint8_t>(e));
    }
  }

  // `digits` hex digits (or up to that many, when `variable`).
  Result<uint32_t> read_hex(int digits, bool variable) {
    int read = 0;
    const uint32_t v = read_hex_digits(p_, pos_, digits, read);
    if (read == 0 || (!variable && read != digits)) return error("expected hex digits");
    if (v > kMaxCodePoint) return error("a code point beyond U+10FFFF");
    return v;
  }

  Result<uint32_t> read_code_point() {
    std::optional<uint32_t> cp = next_code_point(p_, pos_);
    if (!cp) return error("invalid UTF-8");
    return *cp;
  }

  std::string_view p_;
  Grammar& g_;
  RegexText text_;
  size_t pos_ = 0;
};

}  // namespace

Result<Symbol> add_regex(std::string_view pattern, Grammar& grammar, RegexText text, MatchLength* length) {
  return RegexParser(pattern, grammar, text).parse(length);
}

Result<Grammar> regex_grammar(std::string_view pattern) {
  Grammar g;
  VLLM_ASSIGN_OR_RETURN(Symbol s, add_regex(pattern, g));
  g.set_root(s.index);
  VLLM_RETURN_IF_ERROR(g.validate());
  return g;
}

}  // namespace vllm::structured
