// Minimal leveled logging to stderr, and VLLM_CHECK for broken invariants.
//
// stdout belongs to the command's result (generated text, JSON lines), so
// every log line goes to stderr.
#pragma once

#include <sstream>
#include <string>

namespace vllm {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();

namespace detail {

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace detail
}  // namespace vllm

#define VLLM_LOG(level)                                   \
  if (::vllm::LogLevel::k##level < ::vllm::log_level()) { \
  } else                                                  \
    ::vllm::detail::LogMessage(::vllm::LogLevel::k##level, __FILE__, __LINE__).stream()

// Aborts with a message; only for conditions that no input can cause.
#define VLLM_CHECK(cond, ...)                                                                       \
  do {                                                                                              \
    if (!(cond)) ::vllm::detail::check_failed(#cond, __FILE__, __LINE__, std::string(__VA_ARGS__)); \
  } while (0)
