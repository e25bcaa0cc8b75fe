#include "base/status.h"

namespace vllm {

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  Status s(code_, context + ": " + message_);
  s.param_ = param_;
  return s;
}

Status Status::with_param(std::string param) const {
  Status s = *this;
  s.param_ = std::move(param);
  return s;
}

}  // namespace vllm
