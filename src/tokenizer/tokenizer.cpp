#include "tokenizer/tokenizer.h"

#include "base/file_util.h"
#include "base/json.h"
#include "tokenizer/byte_level.h"

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
  const std::string config_path = join_path(dir, "tokenizer_config.json");
  Json config;
  if (file_exists(config_path)) {
    VLLM_ASSIGN_OR_RETURN(config, read_json_file(config_path));
  }
  return from_json(json, config, dir);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_json(const Json& json, const Json& config,
                                                        const std::string& source) {
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  const std::string path = join_path(source, "tokenizer.json");
  const std::string config_path = join_path(source, "tokenizer_config.json");
  try {
    if (!json.is_object()) return invalid_argument(path + ": expected a JSON object");
    Status status = tok->build_components(json);
    if (!status.is_ok()) return status.with_context(source);
  } catch (const Json::exception& e) {
    return invalid_argument(path + ": unexpected structure (" + std::string(e.what()) + ")");
  }
  if (config.is_null()) return tok;
  try {
    VLLM_RETURN_IF_ERROR(tok->read_config(config, config_path));
  } catch (const Json::exception& e) {
    return invalid_argument(config_path + ": unexpected structure (" + std::string(e.what()) + ")");
  }
  return tok;
}

Status Tokenizer::build_components(const Json& json) {
  VLLM_ASSIGN_OR_RETURN(added_, AddedVocabulary::from_json(json.value("added_tokens", Json())));
  VLLM_ASSIGN_OR_RETURN(normalizer_, make_normalizer(json.value("normalizer", Json())));
  VLLM_ASSIGN_OR_RETURN(pre_tokenizer_, make_pre_tokenizer(json.value("pre_tokenizer", Json())));
  VLLM_ASSIGN_OR_RETURN(model_, make_model(json.value("model", Json())));
  VLLM_ASSIGN_OR_RETURN(decoder_, make_decoder(json.value("decoder", Json())));
  const Json decoder = json.value("decoder", Json());
  byte_level_decoder_ = decoder.is_object() && decoder.value("type", "") == "ByteLevel";
  if (decoder.is_object() && decoder.value("type", "") == "Sequence" && decoder.contains("decoders") &&
      decoder["decoders"].is_array()) {
    for (const Json& d : decoder["decoders"]) {
      byte_level_decoder_ = byte_level_decoder_ || (d.is_object() && d.value("type", "") == "ByteLevel");
    }
  }
  VLLM_ASSIGN_OR_RETURN(post_processor_, PostProcessor::from_json(json.value("post_processor", Json())));
  return Status::ok();
}

Status Tokenizer::read_config(const Json& config, const std::string& path) {
  if (!config.is_object()) return invalid_argument(path + ": expected a JSON object");
  if (config.contains("clean_up_tokenization_spaces") && config["clean_up_tokenization_spaces"].is_boolean()) {
    clean_up_tokenization_spaces_ = config["clean_up_tokenization_spaces"].get<bool>();
  }
  for (const auto& [key, value] : config.items()) {
    if (key.size() < 6 || key.compare(key.size() - 6, 6, "_token") != 0) continue;
    if (value.is_string()) special_token_variables_[key] = value;
    if (value.is_object() && value.contains("content") && value["content"].is_string()) {
      special_token_variables_[key] = value["content"];
    }
  }
  if (config.contains("model_max_length") && config["model_max_length"].is_number()) {
    model_max_length_ = config["model_max_length"].get<double>();
  }
  VLLM_RETURN_IF_ERROR(apply_bos_eos_flags(config, path));
  const Json& tmpl = config.contains("chat_template") ? config["chat_template"] : Json();
  if (tmpl.is_string()) {
    chat_template_ = tmpl.get<std::string>();
  } else if (tmpl.is_array()) {
    for (const Json& named : tmpl) {
      if (named.is_object() && named.value("name", std::string()) == "default" && named.contains("template") &&
          named["template"].is_string()) {
        chat_template_ = named["template"].get<std::string>();
      }
    }
    if (!chat_template_) return invalid_argument(path + ": chat_template list has no template named 'default'");
  } else if (!tmpl.is_null()) {
    return invalid_argument(path + ": chat_template must be a string or a list of {name, template}");
  }
  return Status::ok();
}

// transformers' Llama and Gemma fast tokenizers rebuild their
// post-processor from add_bos_token / add_eos_token; other classes ignore them.
Status Tokenizer::apply_bos_eos_flags(const Json& config, const std::string& path) {
  const std::string cls = config.value("tokenizer_class", std::string());
  const bool rebuilds = cls.rfind("LlamaTokenizer", 0) == 0 || cls.rfind("GemmaTokenizer", 0) == 0 ||
                        cls.rfind("CodeLlamaTokenizer", 0) == 0;
  if (!rebuilds || !(config.contains("add_bos_token") || config.contains("add_eos_token"))) return Status::ok();
  auto token_id = [&](const char* name) -> Result<std::optional<int32_t>> {
    const Json& v = special_token_variables_.contains(name) ? special_token_variables_[name] : Json();
    if (!v.is_string()) return invalid_argument(path + ": " + name + " is needed by add_" + name);
    const AddedToken* t = added_.find(v.get<std::string>());
    if (t == nullptr) return invalid_argument(path + ": " + name + " '" + v.get<std::string>() + "' is not a token");
    return std::optional<int32_t>(t->id);
  };
  std::optional<int32_t> bos, eos;
  if (config.value("add_bos_token", true)) {
    VLLM_ASSIGN_OR_RETURN(bos, token_id("bos_token"));
  }
  if (config.value("add_eos_token", false)) {
    VLLM_ASSIGN_OR_RETURN(eos, token_id("eos_token"));
  }
  post_processor_ = PostProcessor::bos_eos(bos, eos);
  return Status::ok();
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  for (const TextSegment& seg : added_.split(text)) {
    if (seg.added_token_id >= 0) {
      ids.push_back(seg.added_token_id);
      continue;
    }
    std::string normalized(seg.text);
    if (normalizer_) normalized = normalizer_->normalize(std::move(normalized));
    const bool segment_at_start = seg.text.data() == text.data();
    // Added tokens with normalized=true are found in the normalized text.
    for (const TextSegment& part : added_.split(normalized, /*normalized_pass=*/true)) {
      if (part.added_token_id >= 0) {
        ids.push_back(part.added_token_id);
        continue;
      }
      if (!pre_tokenizer_) {
        model_->tokenize(part.text, ids);
        continue;
      }
      const bool at_input_start = segment_at_start && part.text.data() == normalized.data();
      for (const std::string& word : pre_tokenizer_->split({std::string(part.text)}, at_input_start)) {
        model_->tokenize(word, ids);
      }
    }
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

std::string Tokenizer::token_bytes(int32_t id) const {
  const std::string piece = id_to_token(id);
  if (piece.empty()) return piece;
  if (is_byte_token(id)) return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
  if (byte_level_decoder_) {
    std::string bytes;
    return byte_level::decode(piece, bytes) ? bytes : piece;
  }
  if (!decoder_) return piece;
  // Decoders may treat the first token apart (Strip drops its leading
  // space), so the token is decoded after an anchor and the anchor removed.
  auto decoded = [&](std::vector<std::string> pieces) {
    std::string text;
    for (const std::string& t : decoder_->decode_chain(std::move(pieces))) text += t;
    return text;
  };
  const std::string anchor = decoded({"x"});
  const std::string both = decoded({"x", piece});
  if (both.compare(0, anchor.size(), anchor) == 0) return both.substr(anchor.size());
  return decoded({piece});
}

std::string Tokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = added_.find(id)) return t->content;
  return model_->id_to_token(id);
}

int32_t Tokenizer::vocab_size() const {
  int32_t n = model_->vocab_size();
  for (const AddedToken& t : added_.tokens()) n = std::max(n, t.id + 1);
  return n;
}

}  // namespace vllm
