#include "tokenizer/tokenizer.h"

#include "base/file_util.h"
#include "base/json.h"

namespace vllm {
std::string clean_up_tokenization(std::string text) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) text = replace_all(text, from, to);
  return text;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& dir) {
  const std::string path = join_path(dir, "tokenizer.json");
  VLLM_ASSIGN_OR_RETURN(Json json, read_json_file(path));
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  try {
    if (!json.is_object()) return invalid_argument(path + ": expected a JSON object");
    Result<AddedVocabulary> added = AddedVocabulary::from_json(json.value("added_tokens", Json()));
    if (!added.is_ok()) return added.status().with_context(dir);
    tok->added_ = std::move(added).value();
    Result<std::unique_ptr<Normalizer>> normalizer = make_normalizer(json.value("normalizer", Json()));
    if (!normalizer.is_ok()) return normalizer.status().with_context(dir);
    tok->normalizer_ = std::move(normalizer).value();
    Result<std::unique_ptr<PreTokenizer>> pre_tokenizer = make_pre_tokenizer(json.value("pre_tokenizer", Json()));
    if (!pre_tokenizer.is_ok()) return pre_tokenizer.status().with_context(dir);
    tok->pre_tokenizer_ = std::move(pre_tokenizer).value();
    Result<BpeModel> model = BpeModel::from_json(json.value("model", Json()));
    if (!model.is_ok()) return model.status().with_context(dir);
    tok->model_ = std::move(model).value();
    Result<std::unique_ptr<Decoder>> decoder = make_decoder(json.value("decoder", Json()));
    if (!decoder.is_ok()) return decoder.status().with_context(dir);
    tok->decoder_ = std::move(decoder).value();
    Result<PostProcessor> pp = PostProcessor::from_json(json.value("post_processor", Json()));
    if (!pp.is_ok()) return pp.status().with_context(dir);
    tok->post_processor_ = std::move(pp).value();
  } catch (const Json::exception& e) {
    return invalid_argument(path + ": unexpected structure (" + std::string(e.what()) + ")");
  }
  const std::string config_path = join_path(dir, "tokenizer_config.json");
  if (file_exists(config_path)) {
    VLLM_ASSIGN_OR_RETURN(Json config, read_json_file(config_path));
    if (config.is_object() && config.contains("clean_up_tokenization_spaces") &&
        config["clean_up_tokenization_spaces"].is_boolean()) {
      tok->clean_up_tokenization_spaces_ = config["clean_up_tokenization_spaces"].get<bool>();
    }
  }
  return tok;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  for (const TextSegment& seg : added_.split(text)) {
    if (seg.added_token_id >= 0) {
      ids.push_back(seg.added_token_id);
      continue;
    }
    std::string piece(seg.text);
    if (normalizer_) piece = normalizer_->normalize(std::move(piece));
    if (!pre_tokenizer_) {
      model_.tokenize(piece, ids);
      continue;
    }
    for (const std::string& word : pre_tokenizer_->split({std::move(piece)})) model_.tokenize(word, ids);
  }
  return add_special_tokens ? post_processor_.process(std::move(ids)) : ids;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::string text = decode_uncleaned(ids, skip_special_tokens);
  return clean_up_tokenization_spaces_ ? clean_up_tokenization(std::move(text)) : text;
}

std::string Tokenizer::decode_uncleaned(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (skip_special_tokens && added_.is_special(id)) continue;
    std::string token = id_to_token(id);
    if (!token.empty()) tokens.push_back(std::move(token));
  }
  if (decoder_) tokens = decoder_->decode_chain(std::move(tokens));
  std::string text;
  for (const auto& t : tokens) text += t;
  return text;
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = added_.find(id)) return t->content;
  return model_.id_to_token(id);
}

int32_t Tokenizer::vocab_size() const {
  int32_t n = model_.vocab_size();
  for (const AddedToken& t : added_.tokens()) n = std::max(n, t.id + 1);
  return n;
}

}  // namespace vllm
