// The JSON-lines files of `vllm-cpp generate --input/--output`: one request
// per input line ({"prompt" | "prompt_token_ids", sampling fields}), one
// vLLM-RequestOutput-shaped line per request, in input order.
#pragma once

#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "engine/llm_engine.h"

namespace vllm::cli {

struct BatchRequest {
  PromptInput prompt;
  SamplingParams params;
  size_t line_number = 0;  // in the input file, from 1
};

// Parses one line; fields it lacks take their values from `defaults`.
// Unknown fields are errors, so that a misspelt one is never ignored.
Result<BatchRequest> parse_batch_request(const std::string& line, const SamplingParams& defaults);

// Reads every non-blank line of `path` ("-": standard input); errors name the line.
Result<std::vector<BatchRequest>> read_batch_requests(const std::string& path, const SamplingParams& defaults);

// {"index", "prompt_token_ids", "outputs": [{"index", "text", "token_ids", "finish_reason"}]}
OrderedJson batch_output_json(size_t index, const RequestOutput& output);

}  // namespace vllm::cli
