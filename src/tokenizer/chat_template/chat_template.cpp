#include "tokenizer/chat_template/chat_template.h"

#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/parser.h"

namespace vllm {

Result<ChatTemplate> ChatTemplate::compile(const std::string& source) {
  try {
    ChatTemplate t;
    t.body_ = std::make_shared<const jinja::Body>(jinja::parse_template(source));
    return t;
  } catch (const jinja::TemplateError& e) {
    return invalid_argument(std::string("chat template syntax error: ") + e.what());
  }
}

Result<std::string> ChatTemplate::render(const OrderedJson& messages, bool add_generation_prompt,
                                         const OrderedJson& variables, std::stop_token stop) const {
  jinja::Dict vars;
  if (variables.is_object()) {
    for (const auto& [k, v] : variables.items()) vars.emplace_back(k, jinja::Value::from_json(v));
  }
  vars.emplace_back("messages", jinja::Value::from_json(messages));
  vars.emplace_back("add_generation_prompt", jinja::Value(add_generation_prompt));
  try {
    return jinja::render(*body_, vars, std::move(stop));
  } catch (const jinja::TemplateError& e) {
    return invalid_argument(e.what());
  }
}

}  // namespace vllm
