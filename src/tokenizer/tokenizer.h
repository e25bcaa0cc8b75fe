// A Hugging Face tokenizer: tokenizer.json (added tokens, normalizer, model,
// decoder, post-processor) plus the tokenizer_config.json settings that
// change encoding or decoding.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "base/status.h"
#include "tokenizer/added_vocabulary.h"
#include "tokenizer/decoders.h"
#include "tokenizer/models.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizers.h"

namespace vllm {

// transformers' clean_up_tokenization: drops the space before punctuation
// and common English contractions (" ." -> ".", " n't" -> "n't", ...).  Every
// rule removes one space and spans at most 4 bytes.
std::string clean_up_tokenization(std::string text);

class Tokenizer {
 public:
  // `dir` holds tokenizer.json and optionally tokenizer_config.json.
  static Result<std::unique_ptr<Tokenizer>> load(const std::string& dir);
  // The same from the two documents (`config` null: none); errors name
  // them as files of `source` (a directory, or the file they were made from).
  static Result<std::unique_ptr<Tokenizer>> from_json(const Json& tokenizer, const Json& config,
                                                      const std::string& source);

  // encode(text) as Hugging Face does; add_special_tokens applies the
  // post-processor (e.g. prepends BOS).
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const;

  // decode(ids); ids outside the vocabulary are skipped.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
  // decode() before clean_up_tokenization_spaces is applied.
  std::string decode_uncleaned(const std::vector<int32_t>& ids, bool skip_special_tokens) const;
  bool clean_up_tokenization_spaces() const { return clean_up_tokenization_spaces_; }

  // The vocabulary string of an id ("" if none).
  std::string id_to_token(int32_t id) const;
  int32_t vocab_size() const;
  bool is_special(int32_t id) const { return added_.is_special(id); }
  // A byte-fallback token "<0xNN>": its text depends on the whole run of them.
  bool is_byte_token(int32_t id) const { return model_->is_byte_token(id); }
  // The bytes token `id` adds to a text it does not start (so no leading
  // space is stripped), before any UTF-8 repair: what a grammar matches.
  std::string token_bytes(int32_t id) const;

  // tokenizer_config.json's chat_template (a string, or the "default" of a
  // list of named templates), if any.
  const std::optional<std::string>& chat_template() const { return chat_template_; }
  // The special tokens tokenizer_config.json names (bos_token, eos_token,
  // unk_token, pad_token, ...) as strings: the variables chat templates see.
  const Json& special_token_variables() const { return special_token_variables_; }
  // tokenizer_config.json's model_max_length (often a huge placeholder).
  std::optional<double> model_max_length() const { return model_max_length_; }

 private:
  Tokenizer() = default;
  // The tokenizer.json pipeline; may throw Json::exception on odd structure.
  Status build_components(const Json& json);
  Status read_config(const Json& config, const std::string& path);
  Status apply_bos_eos_flags(const Json& config, const std::string& path);

  AddedVocabulary added_;
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<TokenizerModel> model_;
  std::unique_ptr<Decoder> decoder_;
  PostProcessor post_processor_;
  bool byte_level_decoder_ = false;  // the decoder maps GPT-2's byte alphabet back to bytes
  bool clean_up_tokenization_spaces_ = false;
  std::optional<std::string> chat_template_;
  std::optional<double> model_max_length_;
  Json special_token_variables_ = Json::object();
};

}  // namespace vllm
