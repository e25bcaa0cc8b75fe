// Clocks: a monotonic one for timings, and calendar time for timestamps.
#pragma once

#include <chrono>
#include <cstdint>

namespace vllm {

inline double now_seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// Seconds since the Unix epoch (e.g. OpenAI's "created").
inline int64_t now_unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The same, with its fraction (e.g. a Prometheus gauge set to the current time).
inline double now_unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace vllm
