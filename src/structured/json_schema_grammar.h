// JSON as grammars: any JSON object (vLLM's json_object), and the JSON
// texts a JSON schema allows (vLLM's json / guided_json, OpenAI's
// response_format json_schema).  A schema keyword that constrains values in
// a way the grammar cannot enforce is refused by name, never skipped.
#pragma once

#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace vllm::structured {

// `any_whitespace` false: no whitespace between tokens (vLLM's
// disable_any_whitespace), the compact text a model cannot pad.
Result<Grammar> json_object_grammar(bool any_whitespace = true);

// `schema_text`: the schema as JSON text.
Result<Grammar> json_schema_grammar(std::string_view schema_text, bool any_whitespace = true);

}  // namespace vllm::structured
