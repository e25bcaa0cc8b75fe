#include "server/lora_adapter_request.h"

#include <initializer_list>

#include "api/json_fields.h"
#include "server/request_body.h"

namespace vllm::server {
namespace {

Status check_fields(const Json& j, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : j.items()) {
    bool found = false;
    for (const char* k : known) found = found || key == k;
    if (!found) return invalid_argument("unsupported field '" + key + "'").with_param(key);
  }
  return Status::ok();
}

// A string field, "" when absent or null.
Result<std::string> optional_string(const Json& j, const char* name) {
  if (!j.contains(name) || j[name].is_null()) return std::string();
  return api::read_string(j[name], name);
}

}  // namespace

Result<LoadLoraRequest> parse_load_lora_request(const std::string& body) {
  VLLM_ASSIGN_OR_RETURN(const Json j, parse_request_body(body));
  VLLM_RETURN_IF_ERROR(check_fields(j, {"lora_name", "lora_path", "load_inplace"}));
  LoadLoraRequest r;
  VLLM_ASSIGN_OR_RETURN(r.module.name, optional_string(j, "lora_name"));
  VLLM_ASSIGN_OR_RETURN(r.module.path, optional_string(j, "lora_path"));
  if (r.module.name.empty() || r.module.path.empty()) {
    return invalid_argument("Both 'lora_name' and 'lora_path' must be provided.");
  }
  if (j.contains("load_inplace") && !j["load_inplace"].is_null()) {
    VLLM_ASSIGN_OR_RETURN(r.load_inplace, api::read_bool(j["load_inplace"], "load_inplace"));
  }
  return r;
}

Result<std::string> parse_unload_lora_request(const std::string& body) {
  VLLM_ASSIGN_OR_RETURN(const Json j, parse_request_body(body));
  VLLM_RETURN_IF_ERROR(check_fields(j, {"lora_name", "lora_int_id"}));
  if (j.contains("lora_int_id") && !j["lora_int_id"].is_null() && !j["lora_int_id"].is_number_integer()) {
    return invalid_argument("lora_int_id must be an integer").with_param("lora_int_id");
  }
  VLLM_ASSIGN_OR_RETURN(std::string name, optional_string(j, "lora_name"));
  if (name.empty()) return invalid_argument("'lora_name' needs to be provided to unload a LoRA adapter.");
  return name;
}

}  // namespace vllm::server
