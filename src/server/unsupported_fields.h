// Request fields of features the server does not have yet (docs/API.md's
// [later] ones): accepted at their default value, a 400 naming the field
// otherwise, never silently ignored.
#pragma once

#include <string>

#include "base/json.h"
#include "base/status.h"

namespace vllm::server {

// OK if `key` is no such field, or `value` is its default (null, false, 0,
// an empty list or object).
Status check_unsupported_field(const std::string& key, const Json& value);

}  // namespace vllm::server
