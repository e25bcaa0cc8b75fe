#include "server/chat_prompt.h"

#include "base/file_util.h"

namespace vllm::server {
namespace {

// API.md §7.2: for models without a template of their own.
constexpr const char* kFallbackTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

// More template variables than any template reads; a client's kwargs beyond
// it are a 400, not seconds of rendering.
constexpr size_t kMaxTemplateKwargs = 1024;

Status bad(const std::string& message, const char* param) { return invalid_argument(message).with_param(param); }

// content: a string, null (an assistant's tool calls alone: "", as vLLM
// gives templates), or text parts joined with "\n".
Result<OrderedJson> normalise_content(const Json& content) {
  if (content.is_null()) return OrderedJson("");
  if (content.is_string()) return OrderedJson(content);
  if (!content.is_array()) return bad("message content must be a string, null or a list of parts", "messages");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    // Every member is type-checked before it is read: a wrong type is a 400, not an exception.
    const bool text_part = part.is_object() && part.contains("type") && part["type"] == "text" &&
                           part.contains("text") && part["text"].is_string();
    if (!text_part) {
      return bad("only text content parts are supported", "messages");
    }
    if (i > 0) text += "\n";
    text += part["text"].get<std::string>();
  }
  return OrderedJson(text);
}

// Templates print the arguments of earlier calls with tojson: a string of
// JSON becomes the object it holds (invalid or empty: {}).
void parse_tool_call_arguments(OrderedJson& message) {
  if (!message.contains("tool_calls") || !message["tool_calls"].is_array()) return;
  for (OrderedJson& call : message["tool_calls"]) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
    OrderedJson& function = call["function"];
    if (!function.contains("arguments") || !function["arguments"].is_string()) continue;
    OrderedJson parsed = OrderedJson::parse(function["arguments"].get<std::string>(), nullptr, false);
    function["arguments"] = parsed.is_discarded() ? OrderedJson::object() : std::move(parsed);
  }
}

}  // namespace

Result<ChatPrompt> read_chat_prompt(const Json& body) {
  ChatPrompt p;
  const Json& messages = body.contains("messages") ? body["messages"] : Json();
  if (!messages.is_array() || messages.empty()) return bad("messages must be a non-empty list", "messages");
  for (const Json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return bad("each message needs a string 'role'", "messages");
    }
    OrderedJson message = to_ordered_json(m);
    VLLM_ASSIGN_OR_RETURN(message["content"], normalise_content(m.contains("content") ? m["content"] : Json()));
    if (message["role"] == "assistant") parse_tool_call_arguments(message);
    p.messages.push_back(std::move(message));
  }
  auto flag = [&](const char* name, bool& out) -> Status {
    if (!body.contains(name) || body[name].is_null()) return Status::ok();
    if (!body[name].is_boolean()) return bad(std::string("field '") + name + "' must be true or false", name);
    out = body[name].get<bool>();
    return Status::ok();
  };
  VLLM_RETURN_IF_ERROR(flag("add_generation_prompt", p.add_generation_prompt));
  VLLM_RETURN_IF_ERROR(flag("continue_final_message", p.continue_final_message));
  if (p.add_generation_prompt && p.continue_final_message && body.contains("add_generation_prompt")) {
    return bad("continue_final_message and add_generation_prompt cannot both be true", "continue_final_message");
  }
  if (p.continue_final_message) p.add_generation_prompt = false;
  if (body.contains("chat_template_kwargs") && !body["chat_template_kwargs"].is_null()) {
    if (!body["chat_template_kwargs"].is_object()) {
      return bad("field 'chat_template_kwargs' must be an object", "chat_template_kwargs");
    }
    const Json& kwargs = body["chat_template_kwargs"];
    if (kwargs.size() > kMaxTemplateKwargs) {
      return bad("field 'chat_template_kwargs' has " + std::to_string(kwargs.size()) +
                     " keys, more than the limit of " + std::to_string(kMaxTemplateKwargs),
                 "chat_template_kwargs");
    }
    p.template_kwargs = kwargs;
  }
  return p;
}

Result<ChatRenderer> ChatRenderer::create(const Tokenizer& tokenizer,
                                          const std::optional<std::string>& override_template) {
  std::string source = tokenizer.chat_template().value_or(kFallbackTemplate);
  if (override_template) {
    Result<std::string> file =
        file_exists(*override_template) ? read_text_file(*override_template) : Result<std::string>(*override_template);
    if (!file.is_ok()) return file.status();
    source = *file;  // read from a path, or the template itself
  }
  Result<ChatTemplate> compiled = ChatTemplate::compile(source);
  if (!compiled.is_ok()) return compiled.status().with_context("chat template");
  return ChatRenderer(std::move(compiled).value(), to_ordered_json(tokenizer.special_token_variables()));
}

Result<std::string> ChatRenderer::render(const ChatPrompt& prompt, std::stop_token stop) const {
  // The request's kwargs, then the tokenizer's variables they do not replace;
  // built member by member, as OrderedJson's keyed insert would search each time.
  OrderedJson variables = to_ordered_json(prompt.template_kwargs);
  auto& members = static_cast<OrderedJson::object_t::Container&>(variables.get_ref<OrderedJson::object_t&>());
  for (const auto& [key, value] : variables_.items()) {
    if (!prompt.template_kwargs.contains(key)) members.emplace_back(key, value);
  }
  if (!prompt.tools.empty() && !prompt.template_kwargs.contains("tools")) members.emplace_back("tools", prompt.tools);
  VLLM_ASSIGN_OR_RETURN(std::string text,
                        template_.render(prompt.messages, prompt.add_generation_prompt, variables, stop));
  if (prompt.continue_final_message) {
    // The last message goes on: drop what the template put after its content (end of turn).
    const OrderedJson& last = prompt.messages.back()["content"];
    const std::string content = last.is_string() ? last.get<std::string>() : "";
    const size_t at = content.empty() ? std::string::npos : text.rfind(content);
    if (at != std::string::npos) text.resize(at + content.size());
  }
  return text;
}

}  // namespace vllm::server
