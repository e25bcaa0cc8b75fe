#include "structured/json_schema_grammar.h"

#include "structured/gbnf.h"

namespace vllm::structured {
namespace {

// Any JSON value, in GBNF.  Runs of whitespace are bounded, and so are the
// digits of a number: a model that drifts into either would otherwise fill
// max_tokens with them and never close the document.  Two exponent digits
// keep every number a finite double (a validator's parser may refuse 1e400).
constexpr std::string_view kJsonValueRules = R"(
json-value  ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" json-ws ( json-member ( "," json-ws json-member )* )? "}"
json-member ::= json-string json-ws ":" json-ws json-value json-ws
json-array  ::= "[" json-ws ( json-value json-ws ( "," json-ws json-value json-ws )* )? "]"
json-string ::= "\"" json-char* "\""
json-char   ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?
json-ws     ::= [ \t\n\r]{0,20}
)";

}  // namespace

Result<Grammar> json_object_grammar() {
  Grammar g;
  const std::string text = std::string("root ::= json-object\n") + std::string(kJsonValueRules);
  VLLM_ASSIGN_OR_RETURN(int32_t root, parse_gbnf_into(text, g));
  g.set_root(root);
  VLLM_RETURN_IF_ERROR(g.validate());
  return g;
}

Result<Grammar> json_schema_grammar(std::string_view schema_text) {
  (void)schema_text;
  return invalid_argument("JSON schema constraints are not supported yet");
}

}  // namespace vllm::structured
