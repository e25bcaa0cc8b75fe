// Regular expressions as grammars (vLLM's `regex` / `guided_regex`, and a
// JSON schema's `pattern`).  The whole output must match, as in vLLM; a
// leading ^ and a trailing $ are accepted and change nothing.  The subset:
// literals and escapes (\n \t \r \f \v \xHH \x{H..} \uHHHH, escaped
// punctuation), `.` (any character but newline), classes [..] with ranges,
// negation and \d \w \s (and \D \W \S) inside or out, groups ( ), (?: ),
// (?P<name> ), (?<name> ), alternation |, and the quantifiers * + ? {n}
// {n,} {n,m} {,m}, greedy or lazy (the same language).  Anything else
// (backreferences, look-around, \b, inline flags, possessive quantifiers,
// \p{..}) is refused by name, never approximated.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace vllm::structured {

// What the matched characters are written as.
enum class RegexText {
  kRaw,         // themselves
  kJsonString,  // inside a JSON string: '"', '\\' and control characters escaped
};

// How many characters (code points, however the text writes them) a match has.
struct MatchLength {
  int64_t min = 0;
  std::optional<int64_t> max;  // none: unbounded
};

// The rules matching `pattern`, added to `grammar`; a reference to them.
// `length`, if given, gets the pattern's match lengths.
Result<Symbol> add_regex(std::string_view pattern, Grammar& grammar, RegexText text = RegexText::kRaw,
                         MatchLength* length = nullptr);

// A whole grammar matching `pattern`, validated.
Result<Grammar> regex_grammar(std::string_view pattern);

}  // namespace vllm::structured
