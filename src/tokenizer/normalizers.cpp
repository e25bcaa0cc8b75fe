#include "tokenizer/normalizers.h"

#include <vector>

namespace vllm {
namespace {

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string text) const override {
    for (const auto& p : parts_) text = p->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

// Prepends a string to non-empty text (SentencePiece's dummy prefix).
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string text) const override { return text.empty() ? text : prefix_ + text; }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  std::string normalize(std::string text) const override { return replace_all(text, from_, to_); }

 private:
  std::string from_, to_;
};

}  // namespace

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (;;) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

Result<std::string> string_pattern(const Json& pattern, const std::string& where) {
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    return pattern["String"].get<std::string>();
  }
  if (pattern.is_object() && pattern.contains("Regex")) {
    return unimplemented("tokenizer.json: " + where + " with a Regex pattern is not supported yet");
  }
  return invalid_argument("tokenizer.json: " + where + " needs a pattern {\"String\": ...}");
}

Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& json) {
  if (json.is_null()) return std::unique_ptr<Normalizer>();
  if (!json.is_object() || !json.contains("type") || !json["type"].is_string()) {
    return invalid_argument("tokenizer.json: a normalizer needs a string 'type'");
  }
  const std::string type = json["type"].get<std::string>();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const Json& part : json.value("normalizers", Json::array())) {
      VLLM_ASSIGN_OR_RETURN(std::unique_ptr<Normalizer> n, make_normalizer(part));
      if (n) parts.push_back(std::move(n));
    }
    return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(parts)));
  }
  if (type == "Prepend") {
    if (!json.contains("prepend") || !json["prepend"].is_string()) {
      return invalid_argument("tokenizer.json: Prepend normalizer needs a string 'prepend'");
    }
    return std::unique_ptr<Normalizer>(new PrependNormalizer(json["prepend"].get<std::string>()));
  }
  if (type == "Replace") {
    VLLM_ASSIGN_OR_RETURN(std::string from, string_pattern(json.value("pattern", Json()), "Replace normalizer"));
    if (!json.contains("content") || !json["content"].is_string()) {
      return invalid_argument("tokenizer.json: Replace normalizer needs a string 'content'");
    }
    return std::unique_ptr<Normalizer>(new ReplaceNormalizer(std::move(from), json["content"].get<std::string>()));
  }
  return unimplemented("tokenizer.json: normalizer type '" + type + "' is not supported");
}

}  // namespace vllm
