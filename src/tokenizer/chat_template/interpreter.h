// Renders a parsed template against a set of variables.
#pragma once

#include <string>

#include "tokenizer/chat_template/ast.h"

namespace vllm::jinja {

// Throws TemplateError (raise_exception, a type error, output beyond limits).
std::string render(const Body& body, const Dict& variables);

}  // namespace vllm::jinja
