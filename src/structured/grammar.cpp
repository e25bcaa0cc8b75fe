#include "structured/grammar.h"

#include <algorithm>

namespace vllm::structured {
namespace {

// Bounds that keep a hostile constraint from taking the server's memory:
// repetition counts are unrolled into rules, so they are capped.
constexpr int64_t kMaxRepetition = 10000;
constexpr size_t kMaxSymbols = size_t{1} << 21;

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

std::array<uint8_t, 4> utf8_encode(uint32_t cp) {
  const int n = utf8_length(cp);
  std::array<uint8_t, 4> b{};
  if (n == 1) {
    b[0] = static_cast<uint8_t>(cp);
    return b;
  }
  for (int i = n - 1; i > 0; --i) {
    b[static_cast<size_t>(i)] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  b[0] = static_cast<uint8_t>((0xF00u >> n) | cp);  // 110..., 1110..., 11110...
  return b;
}

// The UTF-8 encodings of code points first..last, as sequences of byte
// ranges: first the range is cut where the encoded length changes, then
// where a continuation byte would not cover its whole 0x80..0xBF span, so
// that each piece is a product of per-byte ranges.
void utf8_byte_ranges(uint32_t first, uint32_t last, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  if (first > last) return;
  if (first <= kSurrogateLast && last >= kSurrogateFirst) {
    if (first < kSurrogateFirst) utf8_byte_ranges(first, kSurrogateFirst - 1, out);
    if (last > kSurrogateLast) utf8_byte_ranges(kSurrogateLast + 1, last, out);
    return;
  }
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (first <= boundary && last > boundary) {
      utf8_byte_ranges(first, boundary, out);
      utf8_byte_ranges(boundary + 1, last, out);
      return;
    }
  }
  const int n = utf8_length(first);
  for (int i = 1; i < n; ++i) {
    const uint32_t low_bits = (uint32_t{1} << (6 * i)) - 1;
    if ((first & ~low_bits) == (last & ~low_bits)) continue;
    if ((first & low_bits) != 0) {
      utf8_byte_ranges(first, first | low_bits, out);
      utf8_byte_ranges((first | low_bits) + 1, last, out);
      return;
    }
    if ((last & low_bits) != low_bits) {
      utf8_byte_ranges(first, (last & ~low_bits) - 1, out);
      utf8_byte_ranges(last & ~low_bits, last, out);
      return;
    }
  }
  const std::array<uint8_t, 4> a = utf8_encode(first);
  const std::array<uint8_t, 4> b = utf8_encode(last);
  std::vector<std::pair<uint8_t, uint8_t>>& seq = out.emplace_back();
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) seq.emplace_back(a[i], b[i]);
}

CodePointRanges normalized(CodePointRanges ranges) {
  for (auto& [a, b] : ranges) b = std::min(b, kMaxCodePoint);
  std::erase_if(ranges, [](const auto& r) { return r.first > r.second; });
  std::sort(ranges.begin(), ranges.end());
  CodePointRanges merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

}  // namespace

void append_utf8(uint32_t cp, std::string& out) {
  const std::array<uint8_t, 4> b = utf8_encode(cp);
  out.append(reinterpret_cast<const char*>(b.data()), static_cast<size_t>(utf8_length(cp)));
}

std::optional<uint32_t> next_code_point(std::string_view text, size_t& pos) {
  if (pos >= text.size()) return std::nullopt;
  const auto lead = static_cast<uint8_t>(text[pos]);
  const int len = lead < 0x80 ? 1 : lead >= 0xF8 ? 0 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (len == 0 || pos + static_cast<size_t>(len) > text.size()) return std::nullopt;
  uint32_t cp = len == 1 ? lead : lead & (0x7Fu >> len);
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<uint8_t>(text[pos + static_cast<size_t>(k)]);
    if ((b & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  pos += static_cast<size_t>(len);
  return cp;
}

uint32_t read_hex_digits(std::string_view text, size_t& pos, int max_digits, int& digits) {
  uint32_t v = 0;
  for (digits = 0; digits < max_digits && pos < text.size(); ++digits, ++pos) {
    const char h = text[pos];
    if (h >= '0' && h <= '9') {
      v = v * 16 + static_cast<uint32_t>(h - '0');
    } else if ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') {
      v = v * 16 + static_cast<uint32_t>((h | 0x20) - 'a' + 10);
    } else {
      break;
    }
  }
  return v;
}

void ByteSet::add_range(uint8_t first, uint8_t last) {
  for (int b = first; b <= last; ++b) add(static_cast<uint8_t>(b));
}

CodePointRanges complement(CodePointRanges ranges) {
  CodePointRanges out;
  uint32_t next = 0;
  for (const auto& [a, b] : normalized(std::move(ranges))) {
    if (a > next) out.emplace_back(next, a - 1);
    next = b + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

int32_t Grammar::rule(const std::string& name) {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) return static_cast<int32_t>(i);
  }
  rules_.push_back(Rule{name, {}});
  return static_cast<int32_t>(rules_.size() - 1);
}

int32_t Grammar::new_rule(const std::string& hint) {
  // Generated names hold a '#', which no grammar's own names can.
  rules_.push_back(Rule{hint + "#" + std::to_string(rules_.size()), {}});
  return static_cast<int32_t>(rules_.size() - 1);
}

Symbol Grammar::bytes(const ByteSet& set) {
  auto it = std::find(byte_sets_.begin(), byte_sets_.end(), set);
  if (it == byte_sets_.end()) it = byte_sets_.insert(byte_sets_.end(), set);
  return Symbol{Symbol::Kind::kBytes, static_cast<int32_t>(it - byte_sets_.begin())};
}

Grammar::Sequence Grammar::literal(std::string_view text) {
  Sequence seq;
  for (char c : text) {
    ByteSet one;
    one.add(static_cast<uint8_t>(c));
    seq.push_back(bytes(one));
  }
  return seq;
}

Symbol Grammar::code_points(const CodePointRanges& ranges) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> encodings;
  for (const auto& [a, b] : normalized(ranges)) utf8_byte_ranges(a, b, encodings);
  ByteSet single;  // every one-byte encoding in one set
  bool any_single = false;
  std::vector<Sequence> alternatives;
  for (const auto& enc : encodings) {
    if (enc.size() == 1) {
      single.add_range(enc[0].first, enc[0].second);
      any_single = true;
      continue;
    }
    Sequence seq;
    for (const auto& [lo, hi] : enc) {
      ByteSet s;
      s.add_range(lo, hi);
      seq.push_back(bytes(s));
    }
    alternatives.push_back(std::move(seq));
  }
  if (any_single && alternatives.empty()) return bytes(single);
  if (any_single) alternatives.insert(alternatives.begin(), Sequence{bytes(single)});
  // An empty set matches nothing: a rule whose only alternative is a byte no text has.
  if (alternatives.empty()) alternatives.push_back(Sequence{bytes(ByteSet())});
  return group(std::move(alternatives), "char");
}

Symbol Grammar::group(std::vector<Sequence> alternatives, const std::string& hint) {
  const int32_t r = new_rule(hint);
  for (Sequence& alt : alternatives) add_alternative(r, std::move(alt));
  return ref(r);
}

Result<Symbol> Grammar::repeat(const Sequence& item, int64_t min, std::optional<int64_t> max) {
  if (min < 0 || (max && *max < min)) {
    return invalid_argument("a repetition's bounds {" + std::to_string(min) + "," +
                            (max ? std::to_string(*max) : std::string()) + "} are out of order");
  }
  if (min > kMaxRepetition || (max && *max > kMaxRepetition)) {
    return invalid_argument("a repetition count above " + std::to_string(kMaxRepetition) + " is not supported");
  }
  // The copies are made here, so their size is checked before they are.
  const auto copies = static_cast<size_t>(max ? *max : min + 1);
  if (num_symbols_ + (item.size() + 2) * (copies + 1) > kMaxSymbols)
    return invalid_argument("the grammar is too large");
  Sequence seq;
  for (int64_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
  if (!max) {
    // star ::= item star | ""  (right recursion: the matcher's tail call keeps its stack flat)
    const int32_t star = new_rule("star");
    Sequence again = item;
    again.push_back(ref(star));
    add_alternative(star, std::move(again));
    add_alternative(star, {});
    seq.push_back(ref(star));
  } else if (*max > min) {
    // opt_k ::= item opt_(k-1) | "", for the max - min optional copies
    int32_t inner = -1;
    for (int64_t k = 1; k <= *max - min; ++k) {
      const int32_t opt = new_rule("opt");
      Sequence once = item;
      if (inner >= 0) once.push_back(ref(inner));
      add_alternative(opt, std::move(once));
      add_alternative(opt, {});
      inner = opt;
    }
    seq.push_back(ref(inner));
  }
  return group({std::move(seq)}, "repeat");
}

Status Grammar::validate() const {
  if (root_ < 0) return invalid_argument("the grammar has no root rule");
  if (num_symbols_ > kMaxSymbols) return invalid_argument("the grammar is too large");
  for (const Rule& r : rules_) {
    for (const Sequence& alt : r.alternatives) {
      for (const Symbol& s : alt) {
        if (s.kind == Symbol::Kind::kRule && rules_[static_cast<size_t>(s.index)].alternatives.empty()) {
          return invalid_argument("grammar rule '" + rules_[static_cast<size_t>(s.index)].name +
                                  "' is used but never defined");
        }
      }
    }
  }
  // Which rules can match the empty string (to a fixed point).
  std::vector<char> nullable(rules_.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (nullable[i]) continue;
      for (const Sequence& alt : rules_[i].alternatives) {
        const bool empty = std::all_of(alt.begin(), alt.end(), [&](const Symbol& s) {
          return s.kind == Symbol::Kind::kRule && nullable[static_cast<size_t>(s.index)];
        });
        if (empty) {
          nullable[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  // Left recursion: a rule reachable from itself through rules at the left
  // of an alternative, past nullable ones only.  The walk keeps its own
  // stack, since a grammar may chain many rules.
  std::vector<std::vector<size_t>> left_edges(rules_.size());
  for (size_t r = 0; r < rules_.size(); ++r) {
    for (const Sequence& alt : rules_[r].alternatives) {
      for (const Symbol& s : alt) {
        if (s.kind != Symbol::Kind::kRule) break;
        left_edges[r].push_back(static_cast<size_t>(s.index));
        if (!nullable[static_cast<size_t>(s.index)]) break;
      }
    }
  }
  enum : char { kUnseen, kOnPath, kDone };
  std::vector<char> mark(rules_.size(), kUnseen);
  std::vector<std::pair<size_t, size_t>> path;  // rule, next edge to follow
  for (size_t start = 0; start < rules_.size(); ++start) {
    if (mark[start] != kUnseen) continue;
    mark[start] = kOnPath;
    path.emplace_back(start, 0);
    while (!path.empty()) {
      auto& [r, edge] = path.back();
      if (edge == left_edges[r].size()) {
        mark[r] = kDone;
        path.pop_back();
        continue;
      }
      const size_t next = left_edges[r][edge++];
      if (mark[next] == kOnPath) {
        return invalid_argument("grammar rule '" + rules_[next].name +
                                "' is left-recursive (or repeats something that can be empty), which is not supported");
      }
      if (mark[next] == kUnseen) {
        mark[next] = kOnPath;
        path.emplace_back(next, 0);
      }
    }
  }
  return Status::ok();
}

}  // namespace vllm::structured
