#include "server/api_error.h"

#include "base/json.h"

namespace vllm::server {
namespace {

const char* error_type(int status) {
  switch (status) {
    case 400:
      return "BadRequestError";
    case 401:
      return "AuthenticationError";
    case 404:
      return "NotFoundError";
    case 405:
      return "MethodNotAllowedError";
    case 413:
      return "RequestTooLargeError";
    case 503:
      return "ServiceUnavailableError";
    default:
      return "InternalServerError";
  }
}

}  // namespace

HttpResponse error_response(int status, const std::string& message, const std::string& param) {
  OrderedJson error;
  error["message"] = message;
  error["type"] = error_type(status);
  error["param"] = param.empty() ? OrderedJson(nullptr) : OrderedJson(param);
  error["code"] = status;
  OrderedJson body;
  body["error"] = std::move(error);
  return {status, "application/json", dump_json(body)};
}

HttpResponse error_response(const Status& status) {
  int http_status = 500;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kUnimplemented:
      http_status = 400;
      break;
    case StatusCode::kNotFound:
      http_status = 404;
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
      http_status = 503;
      break;
    default:
      break;
  }
  HttpResponse response = error_response(http_status, status.message(), status.param());
  // Busy, not broken: the client may come back (in a second, as far as we can tell).
  if (status.code() == StatusCode::kResourceExhausted) response.headers.emplace_back("Retry-After", "1");
  return response;
}

}  // namespace vllm::server
