// Template source -> syntax tree, with the whitespace rules Hugging Face
// renders chat templates with: trim_blocks, lstrip_blocks, and the "-"
// markers of {%- -%} {{- -}} {#- -#}.
#pragma once

#include <string>

#include "tokenizer/chat_template/ast.h"

namespace vllm::jinja {

// Throws TemplateError with the line of the problem.
Body parse_template(const std::string& source);

}  // namespace vllm::jinja
