// Encode throughput of one tokenizer, single thread: the texts of a JSON
// Lines corpus ({"text": ...} per line) repeated to about TARGET_MB, encoded
// one text at a time (without special tokens), best and median of several
// passes.  Prints one JSON line: {"mb_per_s_median", "mb_per_s_best", ...}.
// Usage: tokenizer_throughput TOKENIZER_DIR CORPUS.jsonl [TARGET_MB] [PASSES]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/json.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_throughput TOKENIZER_DIR CORPUS.jsonl [TARGET_MB] [PASSES]\n");
    return 2;
  }
  const double target_mb = argc > 3 ? std::stod(argv[3]) : 10.0;
  const int passes = argc > 4 ? std::stoi(argv[4]) : 5;
  auto tok = vllm::Tokenizer::load(argv[1]);
  if (!tok.is_ok()) {
    std::fprintf(stderr, "error: %s\n", tok.status().message().c_str());
    return 1;
  }
  std::vector<std::string> corpus;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) corpus.push_back(vllm::Json::parse(line).at("text").get<std::string>());
  }
  std::vector<const std::string*> texts;
  size_t bytes = 0;
  while (bytes < target_mb * 1e6 && !corpus.empty()) {
    for (const std::string& t : corpus) {
      texts.push_back(&t);
      bytes += t.size();
    }
  }
  std::vector<double> rates;
  size_t num_tokens = 0;
  for (int p = 0; p < passes; ++p) {
    num_tokens = 0;
    const double start = vllm::now_seconds();
    for (const std::string* t : texts) num_tokens += (*tok)->encode(*t, false).size();
    rates.push_back(static_cast<double>(bytes) / 1e6 / (vllm::now_seconds() - start));
  }
  std::sort(rates.begin(), rates.end());
  std::printf("{\"mb_per_s_median\": %.2f, \"mb_per_s_best\": %.2f, \"bytes\": %zu, \"tokens\": %zu}\n",
              rates[rates.size() / 2], rates.back(), bytes, num_tokens);
  return 0;
}
