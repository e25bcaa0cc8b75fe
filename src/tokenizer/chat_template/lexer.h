// The chat-template lexer: a template's source cut into text, {{ expression }}
// and {% statement %} segments (whitespace control applied), and the tokens
// of an expression or statement body, for parser.cpp.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace vllm::jinja {

struct Segment {
  enum class Kind { kText, kExpr, kStmt } kind;
  std::string body;
  int line;
};

// The segments of `src`, in order.
std::vector<Segment> segment(const std::string& src);

struct Token {
  enum class Kind { kName, kString, kInt, kFloat, kOp, kEnd } kind;
  std::string text;
  Value value;
};

// The tokens of one segment's body (from `line` of the source), ending in kEnd.
std::vector<Token> tokenize(const std::string& s, int line);

}  // namespace vllm::jinja
