// Token-mask cost of structured outputs over a real vocabulary: how long a
// JSON schema takes to compile, and what fill_next_token_mask costs per
// token along walks that take random allowed tokens (max_tokens 256 each),
// on the first walk (every state new to the mask cache) and on later walks
// of the same grammar (the cache shared, as between a server's requests).
// Prints medians and p99s in microseconds.  With --corpus, the compile time
// of each schema of a JSON Lines file instead (the median of 5 compiles
// each; refused schemas counted apart), as median, p99 and max over them.
// Usage: mask_benchmark TOKENIZER_DIR [SCHEMA.json] [WALKS]
//        mask_benchmark TOKENIZER_DIR --corpus SCHEMAS.jsonl
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "base/clock.h"
#include "structured/grammar_matcher.h"
#include "structured/json_schema_grammar.h"
#include "tokenizer/tokenizer.h"

namespace {

// A typical API schema: nested objects, an array of objects, enums, formats, bounds.
constexpr const char* kSchema = R"({"type": "object", "properties": {
  "order_id": {"type": "string", "format": "uuid"},
  "customer": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
    "email": {"type": "string", "format": "email"}}, "required": ["name", "email"]},
  "items": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "object", "properties": {
    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "quantity": {"type": "integer", "minimum": 1,
    "maximum": 99}, "price": {"type": "number", "minimum": 0}}, "required": ["sku", "quantity", "price"]}},
  "status": {"enum": ["pending", "paid", "shipped"]}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
  "required": ["order_id", "customer", "items", "status"]})";

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Compile times over a corpus: what a server pays once per new schema.
int compile_corpus(const std::string& path, const std::shared_ptr<const vllm::structured::TokenVocabulary>& vocab) {
  using namespace vllm::structured;
  std::ifstream in(path);
  std::vector<double> per_schema_us;
  int refused = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::vector<double> times;
    for (int i = 0; i < 5; ++i) {
      const double t0 = vllm::now_seconds();
      auto g = json_schema_grammar(line);
      if (!g.is_ok()) break;
      CompiledGrammar compiled(*g, vocab);
      times.push_back((vllm::now_seconds() - t0) * 1e6);
    }
    if (times.empty()) {
      ++refused;
      continue;
    }
    per_schema_us.push_back(percentile(times, 0.5));
  }
  std::printf(
      "{\"schemas_compiled\": %zu, \"refused\": %d, \"compile_us_median\": %.0f, \"compile_us_p99\": %.0f, "
      "\"compile_us_max\": %.0f}\n",
      per_schema_us.size(), refused, percentile(per_schema_us, 0.5), percentile(per_schema_us, 0.99),
      percentile(per_schema_us, 1.0));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vllm::structured;
  if (argc < 2) {
    std::fprintf(stderr, "usage: mask_benchmark TOKENIZER_DIR [SCHEMA.json] [WALKS]\n");
    return 2;
  }
  auto tok = vllm::Tokenizer::load(argv[1]);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "error: %s\n", tok.status().message().c_str());
    return 1;
  }
  std::string schema = kSchema;
  if (argc > 2 && std::string(argv[2]) != "--corpus") {
    std::ifstream in(argv[2]);
    std::stringstream ss;
    ss << in.rdbuf();
    schema = ss.str();
  }
  const int32_t vocab_size = (*tok)->vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(vocab_size));
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (!(*tok)->is_special(id)) bytes[static_cast<size_t>(id)] = (*tok)->token_bytes(id);
  }
  auto vocab = std::make_shared<const TokenVocabulary>(std::move(bytes), std::vector<int32_t>{vocab_size - 1});
  if (argc > 3 && std::string(argv[2]) == "--corpus") return compile_corpus(argv[3], vocab);
  const int walks = argc > 3 ? std::stoi(argv[3]) : 20;

  std::vector<double> compile_us;
  std::shared_ptr<const CompiledGrammar> grammar;
  for (int i = 0; i < 20; ++i) {
    const double t0 = vllm::now_seconds();
    auto g = json_schema_grammar(schema);
    if (!g.is_ok()) {
      std::fprintf(stderr, "error: %s\n", g.status().message().c_str());
      return 1;
    }
    grammar = std::make_shared<const CompiledGrammar>(*g, vocab);
    compile_us.push_back((vllm::now_seconds() - t0) * 1e6);
  }
  std::vector<double> first_walk;
  std::vector<double> later_walks;
  std::mt19937 rng(1);
  std::vector<uint32_t> mask(bitmask_words(vocab->size()));
  int completed = 0;
  for (int w = 0; w < walks; ++w) {
    GrammarMatcher m(grammar);
    for (int64_t left = 256; left > 0 && !m.is_terminated(); --left) {
      const double t0 = vllm::now_seconds();
      m.fill_next_token_mask(mask, left);
      (w == 0 ? first_walk : later_walks).push_back((vllm::now_seconds() - t0) * 1e6);
      std::vector<int32_t> allowed;
      for (int32_t t = 0; t < vocab->size(); ++t) {
        if (bitmask_has(mask.data(), t)) allowed.push_back(t);
      }
      if (allowed.empty() || !m.accept_token(allowed[rng() % allowed.size()])) break;
    }
    completed += m.is_terminated() ? 1 : 0;
  }
  std::printf(
      "{\"vocab\": %d, \"compile_us_median\": %.0f, \"compile_us_p99\": %.0f, "
      "\"first_walk_mask_us_median\": %.1f, \"first_walk_mask_us_p99\": %.0f, \"first_walk_tokens\": %zu, "
      "\"later_mask_us_median\": %.1f, \"later_mask_us_p99\": %.0f, \"later_tokens\": %zu, "
      "\"walks_completed\": %d}\n",
      vocab_size, percentile(compile_us, 0.5), percentile(compile_us, 0.99), percentile(first_walk, 0.5),
      percentile(first_walk, 0.99), first_walk.size(), percentile(later_walks, 0.5), percentile(later_walks, 0.99),
      later_walks.size(), completed);
  return 0;
}
