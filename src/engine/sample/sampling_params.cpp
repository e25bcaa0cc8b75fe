#include "engine/sample/sampling_params.h"

#include <cmath>
#include <sstream>

namespace vllm {
namespace {

template <typename T>
Status out_of_range(const char* field, const char* range, T got) {
  std::ostringstream msg;
  msg << field << " must be " << range << ", got " << got << ".";
  return invalid_argument(msg.str()).with_param(field);
}

constexpr int32_t kMaxN = 16384;  // API.md

bool in_closed(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

// Beam search picks tokens by score alone: the fields that shape sampling or
// stopping mean nothing to it, so asking for them is an error, not a no-op.
Status validate_beam_search(const SamplingParams& p) {
  const SamplingParams d;
  const char* field = nullptr;
  if (p.top_p != d.top_p) field = "top_p";
  if (p.top_k > 0) field = "top_k";
  if (p.min_p != d.min_p) field = "min_p";
  if (p.presence_penalty != 0.0 || p.frequency_penalty != 0.0) field = "presence_penalty/frequency_penalty";
  if (p.repetition_penalty != 1.0) field = "repetition_penalty";
  if (!p.logit_bias.empty()) field = "logit_bias";
  if (p.min_tokens != 0) field = "min_tokens";
  if (!p.stop.empty()) field = "stop";
  if (!p.stop_token_ids.empty()) field = "stop_token_ids";
  if (p.logprobs) field = "logprobs";
  if (p.prompt_logprobs) field = "prompt_logprobs";
  if (field != nullptr) {
    return invalid_argument(std::string(field) + " is not supported with beam search.").with_param(field);
  }
  if (p.grammar_after_token_id && p.structured_outputs) {
    const std::string& constraint = p.structured_outputs->request_field;
    return invalid_argument(constraint + " after a reasoning model's thinking is not supported with beam search.")
        .with_param(constraint);
  }
  return Status::ok();
}

}  // namespace

Status SamplingParams::validate() const {
  if (n < 1 || n > kMaxN) return out_of_range("n", "in [1, 16384]", n);
  if (!in_closed(temperature, 0.0, 2.0)) return out_of_range("temperature", "in [0, 2]", temperature);
  if (!std::isfinite(top_p) || top_p <= 0.0 || top_p > 1.0) return out_of_range("top_p", "in (0, 1]", top_p);
  if (top_k < -1) return out_of_range("top_k", "-1, 0 (both disable) or at least 1", top_k);
  if (!in_closed(min_p, 0.0, 1.0)) return out_of_range("min_p", "in [0, 1]", min_p);
  if (!in_closed(presence_penalty, -2.0, 2.0)) return out_of_range("presence_penalty", "in [-2, 2]", presence_penalty);
  if (!in_closed(frequency_penalty, -2.0, 2.0)) {
    return out_of_range("frequency_penalty", "in [-2, 2]", frequency_penalty);
  }
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0.0) {
    return out_of_range("repetition_penalty", "greater than 0 and finite", repetition_penalty);
  }
  for (const auto& [id, bias] : logit_bias) {
    if (!std::isfinite(bias))
      return invalid_argument("logit_bias values must be finite numbers.").with_param("logit_bias");
  }
  if (allowed_token_ids && allowed_token_ids->empty()) {
    return invalid_argument("allowed_token_ids must not be empty.").with_param("allowed_token_ids");
  }
  if (max_tokens < 1) return out_of_range("max_tokens", "at least 1", max_tokens);
  if (min_tokens < 0) return out_of_range("min_tokens", "at least 0", min_tokens);
  if (min_tokens > max_tokens) {
    return invalid_argument("min_tokens (" + std::to_string(min_tokens) + ") must be at most max_tokens (" +
                            std::to_string(max_tokens) + ").")
        .with_param("min_tokens");
  }
  for (const std::string& s : stop) {
    if (s.empty()) return invalid_argument("stop strings must not be empty.").with_param("stop");
  }
  if (logprobs && *logprobs < 0) return out_of_range("logprobs", "at least 0", *logprobs);
  if (prompt_logprobs && *prompt_logprobs < 0) return out_of_range("prompt_logprobs", "at least 0", *prompt_logprobs);
  if (!std::isfinite(length_penalty)) {
    return invalid_argument("length_penalty must be a finite number.").with_param("length_penalty");
  }
  if (use_beam_search) return validate_beam_search(*this);
  if (n > 1 && is_greedy()) {
    return invalid_argument("n must be 1 when using greedy sampling (temperature 0), got " + std::to_string(n) + ".")
        .with_param("n");
  }
  return Status::ok();
}

}  // namespace vllm
