// libFuzzer target: arbitrary bytes as a chat template, compiled and
// rendered against a small conversation.  Either an error value or output,
// never a crash or a hang.
#include <string>

#include "base/json.h"
#include "tokenizer/chat_template/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const vllm::OrderedJson messages = vllm::OrderedJson::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi {{ x }}"},
          {"role": "assistant", "content": "<think>a</think>Hello"}, {"role": "user", "content": "Bye"}])");
  static const vllm::OrderedJson variables = vllm::OrderedJson::parse(
      R"({"bos_token": "<s>", "eos_token": "</s>", "tools": [{"type": "function", "function": {"name": "f"}}]})");
  const std::string source(reinterpret_cast<const char*>(data), size);
  vllm::Result<vllm::ChatTemplate> tmpl = vllm::ChatTemplate::compile(source);
  if (!tmpl.is_ok()) return 0;
  (void)tmpl->render(messages, true, variables);
  return 0;
}
