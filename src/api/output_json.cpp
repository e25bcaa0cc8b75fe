#include "api/output_json.h"

#include <cmath>

namespace vllm::api {

OrderedJson finish_reason_json(const std::optional<FinishReason>& reason) {
  return reason ? OrderedJson(finish_reason_name(*reason)) : OrderedJson(nullptr);
}

OrderedJson stop_reason_json(const StopReason& reason) {
  if (const auto* text = std::get_if<std::string>(&reason)) return *text;
  if (const auto* id = std::get_if<int32_t>(&reason)) return *id;
  return nullptr;
}

double reported_logprob(float logprob) { return std::isinf(logprob) ? -9999.0 : static_cast<double>(logprob); }

}  // namespace vllm::api
