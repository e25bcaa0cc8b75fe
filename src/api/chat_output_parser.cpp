#include "api/chat_output_parser.h"

#include "api/tools/json_text.h"

namespace vllm::api {
namespace {

// A "required" answer: the JSON list [{"name", "parameters"}, ...] its schema forced.
std::optional<std::vector<ToolCall>> required_calls(std::string_view text) {
  const OrderedJson list = OrderedJson::parse(text, nullptr, false);
  if (list.is_discarded() || !list.is_array() || list.empty()) return std::nullopt;
  std::vector<ToolCall> calls;
  for (const OrderedJson& item : list) {
    std::optional<ToolCall> call = tool_call_from_json(item, {"parameters"});
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  return calls;
}

}  // namespace

void ChatDelta::append(ChatDelta&& more) {
  reasoning += more.reasoning;
  content += more.content;
  for (ToolCallDelta& call : more.tool_calls) tool_calls.push_back(std::move(call));
}

ChatOutputParser::ChatOutputParser(ChatOutputOptions options) : options_(std::move(options)) {
  if (options_.reasoning) reasoning_.emplace(*options_.reasoning);
}

ChatDelta ChatOutputParser::push(std::string_view text) {
  ChatDelta out;
  if (!reasoning_) {
    take_content(text, false, out);
    return out;
  }
  ReasoningDelta split = reasoning_->push(text);
  out.reasoning = std::move(split.reasoning);
  take_content(split.content, false, out);
  return out;
}

ChatDelta ChatOutputParser::finish() {
  ChatDelta out;
  if (reasoning_) {
    ReasoningDelta split = reasoning_->finish();
    out.reasoning = std::move(split.reasoning);
    take_content(split.content, true, out);
  } else {
    take_content({}, true, out);
  }
  return out;
}

void ChatOutputParser::take_content(std::string_view content, bool final, ChatDelta& out) {
  switch (options_.tool_choice) {
    case ToolChoice::kNone:
      out.content += content;
      return;
    case ToolChoice::kNamed:
      // The whole answer is the function's arguments (the schema saw to it).
      if (!named_opened_ && (!content.empty() || final)) {
        out.tool_calls.push_back({0, true, options_.function_name, std::string(content)});
        named_opened_ = true;
      } else if (!content.empty()) {
        out.tool_calls.push_back({0, false, {}, std::string(content)});
      }
      return;
    case ToolChoice::kRequired:
      content_ += content;
      if (!final) return;
      if (std::optional<std::vector<ToolCall>> calls = required_calls(content_)) {
        emit_calls(std::move(*calls), out);
      } else {
        out.content = content_;  // cut off by max_tokens before the list closed
      }
      return;
    case ToolChoice::kAuto:
      break;
  }
  content_ += content;
  if (!section_started_) {
    const ToolSectionStart start = options_.tool_parser->find_start(content_);
    const size_t end = final && !start.started ? content_.size() : start.content_end;
    if (end > emitted_) {
      out.content += content_.substr(emitted_, end - emitted_);
      emitted_ = end;
    }
    section_started_ = start.started;
  }
  if (!final || !section_started_) return;
  if (std::optional<std::vector<ToolCall>> calls =
          options_.tool_parser->parse_calls(std::string_view(content_).substr(emitted_))) {
    if (!options_.parallel_tool_calls) calls->resize(1);
    emit_calls(std::move(*calls), out);
  } else {
    out.content += content_.substr(emitted_);  // not calls after all: plain content
  }
}

void ChatOutputParser::emit_calls(std::vector<ToolCall> calls, ChatDelta& out) {
  for (size_t i = 0; i < calls.size(); ++i) {
    out.tool_calls.push_back({i, true, std::move(calls[i].name), std::move(calls[i].arguments)});
  }
  chose_tools_ = true;
}

}  // namespace vllm::api
