// GBNF, llama.cpp's grammar notation, as the grammar text of requests
// (vLLM's `grammar` / `guided_grammar`).  Rules are `name ::= alternatives`;
// elements are "literals", [character classes] (ranges, ^ negation), `.`
// (any character), rule names and ( groups ), each optionally followed by
// *, +, ?, {m}, {m,}, {,n} or {m,n}; `#` starts a comment.  Literals and
// classes are Unicode text (\n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH
// escapes give code points).  The grammar starts at the rule `root`.
// Beyond llama.cpp, a rule may span lines freely: it ends where the next
// `name ::=` begins.
#pragma once

#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace vllm::structured {

// Adds the rules of `text` to `grammar` (names as written) and returns the
// rule `root`; errors give the line and column.
Result<int32_t> parse_gbnf_into(std::string_view text, Grammar& grammar);

// A whole grammar from GBNF text, validated.
Result<Grammar> parse_gbnf(std::string_view text);

}  // namespace vllm::structured
