#include "tokenizer/normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "base/regex.h"
#include "tokenizer/utf8.h"

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

class RegexReplaceNormalizer : public Normalizer {
 public:
  RegexReplaceNormalizer(Regex re, std::string to) : re_(std::move(re)), to_(std::move(to)) {}
  std::string normalize(std::string text) const override {
    std::string out;
    size_t prev = 0;
    for (const auto& [b, e] : re_.find_all(text)) {
      out.append(text, prev, b - prev);
      out.append(to_);
      prev = e;
    }
    out.append(text, prev, std::string::npos);
    return out;
  }

 private:
  Regex re_;
  std::string to_;
};

// Unicode normalization forms through utf8proc; text that is not valid
// UTF-8 is left as it is.
class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(int options) : options_(static_cast<utf8proc_option_t>(options)) {}
  std::string normalize(std::string text) const override {
    utf8proc_uint8_t* result = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &result, options_);
    if (n < 0) return text;
    std::string out(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
    std::free(result);
    return out;
  }

 private:
  utf8proc_option_t options_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  std::string normalize(std::string text) const override {
    std::string out;
    out.reserve(text.size());
    utf8::for_each_code_point(text, [&](int32_t cp, std::string_view bytes) {
      if (cp < 0) {
        out.append(bytes);  // an invalid byte is kept as it is
      } else {
        utf8::append(out, static_cast<uint32_t>(utf8proc_tolower(cp)));
      }
    });
    return out;
  }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string text) const override {
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    size_t b = 0, e = text.size();
    if (left_) {
      while (b < e && is_space(text[b])) ++b;
    }
    if (right_) {
      while (e > b && is_space(text[e - 1])) --e;
    }
    return text.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

// Drops combining marks (category Mn), as after NFD.
class StripAccentsNormalizer : public Normalizer {
 public:
  std::string normalize(std::string text) const override {
    std::string out;
    utf8::for_each_code_point(text, [&](int32_t cp, std::string_view bytes) {
      if (cp < 0 || utf8proc_category(cp) != UTF8PROC_CATEGORY_MN) out.append(bytes);
    });
    return out;
  }
};

bool is_cjk_ideograph(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// BERT's normalizer: control characters dropped and whitespace made ' ',
// spaces around CJK ideographs, optional accent stripping and lowercasing.
class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_chars_(chinese_chars), strip_accents_(strip_accents), lowercase_(lowercase) {}
  std::string normalize(std::string text) const override {
    std::string out;
    utf8::for_each_code_point(text, [&](int32_t cp, std::string_view bytes) {
      if (cp < 0) {
        out.append(bytes);
        return;
      }
      const utf8proc_category_t cat = utf8proc_category(cp);
      if (clean_text_) {
        if (cp == 0 || cp == 0xFFFD) return;
        if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cat == UTF8PROC_CATEGORY_ZS) {
          out.push_back(' ');
          return;
        }
        if (cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF) return;
      }
      const bool spaced = chinese_chars_ && is_cjk_ideograph(cp);
      if (spaced) out.push_back(' ');
      out.append(bytes);
      if (spaced) out.push_back(' ');
    });
    if (strip_accents_)
      out = StripAccentsNormalizer().normalize(
          UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE).normalize(std::move(out)));
    if (lowercase_) out = LowercaseNormalizer().normalize(std::move(out));
    return out;
  }

 private:
  bool clean_text_, chinese_chars_, strip_accents_, lowercase_;
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
    if (!json.contains("content") || !json["content"].is_string()) {
      return invalid_argument("tokenizer.json: Replace normalizer needs a string 'content'");
    }
    const std::string to = json["content"].get<std::string>();
    const Json pattern = json.value("pattern", Json());
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      VLLM_ASSIGN_OR_RETURN(Regex re, Regex::compile(pattern["Regex"].get<std::string>()));
      return std::unique_ptr<Normalizer>(new RegexReplaceNormalizer(std::move(re), to));
    }
    VLLM_ASSIGN_OR_RETURN(std::string from, string_pattern(pattern, "Replace normalizer"));
    return std::unique_ptr<Normalizer>(new ReplaceNormalizer(std::move(from), to));
  }
  if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  if (type == "NFKC") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  }
  if (type == "NFKD") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccentsNormalizer());
  if (type == "BertNormalizer") {
    const bool lowercase = json.value("lowercase", true);
    const Json strip = json.value("strip_accents", Json());
    return std::unique_ptr<Normalizer>(
        new BertNormalizer(json.value("clean_text", true), json.value("handle_chinese_chars", true),
                           strip.is_boolean() ? strip.get<bool>() : lowercase, lowercase));
  }
  // SentencePiece's precompiled character map is, for the models that ship
  // one, NFKC-like; approximated by NFKC (not the map itself).
  if (type == "Precompiled") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  }
  if (type == "Strip") {
    return std::unique_ptr<Normalizer>(
        new StripNormalizer(json.value("strip_left", true), json.value("strip_right", true)));
  }
  return unimplemented("tokenizer.json: normalizer type '" + type + "' is not supported");
}

}  // namespace vllm
