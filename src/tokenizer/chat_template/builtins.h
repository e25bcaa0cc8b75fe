// Filters, tests, methods and global functions of the template language,
// the ones Hugging Face chat templates use.
#pragma once

#include <string>

#include "tokenizer/chat_template/value.h"

namespace vllm::jinja {

// Calls filter `name` on `value`; throws TemplateError if unknown.  Filters
// that take a callable (map, select...) get `apply_filter` / `apply_test` back.
Value apply_filter(const std::string& name, const Value& value, CallArgs& args);
bool apply_test(const std::string& name, const Value& value, CallArgs& args);

// obj.name where obj is a string, list or dict and name one of its Python
// methods (split, strip, startswith, items, get, ...); undefined if none.
Value method(const Value& obj, const std::string& name);

// raise_exception, namespace, range, dict, strftime_now.
Dict global_functions();

// Python's str.strip family with an optional set of characters.
std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right);

}  // namespace vllm::jinja
