// The request fields that ask for structured output, in every spelling vLLM
// accepts: `structured_outputs` (vLLM >= 0.11), the older `guided_json`,
// `guided_regex`, `guided_choice`, `guided_grammar`, and OpenAI's
// `response_format`.  At most one constraint per request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "structured/structured_output.h"

namespace vllm::api {

// The constraints read so far, to refuse a request that gives two.
using StructuredOutputFields = std::vector<structured::StructuredOutputSpec>;

// Reads `key` if it is one of these fields: true if it was, false if not;
// an error naming the field for a malformed value or an option we do not have.
Result<bool> read_structured_output_field(StructuredOutputFields& fields, const std::string& key, const Json& value);

// The request's one constraint, if any.
Result<std::optional<structured::StructuredOutputSpec>> single_constraint(const StructuredOutputFields& fields);

// A schema given as a JSON object reaches us through Json, whose objects
// sort their keys; but the order of a schema's properties is the order the
// model writes them in (a "reasoning" before an "answer"), so the schema's
// text is taken again from the request as sent.  `request_text` is the
// request already parsed once (within the parser's limits).
void keep_schema_key_order(std::string_view request_text, std::optional<structured::StructuredOutputSpec>& spec);
// The same from the request parsed with its keys in order, where the caller needs that parse anyway.
void keep_parsed_schema_key_order(const OrderedJson& request, std::optional<structured::StructuredOutputSpec>& spec);

}  // namespace vllm::api
