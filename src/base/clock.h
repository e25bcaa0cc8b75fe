// Monotonic wall-clock helpers for timings reported on stderr.
#pragma once

#include <chrono>

namespace vllm {

inline double now_seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

}  // namespace vllm
