// Tool calls in a model's own words: each family of models writes its calls
// in a format of its own (Hermes' <tool_call> tags, Llama 3's bare JSON,
// Mistral's [TOOL_CALLS] list, Python calls), and `--tool-call-parser NAME`
// says which one to read when a request lets the model choose (tool_choice
// "auto").  A parser finds where the calls begin, so that the text before
// them streams as content while the calls are held until they are whole.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm::api {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text, as json.dumps writes it
};

// Where the tool calls of an output begin, as far as its text so far shows.
struct ToolSectionStart {
  bool started = false;
  // Content that is safe to emit: the bytes before the calls once started,
  // else those that cannot be the beginning of the calls' marker.
  size_t content_end = 0;
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;

  // `text` is the content generated so far (it only grows).
  virtual ToolSectionStart find_start(std::string_view text) const = 0;

  // The calls of a whole tool section (the text from where find_start said
  // they begin to the end of the output); nullopt if it is not one, and then
  // the section is plain content.
  virtual std::optional<std::vector<ToolCall>> parse_calls(std::string_view section) const = 0;

  // The id of a call the model made: "chatcmpl-tool-" and 32 hex digits
  // (vLLM), or the format the model family's own ids have.
  virtual std::string make_call_id(std::string_view random_hex) const;

  // The calls' markers are special tokens in the family's tokenizers
  // (Mistral's [TOOL_CALLS], some Hermes models' <tool_call>): the text must
  // keep special tokens for the parser to see them (vLLM's adjust_request).
  virtual bool needs_special_tokens() const { return false; }
};

// vLLM's id of a tool call: "chatcmpl-tool-" and the random hex digits (32).
std::string default_tool_call_id(std::string_view random_hex);

// hermes, llama3_json, mistral, pythonic; an error names the ones there are.
Result<std::unique_ptr<ToolCallParser>> make_tool_call_parser(const std::string& name);

// A call as a JSON object {"name": string, <the first of arguments_keys it
// has>: an object, or an object's JSON text}; nullopt if `call` is not one.
std::optional<ToolCall> tool_call_from_json(const OrderedJson& call, std::initializer_list<const char*> arguments_keys);

// Helpers for parsers whose calls begin at a marker anywhere in the output,
// or at the output's first non-whitespace byte.
ToolSectionStart find_marker_start(std::string_view text, std::string_view marker);
ToolSectionStart find_leading_start(std::string_view text, char first_byte);

}  // namespace vllm::api
