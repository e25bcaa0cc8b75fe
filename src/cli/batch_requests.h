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

// Parses one line: the prompt, cache_salt, lora (an adapter's name), and every SamplingParams field by
// its API.md name (plus best_of, null or n; beam_width, another name for n).
// Fields it lacks take their values from `defaults`.  Unknown fields are
// errors, so that a misspelt one is never ignored.
Result<BatchRequest> parse_batch_request(const std::string& line, const SamplingParams& defaults);

// Reads every non-blank line of `path` ("-": standard input); errors name the line.
Result<std::vector<BatchRequest>> read_batch_requests(const std::string& path, const SamplingParams& defaults);

// vLLM's RequestOutput: {"index", "prompt_token_ids", "outputs": [{"index",
// "text", "token_ids", "cumulative_logprob", "logprobs" (when asked),
// "finish_reason", "stop_reason"}], "prompt_logprobs" (when asked)}, where a
// position's logprobs are {"<token id>": logprob} for the chosen token and the top ones.
OrderedJson batch_output_json(size_t index, const RequestOutput& output);

}  // namespace vllm::cli
