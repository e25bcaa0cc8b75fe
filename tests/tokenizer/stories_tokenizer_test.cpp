// The stories260k tokenizer (SentencePiece-style BPE with byte fallback)
// against ids and texts produced by Hugging Face's tokenizer code.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "base/json.h"
#include "test_util.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace vllm {
namespace {

std::vector<int32_t> ids_of(const Json& j) { return j.get<std::vector<int32_t>>(); }

class StoriesTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Tokenizer>> t = Tokenizer::load(testing::model_dir());
    ASSERT_TRUE(t.is_ok()) << t.status().message();
    tok_ = std::move(t).value();
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(StoriesTokenizerTest, GoldenTokenization) {
  const Json golden = Json::parse(testing::read_file(testing::golden_dir() + "/tokenization.json"));
  ASSERT_GE(golden["cases"].size(), 40u);
  for (const Json& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    EXPECT_EQ(tok_->encode(text, true), ids_of(c["ids"])) << text;
    const std::vector<int32_t> plain = tok_->encode(text, false);
    EXPECT_EQ(plain, ids_of(c["ids_no_special"])) << text;
    std::vector<std::string> pieces;
    for (int32_t id : plain) pieces.push_back(tok_->id_to_token(id));
    EXPECT_EQ(pieces, c["tokens"].get<std::vector<std::string>>()) << text;
    EXPECT_EQ(tok_->decode(ids_of(c["ids"]), true), c["decoded"].get<std::string>()) << text;
  }
}

// Streaming a completion after its prompt gives the completion text of the
// golden generations, leading space included ("Once upon a time" + ", there").
TEST_F(StoriesTokenizerTest, StreamedCompletionsEqualGoldenText) {
  const Json golden = Json::parse(testing::read_file(testing::golden_dir() + "/greedy.json"));
  for (const Json& c : golden["cases"]) {
    IncrementalDetokenizer detok(*tok_, /*skip_special_tokens=*/true, ids_of(c["prompt_token_ids"]));
    std::string streamed;
    for (int32_t id : ids_of(c["output_token_ids"])) streamed += detok.push(id);
    streamed += detok.flush();
    EXPECT_EQ(streamed, c["output_text"].get<std::string>()) << c["name"];
  }
}

// A run of byte tokens decodes as a whole: an emoji followed by stray
// continuation bytes is all U+FFFD, so streaming must not emit the emoji early.
TEST_F(StoriesTokenizerTest, StreamingWaitsForTheEndOfAByteRun) {
  const std::vector<int32_t> ids = {3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80, 3 + 0x98, 3 + 0x80, 261};
  IncrementalDetokenizer detok(*tok_, /*skip_special_tokens=*/true);
  std::string streamed;
  for (int32_t id : ids) streamed += detok.push(id);
  streamed += detok.flush();
  EXPECT_EQ(streamed, tok_->decode(ids, true));
  EXPECT_EQ(streamed.find("\xF0\x9F\x98\x80"), std::string::npos);
}

// The shared BPE word cache is safe to use from several threads at once.
TEST_F(StoriesTokenizerTest, ConcurrentEncodesAgreeWithSerialOnes) {
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back("word" + std::to_string(i % 37) + " and more " + std::to_string(i));
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(tok_->encode(t, true));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&] {
      for (size_t i = 0; i < texts.size(); ++i) {
        if (tok_->encode(texts[i], true) != expected[i]) mismatches.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_F(StoriesTokenizerTest, ByteFallbackRoundTripsEmoji) {
  const std::string text = "Hi \xF0\x9F\x98\x80!";
  const std::vector<int32_t> ids = tok_->encode(text, false);
  EXPECT_EQ(tok_->decode(ids, true), text);
  // The emoji is not in the 512-piece vocabulary: four byte tokens <0xF0>...
  EXPECT_NE(std::find(ids.begin(), ids.end(), 3 + 0xF0), ids.end());
}

TEST_F(StoriesTokenizerTest, InvalidByteSequencesDecodeToOneReplacementPerByte) {
  // <0xE2> <0x82> (a cut-off 3-byte sequence) then "a".
  const std::vector<int32_t> ids = {3 + 0xE2, 3 + 0x82};
  EXPECT_EQ(tok_->decode(ids, true), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace vllm
