#include "engine/sched/sampling_params.h"

#include <cmath>
#include <sstream>

namespace vllm {

Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0 || temperature > 2.0) {
    std::ostringstream msg;
    msg << "temperature must be in [0, 2], got " << temperature << ".";
    return invalid_argument(msg.str());
  }
  if (max_tokens < 1) return invalid_argument("max_tokens must be at least 1, got " + std::to_string(max_tokens) + ".");
  return Status::ok();
}

}  // namespace vllm
