// Every record of ../shared/fixtures/tokenizers/<family>.jsonl (made with
// Hugging Face's tokenizer code): ids with and without special tokens, the
// three decodings, and streaming through the incremental detokenizer.
// Skipped when ../shared is not there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/json.h"
#include "test_util.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace vllm {
namespace {

std::string tokenizer_dir(const std::string& family) {
  if (family == "stories260k") return testing::shared_dir() + "/models/stories260k";
  return testing::shared_dir() + "/tokenizers/" + family;
}

class HfTokenizerFixtureTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string path = testing::shared_dir() + "/fixtures/tokenizers/" + GetParam() + ".jsonl";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
    Result<std::unique_ptr<Tokenizer>> loaded = Tokenizer::load(tokenizer_dir(GetParam()));
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    tokenizer_ = std::move(loaded).value();
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) records_.push_back(Json::parse(line));
    }
    ASSERT_GT(records_.size(), 50u);
  }

  // Counts a mismatch; the first few are reported in full.
  void check(bool ok, const Json& r, const std::string& what) {
    if (ok) return;
    if (++mismatches_ <= 8) {
      ADD_FAILURE() << GetParam() << " record " << r["index"] << " (" << r["category"] << "): " << what;
    }
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<Json> records_;
  int mismatches_ = 0;
};

TEST_P(HfTokenizerFixtureTest, EncodesAndDecodesEveryRecordExactly) {
  const Tokenizer& tok = *tokenizer_;
  for (const Json& r : records_) {
    const std::string text = r["text"].get<std::string>();
    const auto ids = r["ids"].get<std::vector<int32_t>>();
    const auto with_special = r["ids_with_special"].get<std::vector<int32_t>>();
    check(tok.encode(text, false) == ids, r, "ids");
    check(tok.encode(text, true) == with_special, r, "ids_with_special");
    check(tok.decode(ids, false) == r["decoded"].get<std::string>(), r, "decoded");
    check(tok.decode(with_special, false) == r["decoded_with_special"].get<std::string>(), r, "decoded_with_special");
    check(tok.decode(with_special, true) == r["decoded_with_special_skip_special"].get<std::string>(), r,
          "decoded_with_special_skip_special");
  }
  EXPECT_EQ(mismatches_, 0) << "of " << records_.size() << " records";
}

// Fed one id at a time, the incremental detokenizer's deltas are whole UTF-8
// and concatenate to the one-shot decode.
TEST_P(HfTokenizerFixtureTest, StreamedDeltasConcatenateToTheFullDecode) {
  for (const Json& r : records_) {
    IncrementalDetokenizer detok(*tokenizer_, /*skip_special_tokens=*/false);
    std::string streamed;
    bool whole = true;
    for (int32_t id : r["ids"].get<std::vector<int32_t>>()) {
      const std::string delta = detok.push(id);
      whole = whole && utf8::is_valid(delta);
      streamed += delta;
    }
    const std::string tail = detok.flush();
    whole = whole && utf8::is_valid(tail);
    streamed += tail;
    check(whole, r, "a delta is not whole UTF-8");
    check(streamed == r["decoded"].get<std::string>(), r, "streamed text '" + streamed + "' != decoded");
  }
  EXPECT_EQ(mismatches_, 0) << "of " << records_.size() << " records";
}

// A token's bytes (what grammars match) concatenate to Hugging Face's decode
// of the ids, up to the leading space a first token's decoding drops.
TEST_P(HfTokenizerFixtureTest, TokenBytesConcatenateToTheDecodedText) {
  const Tokenizer& tok = *tokenizer_;
  for (const Json& r : records_) {
    std::string bytes;
    for (int32_t id : r["ids"].get<std::vector<int32_t>>()) bytes += tok.token_bytes(id);
    std::string text = utf8::make_valid(bytes);
    if (tok.clean_up_tokenization_spaces()) text = clean_up_tokenization(text);
    const std::string decoded = r["decoded"].get<std::string>();
    check(text == decoded || (text.starts_with(" ") && text.substr(1) == decoded), r,
          "token bytes '" + text + "' != decoded");
  }
  EXPECT_EQ(mismatches_, 0) << "of " << records_.size() << " records";
}

INSTANTIATE_TEST_SUITE_P(Families, HfTokenizerFixtureTest,
                         ::testing::Values("stories260k", "mistral", "llama3", "qwen3", "gpt2", "claude", "gemma3"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace vllm
