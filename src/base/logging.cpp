#include "base/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vllm {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};

const char* level_tag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARNING";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}
}  // namespace

void set_log_level(LogLevel level) { g_level.store(level); }
LogLevel log_level() { return g_level.load(); }

namespace detail {

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  stream_ << level_tag(level) << " [" << base_name(file) << ":" << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  const std::string text = stream_.str();
  // One fwrite per line keeps lines from different threads whole.
  std::fwrite(text.data(), 1, text.size(), stderr);
  (void)level_;
}

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "FATAL [%s:%d] check failed: %s %s\n", base_name(file), line, expr, msg.c_str());
  std::abort();
}

}  // namespace detail
}  // namespace vllm
