#include "model/loader/gguf_tokenizer.h"

#include <optional>

namespace vllm {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
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

}  // namespace

Result<TokenizerDocuments> gguf_tokenizer_documents(const GgufFile& file) {
  const auto missing = [&file](const std::string& what) {
    return unimplemented(file.path() + ": " + what +
                         "; pass --tokenizer DIR naming the model's Hugging Face tokenizer");
  };
  const GgufValue* model = file.find("tokenizer.ggml.model");
  const std::string model_name = model != nullptr && model->type == GgufValue::Type::kString ? model->string : "";
  if (model_name != "gpt2") {
    return missing("GGUF tokenizer.ggml.model '" + model_name + "' is not read yet (byte-level BPE, 'gpt2', is)");
  }
  const GgufValue* pre_value = file.find("tokenizer.ggml.pre");
  const std::string pre_name =
      pre_value != nullptr && pre_value->type == GgufValue::Type::kString ? pre_value->string : "default";
  const PreTokenizer* pre = nullptr;
  for (const PreTokenizer& p : kPreTokenizers) {
    if (pre_name == p.name) pre = &p;
  }
  if (pre == nullptr) return missing("GGUF tokenizer.ggml.pre '" + pre_name + "' is not read yet");
  const GgufValue* tokens = string_array(file, "tokenizer.ggml.tokens");
  const GgufValue* merges = string_array(file, "tokenizer.ggml.merges");
  if (tokens == nullptr || merges == nullptr) {
    return invalid_argument(file.path() + ": GGUF tokenizer needs string arrays tokenizer.ggml.tokens and merges");
  }
  const GgufValue* types = file.find("tokenizer.ggml.token_type");
  const size_t vocab_size = tokens->elements.size();
  if (types != nullptr && (types->type != GgufValue::Type::kArray || types->elements.size() != vocab_size)) {
    return invalid_argument(file.path() + ": GGUF tokenizer.ggml.token_type must list a type for every token");
  }

  Json vocab = Json::object(), added = Json::array(), merge_list = Json::array();
  for (size_t id = 0; id < vocab_size; ++id) {
    const std::string& token = tokens->elements[id].string;
    if (!vocab.contains(token)) vocab[token] = id;
    const GgufValue* type = types != nullptr ? &types->elements[id] : nullptr;
    const int64_t kind = type != nullptr && type->is_integer() ? type->as_int() : 1;
    if (kind == kControl || kind == kUserDefined) {
      added.push_back({{"id", id},
                       {"content", token},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", kind == kUserDefined},
                       {"special", kind == kControl}});
    }
  }
  for (const GgufValue& m : merges->elements) merge_list.push_back(m.string);

  TokenizerDocuments docs;
  Json& t = docs.tokenizer;
  t["added_tokens"] = std::move(added);
  t["normalizer"] = nullptr;
  const Json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", pre->regex == nullptr}};
  if (pre->regex == nullptr) {
    t["pre_tokenizer"] = byte_level;
  } else {
    t["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         Json::array(
             {{{"type", "Split"}, {"pattern", {{"Regex", pre->regex}}}, {"behavior", "Isolated"}, {"invert", false}},
              byte_level})}};
  }
  t["model"] = {{"type", "BPE"},          {"vocab", std::move(vocab)},           {"merges", std::move(merge_list)},
                {"byte_fallback", false}, {"ignore_merges", pre->ignore_merges}, {"dropout", nullptr},
                {"unk_token", nullptr}};
  t["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};

  const std::optional<int64_t> bos = token_id(file, "tokenizer.ggml.bos_token_id", vocab_size);
  const std::optional<int64_t> eos = token_id(file, "tokenizer.ggml.eos_token_id", vocab_size);
  const bool add_bos = bos && flag(file, "tokenizer.ggml.add_bos_token", pre->adds_bos);
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
  c["clean_up_tokenization_spaces"] = pre->cleans_spaces;
  if (bos) c["bos_token"] = tokens->elements[static_cast<size_t>(*bos)].string;
  if (eos) c["eos_token"] = tokens->elements[static_cast<size_t>(*eos)].string;
  const GgufValue* chat_template = file.find("tokenizer.chat_template");
  if (chat_template != nullptr && chat_template->type == GgufValue::Type::kString) {
    c["chat_template"] = chat_template->string;
  }
  return docs;
}

}  // namespace vllm
