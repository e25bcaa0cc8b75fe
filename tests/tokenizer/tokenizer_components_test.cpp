#include <gtest/gtest.h>

#include "base/json.h"
#include "test_util.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoders.h"
#include "tokenizer/tokenizer.h"

namespace vllm {
namespace {

TEST(BpeModelTest, AppliesLowestRankMergeFirst) {
  // "abc": merges (b c) rank 0 and (a b) rank 1 -> "a" + "bc".
  const Json model = Json::parse(R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "bc": 3, "ab": 4},
                                      "merges": [["b", "c"], "a b"]})");
  Result<BpeModel> bpe = BpeModel::from_json(model);
  ASSERT_TRUE(bpe.is_ok()) << bpe.status().message();
  std::vector<int32_t> ids;
  bpe->tokenize("abc", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 3}));
}

TEST(BpeModelTest, UnknownCharactersFuseIntoOneUnk) {
  const Json model = Json::parse(R"({"type": "BPE", "vocab": {"<unk>": 0, "a": 1}, "merges": [],
                                      "unk_token": "<unk>", "fuse_unk": true})");
  Result<BpeModel> bpe = BpeModel::from_json(model);
  ASSERT_TRUE(bpe.is_ok());
  std::vector<int32_t> ids;
  bpe->tokenize("axyza", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0, 1}));
}

TEST(BpeModelTest, UnsupportedOptionIsNamed) {
  const Json model = Json::parse(R"({"type": "BPE", "vocab": {}, "merges": [], "continuing_subword_prefix": "##"})");
  EXPECT_EQ(BpeModel::from_json(model).status().message(),
            "tokenizer.json: BPE option 'continuing_subword_prefix' is not supported yet");
}

TEST(AddedVocabularyTest, LongestMatchWins) {
  const Json added = Json::parse(R"([{"id": 5, "content": "<a>", "special": true},
                                     {"id": 6, "content": "<a><b>", "special": false}])");
  Result<AddedVocabulary> v = AddedVocabulary::from_json(added);
  ASSERT_TRUE(v.is_ok());
  const auto segs = v->split("x<a><b>y<a>");
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(segs[0].text, "x");
  EXPECT_EQ(segs[1].added_token_id, 6);
  EXPECT_EQ(segs[2].text, "y");
  EXPECT_EQ(segs[3].added_token_id, 5);
  EXPECT_TRUE(v->is_special(5));
  EXPECT_FALSE(v->is_special(6));
}

TEST(DecoderTest, UnsupportedTypeIsNamed) {
  EXPECT_EQ(make_decoder(Json::parse(R"({"type": "WordPiece"})")).status().message(),
            "tokenizer.json: decoder type 'WordPiece' is not supported");
}

TEST(TokenizerTest, UnsupportedPreTokenizerIsAnError) {
  testing::TempDir dir;
  Json tok = Json::parse(testing::read_file(testing::model_dir() + "/tokenizer.json"));
  tok["pre_tokenizer"] = {{"type", "NoSuchPreTokenizer"}};
  testing::write_file(dir.file("tokenizer.json"), tok.dump());
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::load(dir.path());
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().message(),
            dir.path() + ": tokenizer.json: pre_tokenizer type 'NoSuchPreTokenizer' is not supported");
}

}  // namespace
}  // namespace vllm
