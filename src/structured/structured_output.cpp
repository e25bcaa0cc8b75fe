#include "structured/structured_output.h"

#include "structured/gbnf.h"
#include "structured/json_schema_grammar.h"
#include "structured/regex_grammar.h"

namespace vllm::structured {
namespace {

Result<Grammar> choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) return invalid_argument("choice needs at least one string");
  Grammar g;
  std::vector<Grammar::Sequence> alternatives;
  for (const std::string& c : choices) alternatives.push_back(g.literal(c));
  g.set_root(g.group(std::move(alternatives), "choice").index);
  VLLM_RETURN_IF_ERROR(g.validate());
  return g;
}

std::string cache_key(const StructuredOutputSpec& spec) {
  std::string key = constraint_name(spec.kind);
  key += '\0';
  key += spec.source;
  key += spec.any_whitespace ? '\0' : '\1';
  for (const std::string& c : spec.choices) {
    key += '\0';
    key += std::to_string(c.size());
    key += ':';
    key += c;
  }
  return key;
}

}  // namespace

const char* constraint_name(ConstraintKind kind) {
  switch (kind) {
    case ConstraintKind::kJsonSchema:
      return "json";
    case ConstraintKind::kJsonObject:
      return "json_object";
    case ConstraintKind::kRegex:
      return "regex";
    case ConstraintKind::kChoice:
      return "choice";
    case ConstraintKind::kGrammar:
      return "grammar";
  }
  return "?";
}

Result<Grammar> build_grammar(const StructuredOutputSpec& spec) {
  switch (spec.kind) {
    case ConstraintKind::kJsonSchema:
      return json_schema_grammar(spec.source, spec.any_whitespace);
    case ConstraintKind::kJsonObject:
      return json_object_grammar(spec.any_whitespace);
    case ConstraintKind::kRegex:
      return regex_grammar(spec.source);
    case ConstraintKind::kChoice:
      return choice_grammar(spec.choices);
    case ConstraintKind::kGrammar:
      return parse_gbnf(spec.source);
  }
  return invalid_argument("unknown constraint");
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get(const StructuredOutputSpec& spec) {
  const std::string key = cache_key(spec);
  {
    std::lock_guard lock(mutex_);
    auto it = grammars_.find(key);
    if (it != grammars_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second.second);
      return it->second.first;
    }
  }
  VLLM_ASSIGN_OR_RETURN(Grammar grammar, build_grammar(spec));
  auto compiled = std::make_shared<const CompiledGrammar>(grammar, vocabulary_);
  std::lock_guard lock(mutex_);
  if (grammars_.contains(key)) return grammars_.at(key).first;  // another thread was quicker
  recent_.push_front(key);
  grammars_.emplace(key, std::make_pair(compiled, recent_.begin()));
  if (grammars_.size() > capacity_) {
    grammars_.erase(recent_.back());
    recent_.pop_back();
  }
  return std::shared_ptr<const CompiledGrammar>(compiled);
}

}  // namespace vllm::structured
