// What a request constrains its output to (vLLM's StructuredOutputsParams:
// one of json, json_object, regex, choice, grammar), and the grammar each
// becomes.  Compiled grammars are cached by their source, since clients
// send the same schema again and again.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "structured/compiled_grammar.h"
#include "structured/grammar.h"
#include "structured/token_vocabulary.h"

namespace vllm::structured {

enum class ConstraintKind { kJsonSchema, kJsonObject, kRegex, kChoice, kGrammar };
const char* constraint_name(ConstraintKind kind);  // "json", "json_object", "regex", "choice", "grammar"

struct StructuredOutputSpec {
  ConstraintKind kind = ConstraintKind::kJsonObject;
  std::string source;                                // the schema's JSON text, the regex, the GBNF text
  std::vector<std::string> choices;                  // kChoice
  std::string request_field = "structured_outputs";  // where the request gave it, for errors
  bool any_whitespace = true;                        // JSON: false writes no whitespace between tokens
};

// The grammar of a constraint; an error names what it cannot enforce.
Result<Grammar> build_grammar(const StructuredOutputSpec& spec);

class GrammarCache {
 public:
  explicit GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t capacity = 64)
      : vocabulary_(std::move(vocabulary)), capacity_(capacity) {}

  // Thread-safe; compiles on the caller's thread when the source is new.
  Result<std::shared_ptr<const CompiledGrammar>> get(const StructuredOutputSpec& spec);

 private:
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  size_t capacity_;
  std::mutex mutex_;
  std::list<std::string> recent_;  // most recently used first
  std::unordered_map<std::string, std::pair<std::shared_ptr<const CompiledGrammar>, std::list<std::string>::iterator>>
      grammars_;
};

}  // namespace vllm::structured
