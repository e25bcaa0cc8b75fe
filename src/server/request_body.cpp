#include "server/request_body.h"

#include "api/json_fields.h"

namespace vllm::server {

Result<Json> parse_request_body(std::string_view body) {
  Result<Json> j = api::parse_json_object(body);
  if (!j.is_ok()) return invalid_argument("the request body: " + j.status().message()).with_param("");
  return j;
}

}  // namespace vllm::server
