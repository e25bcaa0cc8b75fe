// A context-free grammar over bytes: the one form every constraint (a GBNF
// grammar, a regex, a list of choices, a JSON schema) is compiled to before
// it is matched against token byte strings.  Text classes over code points
// become rules over their UTF-8 bytes, so a token that ends inside a
// character is matched as far as it goes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace vllm::structured {

class ByteSet {
 public:
  void add(uint8_t b) { words_[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t first, uint8_t last);
  bool contains(uint8_t b) const { return ((words_[b >> 6] >> (b & 63)) & 1) != 0; }
  bool operator==(const ByteSet&) const = default;

 private:
  std::array<uint64_t, 4> words_{};
};

struct Symbol {
  enum class Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind = Kind::kEnd;
  int32_t index = 0;  // the ByteSet of kBytes, the rule of kRule
};

// Inclusive code point ranges, in any order.
using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

class Grammar {
 public:
  using Sequence = std::vector<Symbol>;

  struct Rule {
    std::string name;
    std::vector<Sequence> alternatives;  // none: referenced but never defined
  };

  // The rule called `name`, added (with no alternatives) if it is new.
  int32_t rule(const std::string& name);
  // A new rule with a name made unique from `hint`.
  int32_t new_rule(const std::string& hint);
  void add_alternative(int32_t rule, Sequence sequence) {
    num_symbols_ += sequence.size() + 1;
    rules_[static_cast<size_t>(rule)].alternatives.push_back(std::move(sequence));
  }
  void set_root(int32_t rule) { root_ = rule; }

  Symbol bytes(const ByteSet& set);
  static Symbol ref(int32_t rule) { return Symbol{Symbol::Kind::kRule, rule}; }
  // The bytes of `text`, one symbol each.
  Sequence literal(std::string_view text);
  // One code point of `ranges`, in UTF-8 (surrogates excluded).
  Symbol code_points(const CodePointRanges& ranges);
  // A rule with the given alternatives.
  Symbol group(std::vector<Sequence> alternatives, const std::string& hint = "group");
  // `item` at least `min` and at most `max` times (no max: unbounded).
  Result<Symbol> repeat(const Sequence& item, int64_t min, std::optional<int64_t> max);

  // Every referenced rule defined, a root, no left recursion (which the
  // matcher could expand forever), and a size the matcher can hold.
  Status validate() const;

  int32_t root() const { return root_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }

 private:
  std::vector<Rule> rules_;
  std::vector<ByteSet> byte_sets_;
  int32_t root_ = -1;
  size_t num_symbols_ = 0;  // in every alternative, each closed by an end
};

// Appends the UTF-8 bytes of code point `cp`.
void append_utf8(uint32_t cp, std::string& out);

// The code point of the UTF-8 sequence at text[pos], pos moved past it;
// nothing (pos unchanged) where the bytes are not UTF-8.  For the parsers
// of constraint texts.
std::optional<uint32_t> next_code_point(std::string_view text, size_t& pos);

// Up to `max_digits` hex digits at text[pos] as a number, pos moved past
// them; `digits` says how many there were.
uint32_t read_hex_digits(std::string_view text, size_t& pos, int max_digits, int& digits);

// Code points of `ranges` that are not in them (within 0..kMaxCodePoint).
CodePointRanges complement(CodePointRanges ranges);

}  // namespace vllm::structured
