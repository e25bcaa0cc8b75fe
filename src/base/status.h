// Status / Result<T>: the one error type of the project.
//
// Anything a user, a file or the environment can cause is reported as a
// Status carrying a code and a message that names the thing and what was
// expected versus found. VLLM_CHECK (logging.h) is for broken invariants only.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace vllm {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad request or bad input value
  kNotFound,         // missing file, tensor or key
  kDataLoss,         // a file is truncated or corrupt
  kUnimplemented,    // a valid input we do not support (yet)
  kOutOfRange,       // a value beyond a limit (context length, pool size)
  kResourceExhausted,
  kInternal,
  kUnavailable,  // the service cannot take it now (e.g. shutting down)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with where the error was met, e.g. a file name.
  Status with_context(const std::string& context) const;

  // The request field the error is about, if any (the server's "param").
  const std::string& param() const { return param_; }
  Status with_param(std::string param) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string param_;
};

inline Status invalid_argument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
inline Status not_found(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status data_loss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
inline Status unimplemented(std::string msg) { return {StatusCode::kUnimplemented, std::move(msg)}; }
inline Status out_of_range(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
inline Status internal_error(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
inline Status unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool is_ok() const { return status_.is_ok(); }
  const Status& status() const { return status_; }

  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace vllm

#define VLLM_CONCAT_INNER_(a, b) a##b
#define VLLM_CONCAT_(a, b) VLLM_CONCAT_INNER_(a, b)

#define VLLM_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::vllm::Status vllm_status_ = (expr);           \
    if (!vllm_status_.is_ok()) return vllm_status_; \
  } while (0)

#define VLLM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define VLLM_ASSIGN_OR_RETURN(lhs, expr) VLLM_ASSIGN_OR_RETURN_IMPL_(VLLM_CONCAT_(vllm_result_, __LINE__), lhs, expr)
