// A Hugging Face chat template: Jinja2 as transformers renders it
// (trim_blocks, lstrip_blocks, loop controls, raise_exception, tojson,
// strftime_now), by our own interpreter.
#pragma once

#include <memory>
#include <stop_token>
#include <string>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

namespace jinja {
struct Stmt;
}

class ChatTemplate {
 public:
  // A syntax error is an InvalidArgument status carrying its message.
  static Result<ChatTemplate> compile(const std::string& source);

  // Renders `messages` (a JSON list of {role, content, ...}); `variables`
  // (a JSON object) adds template variables such as bos_token or tools.  A
  // template error, including raise_exception, is an InvalidArgument status
  // whose message is the template's own.  A render still going when `stop`
  // is requested ends with an error.
  Result<std::string> render(const OrderedJson& messages, bool add_generation_prompt, const OrderedJson& variables,
                             std::stop_token stop = {}) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<jinja::Stmt>>> body_;
};

}  // namespace vllm
