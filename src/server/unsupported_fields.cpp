#include "server/unsupported_fields.h"

#include <string_view>

namespace vllm::server {
namespace {

// The fields and the feature each belongs to.
struct Unsupported {
  std::string_view field;
  std::string_view feature;
};

constexpr Unsupported kUnsupported[] = {
    {"structural_tag", "structural tags"},
    {"priority", "priority scheduling"},
    {"kv_transfer_params", "KV transfer"},
    {"vllm_xargs", "vllm_xargs"},
    {"logits_processors", "custom logits processors"},
    {"return_tokens_as_token_ids", "return_tokens_as_token_ids"},
    {"return_token_ids", "return_token_ids"},
    {"chat_template", "request chat templates (--trust-request-chat-template)"},
};

bool is_default(const Json& v) {
  if (v.is_null()) return true;
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number()) return v == 0;
  return (v.is_array() || v.is_object()) && v.empty();
}

}  // namespace

Status check_unsupported_field(const std::string& key, const Json& value) {
  for (const Unsupported& u : kUnsupported) {
    if (u.field != key) continue;
    if (is_default(value)) return Status::ok();
    return invalid_argument("field '" + key + "' is not supported yet (" + std::string(u.feature) + ")")
        .with_param(key);
  }
  return Status::ok();
}

}  // namespace vllm::server
