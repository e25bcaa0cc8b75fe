#include "model/loader/gguf_tokenizer.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace vllm {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
constexpr int64_t kUnknown = 2;
constexpr int64_t kControl = 3;
constexpr int64_t kUserDefined = 4;

// The split before byte-level BPE of each pre-tokenizer name llama.cpp's
// converter writes (as Hugging Face's tokenizer.json spells it for the same
// models), and what llama.cpp does by default for such a vocabulary: skip
// merges for whole-word tokens, add BOS, clean up spaces when decoding.
struct PreTokenizer {
  const char* name;
  const char* regex;  // nullptr: GPT-2's, built into ByteLevel
  bool ignore_merges;
  bool adds_bos;
  bool cleans_spaces;
};

constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr PreTokenizer kPreTokenizers[] = {
    {"default", nullptr, false, false, true},      {"gpt-2", nullptr, false, false, true},
    {"llama-bpe", kLlama3Split, true, true, true}, {"llama3", kLlama3Split, true, true, true},
    {"llama-v3", kLlama3Split, true, true, true},  {"qwen2", kQwen2Split, false, false, false},
};

const GgufValue* string_array(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  return v != nullptr && v->type == GgufValue::Type::kArray && v->element_type == GgufValue::Type::kString ? v
                                                                                                           : nullptr;
}

std::optional<int64_t> token_id(const GgufFile& file, const std::string& key, size_t vocab) {
  const GgufValue* v = file.find(key);
  if (v == nullptr || !v->is_integer() || v->as_int() < 0 || static_cast<size_t>(v->as_int()) >= vocab) {
    return std::nullopt;
  }
  return v->as_int();
}

bool flag(const GgufFile& file, const std::string& key, bool fallback) {
  const GgufValue* v = file.find(key);
  return v != nullptr && v->type == GgufValue::Type::kBool ? v->unsigned_value != 0 : fallback;
}

// What a vocabulary model contributes to tokenizer.json, and llama.cpp's
// defaults for it.
struct ModelParts {
  Json normalizer, pre_tokenizer, model, decoder;
  bool adds_bos = false;
  bool cleans_spaces = true;
};

Status missing(const GgufFile& file, const std::string& what) {
  return unimplemented(file.path() + ": " + what + "; pass --tokenizer DIR naming the model's Hugging Face tokenizer");
}

Result<ModelParts> byte_level_bpe(const GgufFile& file, const Json& vocab) {
  const GgufValue* pre_value = file.find("tokenizer.ggml.pre");
  const std::string pre_name =
      pre_value != nullptr && pre_value->type == GgufValue::Type::kString ? pre_value->string : "default";
  const PreTokenizer* pre = nullptr;
  for (const PreTokenizer& p : kPreTokenizers) {
    if (pre_name == p.name) pre = &p;
  }
  if (pre == nullptr) return missing(file, "GGUF tokenizer.ggml.pre '" + pre_name + "' is not read yet");
  const GgufValue* merges = string_array(file, "tokenizer.ggml.merges");
  if (merges == nullptr) return invalid_argument(file.path() + ": GGUF tokenizer needs tokenizer.ggml.merges");
  Json merge_list = Json::array();
  for (const GgufValue& m : merges->elements) merge_list.push_back(m.string);
  ModelParts parts;
  const Json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", pre->regex == nullptr}};
  if (pre->regex == nullptr) {
    parts.pre_tokenizer = byte_level;
  } else {
    parts.pre_tokenizer = {
        {"type", "Sequence"},
        {"pretokenizers",
         Json::array(
             {{{"type", "Split"}, {"pattern", {{"Regex", pre->regex}}}, {"behavior", "Isolated"}, {"invert", false}},
              byte_level})}};
  }
  parts.model = {{"type", "BPE"},
                 {"vocab", vocab},
                 {"merges", merge_list},
                 {"byte_fallback", false},
                 {"ignore_merges", pre->ignore_merges},
                 {"dropout", nullptr},
                 {"unk_token", nullptr}};
  parts.decoder = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  parts.adds_bos = pre->adds_bos;
  parts.cleans_spaces = pre->cleans_spaces;
  return parts;
}

// Whether byte i of s starts a UTF-8 character.
bool starts_character(const std::string& s, size_t i) { return (static_cast<uint8_t>(s[i]) & 0xC0) != 0x80; }

// A SentencePiece vocabulary (scores, "▁" for spaces, <0xXX> byte pieces) as
// the BPE model transformers' Llama converter makes of it: a merge for every
// split of a piece into two pieces, a piece's splits in the order of their
// halves' ids, pieces by descending score (ties in id order).
Result<ModelParts> sentencepiece(const GgufFile& file, const GgufValue& tokens, const Json& vocab,
                                 std::optional<int64_t> unk) {
  const GgufValue* scores = file.find("tokenizer.ggml.scores");
  if (scores == nullptr || scores->type != GgufValue::Type::kArray || scores->element_type != GgufValue::Type::kF32 ||
      scores->elements.size() != tokens.elements.size()) {
    return invalid_argument(file.path() + ": GGUF tokenizer.ggml.scores must give a float32 score for every token");
  }
  std::vector<size_t> order(tokens.elements.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return scores->elements[a].float_value > scores->elements[b].float_value;
  });
  Json merges = Json::array();
  std::vector<std::pair<int64_t, int64_t>> splits;
  for (size_t i : order) {
    const std::string& piece = tokens.elements[i].string;
    splits.clear();
    for (size_t cut = 1; cut < piece.size(); ++cut) {
      if (!starts_character(piece, cut)) continue;
      const auto left = vocab.find(piece.substr(0, cut)), right = vocab.find(piece.substr(cut));
      if (left != vocab.end() && right != vocab.end()) splits.emplace_back(left->get<int64_t>(), right->get<int64_t>());
    }
    std::sort(splits.begin(), splits.end());
    for (const auto& [l, r] : splits) {
      merges.push_back(tokens.elements[static_cast<size_t>(l)].string + " " +
                       tokens.elements[static_cast<size_t>(r)].string);
    }
  }
  const bool space_prefix = flag(file, "tokenizer.ggml.add_space_prefix", true);
  const Json to_marker = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  ModelParts parts;
  parts.normalizer = space_prefix
                         ? Json{{"type", "Sequence"},
                                {"normalizers", Json::array({{{"type", "Prepend"}, {"prepend", "\u2581"}}, to_marker})}}
                         : to_marker;
  parts.pre_tokenizer = nullptr;
  parts.model = {{"type", "BPE"},
                 {"vocab", vocab},
                 {"merges", std::move(merges)},
                 {"fuse_unk", true},
                 {"byte_fallback", true},
                 {"ignore_merges", false},
                 {"dropout", nullptr},
                 {"unk_token", unk ? Json(tokens.elements[static_cast<size_t>(*unk)].string) : Json(nullptr)}};
  Json decoders = Json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                               {{"type", "ByteFallback"}},
                               {{"type", "Fuse"}}});
  if (space_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  parts.decoder = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
  parts.adds_bos = true;
  parts.cleans_spaces = false;
  return parts;
}

}  // namespace

Result<TokenizerDocuments> gguf_tokenizer_documents(const GgufFile& file) {
  const GgufValue* model = file.find("tokenizer.ggml.model");
  const std::string model_name = model != nullptr && model->type == GgufValue::Type::kString ? model->string : "";
  if (model_name != "gpt2" && model_name != "llama") {
    return missing(file, "GGUF tokenizer.ggml.model '" + model_name +
                             "' is not read yet (byte-level BPE 'gpt2' and SentencePiece 'llama' are)");
  }
  const GgufValue* tokens = string_array(file, "tokenizer.ggml.tokens");
  if (tokens == nullptr) return invalid_argument(file.path() + ": GGUF tokenizer needs tokenizer.ggml.tokens");
  const GgufValue* types = file.find("tokenizer.ggml.token_type");
  const size_t vocab_size = tokens->elements.size();
  if (types != nullptr && (types->type != GgufValue::Type::kArray || types->elements.size() != vocab_size)) {
    return invalid_argument(file.path() + ": GGUF tokenizer.ggml.token_type must list a type for every token");
  }
  Json vocab = Json::object(), added = Json::array();
  for (size_t id = 0; id < vocab_size; ++id) {
    const std::string& token = tokens->elements[id].string;
    if (!vocab.contains(token)) vocab[token] = id;
    const GgufValue* type = types != nullptr ? &types->elements[id] : nullptr;
    const int64_t kind = type != nullptr && type->is_integer() ? type->as_int() : 1;
    if (kind == kUnknown || kind == kControl || kind == kUserDefined) {
      added.push_back({{"id", id},
                       {"content", token},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", kind == kUserDefined},
                       {"special", kind != kUserDefined}});
    }
  }
  const std::optional<int64_t> bos = token_id(file, "tokenizer.ggml.bos_token_id", vocab_size);
  const std::optional<int64_t> eos = token_id(file, "tokenizer.ggml.eos_token_id", vocab_size);
  const std::optional<int64_t> unk = token_id(file, "tokenizer.ggml.unknown_token_id", vocab_size);
  Result<ModelParts> made =
      model_name == "gpt2" ? byte_level_bpe(file, vocab) : sentencepiece(file, *tokens, vocab, unk);
  if (!made.is_ok()) return made.status();
  ModelParts& parts = *made;

  TokenizerDocuments docs;
  Json& t = docs.tokenizer;
  t["added_tokens"] = std::move(added);
  t["normalizer"] = std::move(parts.normalizer);
  t["pre_tokenizer"] = std::move(parts.pre_tokenizer);
  t["model"] = std::move(parts.model);
  t["decoder"] = std::move(parts.decoder);
  const bool add_bos = bos && flag(file, "tokenizer.ggml.add_bos_token", parts.adds_bos);
  const bool add_eos = eos && flag(file, "tokenizer.ggml.add_eos_token", false);
  t["post_processor"] = nullptr;
  if (add_bos || add_eos) {
    Json single = Json::array(), specials = Json::object();
    const auto special = [&](int64_t id) {
      const std::string& name = tokens->elements[static_cast<size_t>(id)].string;
      single.push_back({{"SpecialToken", {{"id", name}, {"type_id", 0}}}});
      specials[name] = {{"id", name}, {"ids", Json::array({id})}, {"tokens", Json::array({name})}};
    };
    if (add_bos) special(*bos);
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (add_eos) special(*eos);
    t["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
  }

  Json& c = docs.config;
  c = Json::object();
  c["clean_up_tokenization_spaces"] = parts.cleans_spaces;
  if (bos) c["bos_token"] = tokens->elements[static_cast<size_t>(*bos)].string;
  if (eos) c["eos_token"] = tokens->elements[static_cast<size_t>(*eos)].string;
  if (unk) c["unk_token"] = tokens->elements[static_cast<size_t>(*unk)].string;
  const GgufValue* chat_template = file.find("tokenizer.chat_template");
  if (chat_template != nullptr && chat_template->type == GgufValue::Type::kString) {
    c["chat_template"] = chat_template->string;
  }
  return docs;
}

}  // namespace vllm
