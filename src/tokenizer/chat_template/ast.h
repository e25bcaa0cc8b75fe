// The syntax tree of a chat template.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace vllm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // items
    kTuple,    // items
    kDict,     // items: key, value, key, value, ...
    kAttr,     // items[0].name
    kItem,     // items[0][items[1]]
    kSlice,    // items[0][items[1]:items[2]:items[3]] (null = omitted)
    kCall,     // items[0](items[1..], keywords)
    kFilter,   // items[0] | name(items[1..], keywords)
    kTest,     // items[0] is [not] name(items[1..])
    kUnary,    // name ("-", "+", "not") items[0]
    kBinary,   // items[0] name items[1]; name in + - * / // % ** ~ == != < > <= >= in "not in" and or
    kCond,     // items[0] if items[1] else items[2] (items[2] may be null)
  };
  Kind kind;
  Value value;
  std::string name;
  bool negated = false;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // conditions[i] -> bodies[i]; else_body
    kFor,          // for targets in expr [if filter]: bodies[0]; else_body
    kSet,          // targets (or target.attr) = expr, or = rendered bodies[0]
    kMacro,        // name(params with defaults): bodies[0]
    kCallBlock,    // {% call expr %} bodies[0] {% endcall %}: the body is caller()
    kFilterBlock,  // {% filter expr %}: expr is a kFilter over a placeholder
    kBreak,
    kContinue,
  };
  Kind kind;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body else_body;
  std::vector<std::string> targets;
  std::string attr;  // kSet on targets[0].attr
  std::vector<std::pair<std::string, ExprPtr>> params;
};

}  // namespace vllm::jinja
