// Every record of ../shared/fixtures/tokenizers/<family>.jsonl (made with
// Hugging Face's tokenizer code): ids with and without special tokens, and
// the three decodings.  Skipped when ../shared is not there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/json.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace vllm {
namespace {

std::string tokenizer_dir(const std::string& family) {
  if (family == "stories260k") return testing::shared_dir() + "/models/stories260k";
  return testing::shared_dir() + "/tokenizers/" + family;
}

class HfTokenizerFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizerFixtureTest, EncodesAndDecodesEveryRecordExactly) {
  const std::string family = GetParam();
  const std::string path = testing::shared_dir() + "/fixtures/tokenizers/" + family + ".jsonl";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  Result<std::unique_ptr<Tokenizer>> loaded = Tokenizer::load(tokenizer_dir(family));
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  const Tokenizer& tok = **loaded;
  std::ifstream in(path);
  std::string line;
  int records = 0, mismatches = 0;
  auto check = [&](bool ok, const Json& r, const char* what) {
    if (ok) return;
    if (++mismatches <= 8)
      ADD_FAILURE() << family << " record " << r["index"] << " (" << r["category"] << "): " << what;
  };
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json r = Json::parse(line);
    const std::string text = r["text"].get<std::string>();
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    const auto with_special = r["ids_with_special"].get<std::vector<int32_t>>();
    check(tok.encode(text, false) == ids, r, "ids");
    check(tok.encode(text, true) == with_special, r, "ids_with_special");
    check(tok.decode(ids, false) == r["decoded"].get<std::string>(), r, "decoded");
    check(tok.decode(with_special, false) == r["decoded_with_special"].get<std::string>(), r, "decoded_with_special");
    check(tok.decode(with_special, true) == r["decoded_with_special_skip_special"].get<std::string>(), r,
          "decoded_with_special_skip_special");
    ++records;
  }
  EXPECT_GT(records, 50);
  EXPECT_EQ(mismatches, 0) << "of " << records << " records";
}

INSTANTIATE_TEST_SUITE_P(Families, HfTokenizerFixtureTest,
                         ::testing::Values("stories260k", "mistral", "llama3", "qwen3", "gpt2", "claude", "gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace vllm
