// The OpenAI-style error envelope of docs/API.md §2:
// {"error": {"message", "type", "param", "code"}}, with the HTTP status as
// an integer code.
#pragma once

#include <string>

#include "base/status.h"
#include "server/http_server.h"

namespace vllm::server {

HttpResponse error_response(int status, const std::string& message, const std::string& param = "");

// A Status from the engine or the request parser: its code picks the HTTP
// status (invalid argument 400, not found 404, unavailable 503, resource
// exhausted 503 with Retry-After, else 500), its param the "param".
HttpResponse error_response(const Status& status);

}  // namespace vllm::server
