#include "tokenizer/decoders.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizers.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace vllm {
namespace {

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& p : parts_) tokens = p->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) t = replace_all(t, from_, to_);
    return tokens;
  }

 private:
  std::string from_, to_;
};

// Runs of <0xNN> tokens become their bytes when those form valid UTF-8, and
// one U+FFFD per byte otherwise.
class ByteFallbackDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t num_bytes = 0;
    auto flush = [&] {
      if (num_bytes == 0) return;
      if (utf8::is_valid(bytes)) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < num_bytes; ++i) out.emplace_back(utf8::kReplacement);
      }
      bytes.clear();
      num_bytes = 0;
    };
    for (auto& t : tokens) {
      int value = -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') value = parse_hex_byte(t[3], t[4]);
      if (value >= 0) {
        bytes.push_back(static_cast<char>(value));
        ++num_bytes;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    return out;
  }

 private:
  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  static int parse_hex_byte(char hi, char lo) {
    const int h = hex_digit(hi), l = hex_digit(lo);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class FuseDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string joined;
    for (const auto& t : tokens) joined += t;
    return {joined};
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character
// from each token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, int start, int stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) {
      std::string_view v = t;
      for (int i = 0; i < start_ && v.substr(0, content_.size()) == content_; ++i) v.remove_prefix(content_.size());
      for (int i = 0; i < stop_ && v.size() >= content_.size() && v.substr(v.size() - content_.size()) == content_;
           ++i) {
        v.remove_suffix(content_.size());
      }
      t = std::string(v);
    }
    return tokens;
  }

 private:
  std::string content_;
  int start_, stop_;
};

// Byte-level characters back to bytes, all tokens at once, then UTF-8 with
// each invalid sequence replaced by U+FFFD.  A token with characters outside
// the byte-level alphabet (an added token such as "<|endoftext|>" with a
// space) contributes its own bytes.
class ByteLevelDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      std::string decoded;
      bytes += byte_level::decode(t, decoded) ? decoded : t;
    }
    return {utf8::make_valid(bytes)};
  }
};

// SentencePiece spaces back to ' '; the first token loses the space the
// pre-tokenizer prepended (unless prepend_scheme is "never").
class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], replacement_, " ");
      if (i == 0 && strip_first_ && !tokens[i].empty() && tokens[i][0] == ' ') tokens[i].erase(0, 1);
    }
    return tokens;
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

// WordPiece: "##" continues a word, anything else starts a new one after a space.
class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i > 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(t.begin(), ' ');
        }
      }
      if (cleanup_) t = clean_up_tokenization(std::move(t));
    }
    return tokens;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

// BPE with an end-of-word suffix ("</w>"): the suffix becomes a space, except
// on the last token.
class BpeSuffixDecoder : public Decoder {
 public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    return tokens;
  }

 private:
  std::string suffix_;
};

}  // namespace

Result<std::unique_ptr<Decoder>> make_decoder(const Json& json) {
  if (json.is_null()) return std::unique_ptr<Decoder>();
  if (!json.is_object() || !json.contains("type") || !json["type"].is_string()) {
    return invalid_argument("tokenizer.json: a decoder needs a string 'type'");
  }
  const std::string type = json["type"].get<std::string>();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const Json& part : json.value("decoders", Json::array())) {
      VLLM_ASSIGN_OR_RETURN(std::unique_ptr<Decoder> d, make_decoder(part));
      if (d) parts.push_back(std::move(d));
    }
    return std::unique_ptr<Decoder>(new SequenceDecoder(std::move(parts)));
  }
  if (type == "Replace") {
    VLLM_ASSIGN_OR_RETURN(std::string from, string_pattern(json.value("pattern", Json()), "Replace decoder"));
    if (!json.contains("content") || !json["content"].is_string()) {
      return invalid_argument("tokenizer.json: Replace decoder needs a string 'content'");
    }
    return std::unique_ptr<Decoder>(new ReplaceDecoder(std::move(from), json["content"].get<std::string>()));
  }
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(new ByteFallbackDecoder());
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(new ByteLevelDecoder());
  if (type == "Metaspace") {
    std::string scheme = json.value("prepend_scheme", std::string());
    if (scheme.empty()) scheme = json.value("add_prefix_space", true) ? "always" : "never";
    return std::unique_ptr<Decoder>(
        new MetaspaceDecoder(json.value("replacement", std::string("\xE2\x96\x81")), scheme != "never"));
  }
  if (type == "WordPiece") {
    return std::unique_ptr<Decoder>(
        new WordPieceDecoder(json.value("prefix", std::string("##")), json.value("cleanup", true)));
  }
  if (type == "BPEDecoder")
    return std::unique_ptr<Decoder>(new BpeSuffixDecoder(json.value("suffix", std::string("</w>"))));
  if (type == "Fuse") return std::unique_ptr<Decoder>(new FuseDecoder());
  if (type == "Strip") {
    if (!json.contains("content") || !json["content"].is_string()) {
      return invalid_argument("tokenizer.json: Strip decoder needs a string 'content'");
    }
    return std::unique_ptr<Decoder>(
        new StripDecoder(json["content"].get<std::string>(), json.value("start", 0), json.value("stop", 0)));
  }
  return unimplemented("tokenizer.json: decoder type '" + type + "' is not supported");
}

}  // namespace vllm
