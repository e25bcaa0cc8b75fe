#include "api/reasoning/reasoning_parser.h"

#include <algorithm>

#include "api/tools/json_text.h"

namespace vllm::api {

Status check_reasoning_parser_name(const std::string& parser) {
  if (parser == "deepseek_r1" || parser == "qwen3") return Status::ok();
  return invalid_argument("unknown --reasoning-parser '" + parser + "' (deepseek_r1, qwen3)");
}

Result<ReasoningFormat> reasoning_format(const std::string& parser, const Json& chat_template_kwargs) {
  VLLM_RETURN_IF_ERROR(check_reasoning_parser_name(parser));
  ReasoningFormat format;
  if (parser == "qwen3") {
    format.implicit_ends = {"<tool_call>"};
    const bool disabled = chat_template_kwargs.is_object() && chat_template_kwargs.contains("enable_thinking") &&
                          chat_template_kwargs["enable_thinking"] == false;
    format.thinking = !disabled;
  }
  return format;
}

ReasoningSplitter::ReasoningSplitter(ReasoningFormat format)
    : format_(std::move(format)), state_(format_.thinking ? State::kOpening : State::kAnswering) {}

ReasoningDelta ReasoningSplitter::push(std::string_view text) {
  pending_ += text;
  ReasoningDelta out;
  settle(out, false);
  return out;
}

ReasoningDelta ReasoningSplitter::finish() {
  ReasoningDelta out;
  settle(out, true);
  return out;
}

void ReasoningSplitter::settle(ReasoningDelta& out, bool final) {
  if (state_ == State::kOpening) {
    const size_t first = skip_json_whitespace(pending_);
    const std::string_view rest = std::string_view(pending_).substr(first);
    if (rest.substr(0, format_.start.size()) == format_.start) {
      pending_.erase(0, first + format_.start.size());
      state_ = State::kThinking;
    } else if (!final && format_.start.substr(0, rest.size()) == rest) {
      return;  // the start marker may be arriving
    } else {
      state_ = State::kThinking;  // the template opened the thinking in the prompt
    }
  }
  if (state_ == State::kThinking) {
    // The earliest end: the end marker (dropped) or an implicit one (kept).
    size_t at = pending_.find(format_.end);
    size_t skip = format_.end.size();
    size_t hold = partial_marker_length(pending_, format_.end);
    for (const std::string& marker : format_.implicit_ends) {
      const size_t implicit = pending_.find(marker);
      if (implicit < at) {
        at = implicit;
        skip = 0;
      }
      hold = std::max(hold, partial_marker_length(pending_, marker));
    }
    if (at == std::string::npos) {
      const size_t settled = final ? pending_.size() : pending_.size() - hold;
      out.reasoning += pending_.substr(0, settled);
      pending_.erase(0, settled);
      return;
    }
    out.reasoning += pending_.substr(0, at);
    pending_.erase(0, at + skip);
    state_ = State::kAnswering;
  }
  out.content += pending_;
  pending_.clear();
}

}  // namespace vllm::api
