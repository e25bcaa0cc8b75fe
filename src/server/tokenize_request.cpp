#include "server/tokenize_request.h"

#include "api/json_fields.h"
#include "api/tools/tool_request.h"
#include "server/request_body.h"

namespace vllm::server {
namespace {

Status bad(const std::string& message, const std::string& param) { return invalid_argument(message).with_param(param); }

// An absent or null flag keeps its default.
Status read_flag(const Json& j, const char* name, bool& out) {
  if (!j.contains(name) || j[name].is_null()) return Status::ok();
  VLLM_ASSIGN_OR_RETURN(out, api::read_bool(j[name], name));
  return Status::ok();
}

}  // namespace

Result<TokenizeRequest> parse_tokenize_request(const std::string& body, const ChatRenderer& renderer,
                                               std::stop_token stop) {
  VLLM_ASSIGN_OR_RETURN(const Json j, parse_request_body(body));
  TokenizeRequest r;
  if (j.contains("messages")) {
    VLLM_ASSIGN_OR_RETURN(ChatPrompt chat, read_chat_prompt(j));
    if (j.contains("tools")) {
      // As the chat endpoint shows them to the template: in the order sent.
      VLLM_ASSIGN_OR_RETURN(const api::ToolRequest tools,
                            api::read_tool_request(OrderedJson::parse(body, nullptr, false)));
      chat.tools = tools.tools;
    }
    Result<std::string> rendered = renderer.render(chat, std::move(stop));
    if (!rendered.is_ok()) return rendered.status().with_param("messages");
    r.text = *rendered;
    r.add_special_tokens = false;  // the template supplies BOS
  } else if (j.contains("prompt") && j["prompt"].is_string()) {
    r.text = j["prompt"].get<std::string>();
  } else {
    return bad("tokenize needs a string 'prompt' or 'messages'", "prompt");
  }
  VLLM_RETURN_IF_ERROR(read_flag(j, "add_special_tokens", r.add_special_tokens));
  VLLM_RETURN_IF_ERROR(read_flag(j, "return_token_strs", r.return_token_strs));
  return r;
}

Result<std::vector<int32_t>> parse_detokenize_request(const std::string& body, int32_t vocab_size) {
  VLLM_ASSIGN_OR_RETURN(const Json j, parse_request_body(body));
  VLLM_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                        api::read_token_ids(j.contains("tokens") ? j["tokens"] : Json(), "tokens"));
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size)
      return bad("token id " + std::to_string(id) + " is outside the vocabulary", "tokens");
  }
  return ids;
}

}  // namespace vllm::server
