#include "cli/random_text_prompts.h"

#include <algorithm>
#include <cctype>
#include <random>

namespace vllm::cli {
namespace {

// Plain ASCII words of 2-12 letters that are one token alone and one more
// token after another word and a space.
std::vector<std::string> one_token_words(const Tokenizer& tokenizer) {
  std::vector<std::string> words;
  const size_t base = tokenizer.encode("a", false).size();
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    std::string word = tokenizer.decode({id}, true);
    word.erase(0, word.find_first_not_of(' '));
    if (word.size() < 2 || word.size() > 12) continue;
    if (!std::all_of(word.begin(), word.end(), [](unsigned char c) { return std::isalpha(c) != 0; })) continue;
    if (tokenizer.encode(word, false).size() != 1) continue;
    if (tokenizer.encode("a " + word, false).size() != base + 1) continue;
    words.push_back(std::move(word));
  }
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  return words;
}

}  // namespace

Result<std::vector<TextPrompt>> random_text_prompts(const Tokenizer& tokenizer, int count, int words, uint64_t seed) {
  const std::vector<std::string> pool = one_token_words(tokenizer);
  if (pool.size() < 50) {
    return invalid_argument("the tokenizer has only " + std::to_string(pool.size()) +
                            " one-token words; random text prompts need at least 50");
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::vector<TextPrompt> prompts(static_cast<size_t>(count));
  for (TextPrompt& p : prompts) {
    for (int w = 0; w < words; ++w) p.text += (w == 0 ? "" : " ") + pool[pick(rng)];
    p.tokens = static_cast<int64_t>(tokenizer.encode(p.text, false).size());
  }
  return prompts;
}

}  // namespace vllm::cli
