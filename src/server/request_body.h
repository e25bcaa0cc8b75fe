// The JSON body of a POST request, parsed within api::kRequestJsonLimits so
// that no body, however deep or wide, costs more than bounded time and memory.
#pragma once

#include <string_view>

#include "base/json.h"
#include "base/status.h"

namespace vllm::server {

// The body as a JSON object; otherwise a 400 naming the limit it passed,
// or why it is not JSON, or that it is not an object.
Result<Json> parse_request_body(std::string_view body);

}  // namespace vllm::server
