#include "engine/input_processor.h"

#include <algorithm>

namespace vllm {
namespace {

Status check_logprobs_limit(const char* field, const std::optional<int32_t>& value, int32_t max_logprobs) {
  if (value && *value > max_logprobs) {
    return invalid_argument(std::string(field) + " must be at most " + std::to_string(max_logprobs) +
                            " (--max-logprobs), got " + std::to_string(*value) + ".")
        .with_param(field);
  }
  return Status::ok();
}

// The vocabulary as grammars see it: each token's bytes, none for special
// tokens or for ids the tokenizer does not have.
std::shared_ptr<const structured::TokenVocabulary> grammar_vocabulary(const Tokenizer& tokenizer, int64_t vocab_size,
                                                                      std::vector<int32_t> eos_token_ids) {
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  const int64_t known = std::min<int64_t>(tokenizer.vocab_size(), vocab_size);
  for (int32_t id = 0; id < known; ++id) {
    if (!tokenizer.is_special(id)) bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
  }
  return std::make_shared<const structured::TokenVocabulary>(std::move(bytes), std::move(eos_token_ids));
}

// vLLM's reading of bad_words: each word is tokenised as it is (with its
// leading spaces dropped) and after one space; the second reading counts
// only if the space makes a different first token and no more tokens, so
// that a word is banned at the start of the text and in its middle.
std::vector<std::vector<int32_t>> bad_words_token_ids(const Tokenizer& tokenizer,
                                                      const std::vector<std::string>& bad_words) {
  std::vector<std::vector<int32_t>> out;
  for (const std::string& word : bad_words) {
    const std::string bare = word.substr(std::min(word.find_first_not_of(' '), word.size()));
    std::vector<int32_t> alone = tokenizer.encode(bare, false);
    std::vector<int32_t> spaced = tokenizer.encode(" " + bare, false);
    if (alone.empty()) continue;
    out.push_back(alone);
    if (!spaced.empty() && spaced.front() != alone.front() && spaced.size() == alone.size()) out.push_back(spaced);
  }
  return out;
}

}  // namespace

structured::GrammarCache& InputProcessor::grammars() const {
  std::call_once(grammars_made_, [&] {
    grammars_ = std::make_unique<structured::GrammarCache>(
        grammar_vocabulary(tokenizer_, core_.vocab_size(), core_.eos_token_ids()));
  });
  return *grammars_;
}

Result<int32_t> truncated_prompt_length(int32_t truncate_prompt_tokens, int32_t max_model_len) {
  if (truncate_prompt_tokens == -1) return max_model_len;
  if (truncate_prompt_tokens < 1 || truncate_prompt_tokens > max_model_len) {
    return invalid_argument("truncate_prompt_tokens must be -1 or in [1, " + std::to_string(max_model_len) +
                            "] (max_model_len), got " + std::to_string(truncate_prompt_tokens))
        .with_param("truncate_prompt_tokens");
  }
  return truncate_prompt_tokens;
}

Result<ProcessedRequest> InputProcessor::process(const PromptInput& prompt, const SamplingParams& params) const {
  ProcessedRequest r;
  r.prompt_token_ids = prompt.token_ids ? *prompt.token_ids : tokenizer_.encode(prompt.text, prompt.add_special_tokens);
  const int32_t max_model_len = core_.config().config.scheduler.max_model_len;
  if (prompt.truncate_prompt_tokens) {
    VLLM_ASSIGN_OR_RETURN(const int32_t keep, truncated_prompt_length(*prompt.truncate_prompt_tokens, max_model_len));
    if (r.prompt_token_ids.size() > static_cast<size_t>(keep)) {
      r.prompt_token_ids.erase(r.prompt_token_ids.begin(), r.prompt_token_ids.end() - keep);
    }
  }
  r.params = params;
  if (params.max_tokens_from_context) {
    r.params.max_tokens = std::max<int64_t>(1, max_model_len - static_cast<int64_t>(r.prompt_token_ids.size()));
  }
  r.cache_salt = prompt.cache_salt;
  if (!prompt.lora_name.empty()) {
    if (loras_ == nullptr) return not_found("The model `" + prompt.lora_name + "` does not exist.").with_param("model");
    Result<std::shared_ptr<const LoraAdapter>> lora = loras_->find(prompt.lora_name);
    if (!lora.is_ok()) return lora.status().with_param("model");
    r.lora = std::move(*lora);
  }
  VLLM_RETURN_IF_ERROR(check_logprobs_limit("logprobs", params.logprobs, max_logprobs_));
  VLLM_RETURN_IF_ERROR(check_logprobs_limit("prompt_logprobs", params.prompt_logprobs, max_logprobs_));
  if (params.use_beam_search && params.output_kind != OutputKind::kFinalOnly) {
    return invalid_argument("beam search cannot stream: its beams are only known at the end.");
  }
  VLLM_RETURN_IF_ERROR(core_.check_request(r.prompt_token_ids, r.params));
  r.params.bad_words_token_ids = bad_words_token_ids(tokenizer_, params.bad_words);
  if (params.structured_outputs) {
    Result<std::shared_ptr<const structured::CompiledGrammar>> grammar = grammars().get(*params.structured_outputs);
    if (!grammar.is_ok()) return grammar.status().with_param(params.structured_outputs->request_field);
    r.params.grammar = std::move(*grammar);
  }
  return r;
}

}  // namespace vllm
