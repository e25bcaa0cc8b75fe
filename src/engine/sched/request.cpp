#include "engine/sched/request.h"

#include "base/clock.h"
#include "engine/lora/lora_adapter.h"

namespace vllm {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kQueueTimeout:
      return "queue_timeout";
  }
  return "unknown";
}

Request::Request(RequestId id, std::vector<int32_t> prompt_token_ids, SamplingParams params, std::string cache_salt,
                 std::shared_ptr<const LoraAdapter> lora)
    : id(id),
      params(std::move(params)),
      cache_salt(std::move(cache_salt)),
      lora(std::move(lora)),
      all_token_ids(std::move(prompt_token_ids)),
      arrival_time(now_seconds()),
      num_prompt_tokens_(static_cast<int32_t>(all_token_ids.size())),
      grammar_matcher_(this->params.grammar ? std::make_unique<structured::GrammarMatcher>(this->params.grammar)
                                            : nullptr),
      grammar_started_(grammar_matcher_ && !this->params.grammar_after_token_id) {
  if (grammar_matcher_ && this->params.grammar_resume) {
    const auto n = static_cast<size_t>(this->params.grammar_resume->num_prompt_tokens);
    for (size_t i = all_token_ids.size() - n; i < all_token_ids.size(); ++i)
      grammar_matcher_->accept_token(all_token_ids[i]);
  }
}

int64_t Request::lora_id() const { return lora != nullptr ? lora->id : 0; }

const std::string& Request::lora_name() const {
  static const std::string kBase;
  return lora != nullptr ? lora->name : kBase;
}

void Request::advance_grammar(int32_t token) {
  if (grammar_started_) {
    // The sampler drew the token from the grammar's mask, so the matcher takes it.
    grammar_matcher_->accept_token(token);
  } else if (grammar_matcher_ && token == params.grammar_after_token_id) {
    grammar_started_ = true;
  }
}

}  // namespace vllm
