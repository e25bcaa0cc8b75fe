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
  const Json model = Json::parse(R"({"type": "BPE", "vocab": {}, "merges": [], "dropout": 0.1})");
  EXPECT_EQ(BpeModel::from_json(model).status().message(), "tokenizer.json: BPE dropout is not supported");
}

TEST(BpeModelTest, ContinuingSubwordPrefixAndEndOfWordSuffix) {
  // "abc" -> a ##b ##c</w>; merges (a, ##b) -> ab; (ab, ##c</w>) -> abc</w>.
  const Json model = Json::parse(R"({"type": "BPE", "vocab": {"a": 0, "##b": 1, "##c</w>": 2, "ab": 3, "abc</w>": 4},
      "merges": [["a", "##b"], ["ab", "##c</w>"]], "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>"})");
  Result<BpeModel> bpe = BpeModel::from_json(model);
  ASSERT_TRUE(bpe.is_ok()) << bpe.status().message();
  std::vector<int32_t> ids;
  bpe->tokenize("abc", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{4}));
}

TEST(AddedVocabularyTest, LongestMatchWins) {
  const Json added = Json::parse(R"([{"id": 5, "content": "<a>", "special": true},
                                     {"id": 6, "content": "<a><b>", "special": false, "normalized": false}])");
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
  EXPECT_EQ(make_decoder(Json::parse(R"({"type": "CTC"})")).status().message(),
            "tokenizer.json: decoder type 'CTC' is not supported");
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

// A tokenizer built from a tokenizer.json written by the test.
std::unique_ptr<Tokenizer> load_json(const std::string& json) {
  testing::TempDir dir;
  testing::write_file(dir.file("tokenizer.json"), json);
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::load(dir.path());
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return t.is_ok() ? std::move(t).value() : nullptr;
}

TEST(TokenizerPipelineTest, BertWordPiece) {
  auto tok = load_json(R"({"normalizer": {"type": "BertNormalizer", "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2,
              "hello": 3, "world": 4, "!": 5, "un": 6, "##aff": 7, "##able": 8, "cafe": 9}},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
    "added_tokens": [{"id": 0, "content": "[UNK]", "special": true}, {"id": 1, "content": "[CLS]", "special": true},
                     {"id": 2, "content": "[SEP]", "special": true}]})");
  ASSERT_TRUE(tok);
  // Lowercased, accents stripped ("Café" -> "cafe"), punctuation split off,
  // "unaffable" in three pieces, an unknown word as [UNK].
  EXPECT_EQ(tok->encode("Hello  WORLD! unaffable Café xyz", true),
            (std::vector<int32_t>{1, 3, 4, 5, 6, 7, 8, 9, 0, 2}));
  EXPECT_EQ(tok->decode({3, 4, 5, 6, 7, 8}, true), "hello world! unaffable");
}

TEST(TokenizerPipelineTest, UnigramWithMetaspace) {
  auto tok = load_json(R"({"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
    "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["▁the", -1.0], ["▁", -2.0],
              ["t", -3.0], ["h", -3.0], ["e", -3.0], ["▁th", -2.5], ["re", -2.0], ["▁there", -1.5]]},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"}})");
  ASSERT_TRUE(tok);
  // "there" is one piece (-1.5) rather than "the"+"re" (-3.0); "x" is unknown.
  EXPECT_EQ(tok->encode("there the", false), (std::vector<int32_t>{8, 1}));
  EXPECT_EQ(tok->encode("thx", false), (std::vector<int32_t>{6, 0}));
  EXPECT_EQ(tok->decode({8, 1}, false), "there the");
}

TEST(TokenizerPipelineTest, WhitespaceDigitsAndPunctuationSplits) {
  auto tok = load_json(R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
      {"type": "Digits", "individual_digits": true}, {"type": "Punctuation"}]},
    "model": {"type": "WordPiece", "unk_token": "?", "vocab": {"?": 0, "a": 1, "1": 2, "2": 3, ",": 4, "b": 5}}})");
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("a12, b", false), (std::vector<int32_t>{1, 2, 3, 4, 5}));
}

TEST(TokenizerPipelineTest, SingleWordAndNormalizedAddedTokens) {
  auto tok = load_json(R"({"normalizer": {"type": "Lowercase"},
    "model": {"type": "WordPiece", "unk_token": "?", "vocab": {"?": 0, "x": 1, "cat": 2}},
    "pre_tokenizer": {"type": "Whitespace"},
    "added_tokens": [{"id": 10, "content": "cat", "special": false, "single_word": true, "normalized": false},
                     {"id": 11, "content": "dog", "special": false, "normalized": true}]})");
  ASSERT_TRUE(tok);
  // single_word: "cat" alone matches, inside "xcatx" it does not.
  EXPECT_EQ(tok->encode("cat", false), (std::vector<int32_t>{10}));
  EXPECT_EQ(tok->encode("xcatx", false), (std::vector<int32_t>{0}));
  // normalized: "DOG" is lowercased first, then matched.
  EXPECT_EQ(tok->encode("DOG", false), (std::vector<int32_t>{11}));
}

TEST(TokenizerPipelineTest, BpeDecoderSuffix) {
  auto tok = load_json(R"({"model": {"type": "BPE", "vocab": {"hi</w>": 0, "yo</w>": 1}, "merges": []},
    "decoder": {"type": "BPEDecoder", "suffix": "</w>"}})");
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->decode({0, 1}, false), "hi yo");
}

// Llama-style tokenizers take add_bos_token / add_eos_token from
// tokenizer_config.json over the post-processor in tokenizer.json.
TEST(TokenizerConfigTest, AddBosAndEosFlags) {
  testing::TempDir dir;
  testing::copy_model(dir.path());
  Json config = Json::parse(testing::read_file(dir.file("tokenizer_config.json")));
  config["add_eos_token"] = true;
  testing::write_file(dir.file("tokenizer_config.json"), config.dump());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(dir.path());
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  EXPECT_EQ((*tok)->encode("a", true), (std::vector<int32_t>{1, 261, 2}));
  config["add_bos_token"] = false;
  testing::write_file(dir.file("tokenizer_config.json"), config.dump());
  tok = Tokenizer::load(dir.path());
  ASSERT_TRUE(tok.is_ok());
  EXPECT_EQ((*tok)->encode("a", true), (std::vector<int32_t>{261, 2}));
  EXPECT_EQ((*tok)->model_max_length(), 512.0);
}

TEST(TokenizerConfigTest, WrongFieldTypeIsAnErrorNotACrash) {
  testing::TempDir dir;
  testing::copy_model(dir.path());
  Json config = Json::parse(testing::read_file(dir.file("tokenizer_config.json")));
  config["add_bos_token"] = "yes";
  testing::write_file(dir.file("tokenizer_config.json"), config.dump());
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(dir.path());
  ASSERT_FALSE(tok.is_ok());
  EXPECT_NE(tok.status().message().find("tokenizer_config.json: unexpected structure"), std::string::npos)
      << tok.status().message();
}

TEST(NormalizerTest, UnicodeForms) {
  auto nfkc = make_normalizer(Json::parse(R"({"type": "NFKC"})"));
  auto nfd = make_normalizer(Json::parse(R"({"type": "NFD"})"));
  auto strip = make_normalizer(
      Json::parse(R"({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]})"));
  ASSERT_TRUE(nfkc.is_ok() && nfd.is_ok() && strip.is_ok());
  EXPECT_EQ((*nfkc)->normalize("\uFB01 \u2460"), "fi 1");  // ligature, circled digit
  EXPECT_EQ((*nfd)->normalize("\u00E9"), "e\u0301");
  EXPECT_EQ((*strip)->normalize("Cr\u00E8me br\u00FBl\u00E9e"), "Creme brulee");
}

}  // namespace
}  // namespace vllm
