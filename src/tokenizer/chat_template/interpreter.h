// Renders a parsed template against a set of variables.
#pragma once

#include <stop_token>
#include <string>

#include "tokenizer/chat_template/ast.h"

namespace vllm::jinja {

// Throws TemplateError (raise_exception, a type error, output beyond limits,
// `stop` requested).
std::string render(const Body& body, const Dict& variables, std::stop_token stop = {});

}  // namespace vllm::jinja
