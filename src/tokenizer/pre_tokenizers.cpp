#include "tokenizer/pre_tokenizers.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizers.h"
#include "base/regex.h"

namespace vllm {
namespace {

// GPT-2's split: contractions, letters, numbers, other symbols, whitespace.
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct Span {
  size_t begin, end;
  bool is_match;
};

// Cuts `text` at the matches of `re` and regroups the spans as `behavior`
// says, with Hugging Face's rules for runs of matches.
std::vector<std::string> split_by(const std::string& text, const Regex& re, SplitBehavior behavior, bool invert) {
  std::vector<Span> spans;
  size_t prev = 0;
  for (const auto& [b, e] : re.find_all(text)) {
    if (b > prev) spans.push_back({prev, b, invert});
    spans.push_back({b, e, !invert});
    prev = e;
  }
  if (prev < text.size()) spans.push_back({prev, text.size(), invert});

  std::vector<Span> groups;
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.is_match) groups.push_back(s);
      }
      break;
    case SplitBehavior::kIsolated:
      groups = spans;
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !groups.empty()) {
          groups.back().end = s.end;
        } else {
          groups.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !groups.empty()) {
          groups.back().begin = it->begin;
        } else {
          groups.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(groups.begin(), groups.end());
      break;
    case SplitBehavior::kContiguous:
      for (size_t i = 0; i < spans.size(); ++i) {
        if (i > 0 && spans[i].is_match == previous_match) {
          groups.back().end = spans[i].end;
        } else {
          groups.push_back(spans[i]);
        }
        previous_match = spans[i].is_match;
      }
      break;
  }
  std::vector<std::string> out;
  for (const Span& g : groups) {
    if (g.end > g.begin) out.push_back(text.substr(g.begin, g.end - g.begin));
  }
  return out;
}

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  std::vector<std::string> split(std::vector<std::string> pieces, bool at_input_start) const override {
    for (const auto& p : parts_) pieces = p->split(std::move(pieces), at_input_start);
    return pieces;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Regex re, SplitBehavior behavior, bool invert)
      : re_(std::move(re)), behavior_(behavior), invert_(invert) {}
  std::vector<std::string> split(std::vector<std::string> pieces, bool) const override {
    std::vector<std::string> out;
    for (const std::string& p : pieces) {
      for (std::string& s : split_by(p, re_, behavior_, invert_)) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  Regex re_;
  SplitBehavior behavior_;
  bool invert_;
};

// Optionally a leading space, then GPT-2's split, then bytes -> alphabet.
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::optional<Regex> re)
      : add_prefix_space_(add_prefix_space), re_(std::move(re)) {}
  std::vector<std::string> split(std::vector<std::string> pieces, bool) const override {
    std::vector<std::string> out;
    for (std::string& p : pieces) {
      if (add_prefix_space_ && !p.empty() && p[0] != ' ') p.insert(p.begin(), ' ');
      if (!re_) {
        out.push_back(byte_level::encode(p));
        continue;
      }
      for (const std::string& s : split_by(p, *re_, SplitBehavior::kIsolated, false)) {
        out.push_back(byte_level::encode(s));
      }
    }
    return out;
  }

 private:
  bool add_prefix_space_;
  std::optional<Regex> re_;
};

// SentencePiece's spaces: ' ' becomes the replacement (U+2581), one is
// prepended (always, or only at the start of the input), and pieces may be
// split before each replacement.
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split, Regex re)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split), re_(std::move(re)) {}
  std::vector<std::string> split(std::vector<std::string> pieces, bool at_input_start) const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string p = replace_all(pieces[i], " ", replacement_);
      const bool prepend = prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && at_input_start && i == 0);
      if (prepend && p.compare(0, replacement_.size(), replacement_) != 0) p = replacement_ + p;
      if (!split_) {
        out.push_back(std::move(p));
        continue;
      }
      for (std::string& s : split_by(p, re_, SplitBehavior::kMergedWithNext, false)) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
  Regex re_;
};

Result<std::unique_ptr<PreTokenizer>> regex_splitter(const std::string& pattern, SplitBehavior behavior, bool invert) {
  VLLM_ASSIGN_OR_RETURN(Regex re, Regex::compile(pattern));
  return std::unique_ptr<PreTokenizer>(new SplitPreTokenizer(std::move(re), behavior, invert));
}

// Unicode punctuation plus ASCII's symbols, as HF's is_punctuation.
constexpr const char* kPunctuationPattern = R"([\p{P}!-/:-@\[-`{-~])";

Result<SplitBehavior> parse_behavior(const std::string& name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return invalid_argument("tokenizer.json: unknown Split behavior '" + name + "'");
}

Result<Regex> parse_pattern(const Json& pattern, const std::string& where) {
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
    Result<Regex> re = Regex::compile(pattern["Regex"].get<std::string>());
    if (!re.is_ok()) return re.status().with_context("tokenizer.json: " + where);
    return re;
  }
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    return Regex::literal(pattern["String"].get<std::string>());
  }
  return invalid_argument("tokenizer.json: " + where + " needs a pattern {\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& json) {
  if (json.is_null()) return std::unique_ptr<PreTokenizer>();
  if (!json.is_object() || !json.contains("type") || !json["type"].is_string()) {
    return invalid_argument("tokenizer.json: a pre_tokenizer needs a string 'type'");
  }
  const std::string type = json["type"].get<std::string>();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const Json& part : json.value("pretokenizers", Json::array())) {
      VLLM_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> p, make_pre_tokenizer(part));
      if (p) parts.push_back(std::move(p));
    }
    return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(parts)));
  }
  if (type == "Split") {
    VLLM_ASSIGN_OR_RETURN(Regex re, parse_pattern(json.value("pattern", Json()), "Split pre_tokenizer"));
    VLLM_ASSIGN_OR_RETURN(SplitBehavior behavior, parse_behavior(json.value("behavior", std::string("Isolated"))));
    return std::unique_ptr<PreTokenizer>(new SplitPreTokenizer(std::move(re), behavior, json.value("invert", false)));
  }
  if (type == "ByteLevel") {
    std::optional<Regex> re;
    if (json.value("use_regex", true)) {
      VLLM_ASSIGN_OR_RETURN(re, Regex::compile(kGpt2Pattern));
    }
    return std::unique_ptr<PreTokenizer>(
        new ByteLevelPreTokenizer(json.value("add_prefix_space", true), std::move(re)));
  }
  if (type == "Whitespace") return regex_splitter(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, /*invert=*/true);
  if (type == "WhitespaceSplit") return regex_splitter(R"(\s+)", SplitBehavior::kRemoved, false);
  if (type == "Digits") {
    return regex_splitter(json.value("individual_digits", false) ? "[0-9]" : "[0-9]+", SplitBehavior::kIsolated, false);
  }
  if (type == "Punctuation") {
    VLLM_ASSIGN_OR_RETURN(SplitBehavior behavior, parse_behavior(json.value("behavior", std::string("Isolated"))));
    return regex_splitter(kPunctuationPattern, behavior, false);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    VLLM_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> ws, regex_splitter(R"(\s+)", SplitBehavior::kRemoved, false));
    VLLM_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> punct,
                          regex_splitter(kPunctuationPattern, SplitBehavior::kIsolated, false));
    parts.push_back(std::move(ws));
    parts.push_back(std::move(punct));
    return std::unique_ptr<PreTokenizer>(new SequencePreTokenizer(std::move(parts)));
  }
  if (type == "Metaspace") {
    const std::string replacement = json.value("replacement", std::string("\xE2\x96\x81"));
    std::string scheme = json.value("prepend_scheme", std::string());
    if (scheme.empty()) scheme = json.value("add_prefix_space", true) ? "always" : "never";
    using P = MetaspacePreTokenizer::Prepend;
    P prepend;
    if (scheme == "always") {
      prepend = P::kAlways;
    } else if (scheme == "first") {
      prepend = P::kFirst;
    } else if (scheme == "never") {
      prepend = P::kNever;
    } else {
      return invalid_argument("tokenizer.json: unknown Metaspace prepend_scheme '" + scheme + "'");
    }
    VLLM_ASSIGN_OR_RETURN(Regex re, Regex::literal(replacement));
    return std::unique_ptr<PreTokenizer>(
        new MetaspacePreTokenizer(replacement, prepend, json.value("split", true), std::move(re)));
  }
  return unimplemented("tokenizer.json: pre_tokenizer type '" + type + "' is not supported");
}

}  // namespace vllm
