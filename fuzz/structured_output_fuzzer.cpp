// libFuzzer target: arbitrary bytes as a structured-output constraint (the
// first byte picks GBNF, regex or JSON schema; the rest is its text),
// compiled over a small vocabulary, then walked for a few tokens (masks and
// the tokens they allow).  Either an error or a walk, never a crash, a hang
// or unbounded memory: these texts come from remote clients.
#include <string>

#include "structured/grammar_matcher.h"
#include "structured/structured_output.h"

namespace {

std::shared_ptr<const vllm::structured::TokenVocabulary> vocabulary() {
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
  for (const char* t : {"{\"", "\":", "\"}", "true", "null", " \"", "12", "ab", "\xc3\xa9", "\xe2\x96", "\x81"}) {
    bytes.emplace_back(t);
  }
  bytes.emplace_back();  // a special token
  const auto eos = static_cast<int32_t>(bytes.size());
  bytes.emplace_back("</s>");
  return std::make_shared<const vllm::structured::TokenVocabulary>(bytes, std::vector<int32_t>{eos});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vllm::structured;
  static const std::shared_ptr<const TokenVocabulary> vocab = vocabulary();
  if (size == 0) return 0;
  StructuredOutputSpec spec;
  spec.kind = data[0] % 3 == 0   ? ConstraintKind::kGrammar
              : data[0] % 3 == 1 ? ConstraintKind::kRegex
                                 : ConstraintKind::kJsonSchema;
  spec.source.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  vllm::Result<Grammar> grammar = build_grammar(spec);
  if (!grammar.is_ok()) return 0;
  auto compiled = std::make_shared<const CompiledGrammar>(*grammar, vocab);
  GrammarMatcher matcher(compiled);
  std::vector<uint32_t> mask(bitmask_words(vocab->size()));
  // Take the allowed token the input's bytes point at, a few times over.
  for (size_t step = 0; step < 8 && !matcher.is_terminated(); ++step) {
    matcher.fill_next_token_mask(mask, static_cast<int64_t>(16 - step));
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < vocab->size(); ++t) {
      if (bitmask_has(mask.data(), t)) allowed.push_back(t);
    }
    if (allowed.empty()) break;
    const int32_t pick = allowed[data[step % size] % allowed.size()];
    if (!matcher.accept_token(pick)) __builtin_trap();  // a token the mask allows is always accepted
  }
  return 0;
}
