#define PCRE2_CODE_UNIT_WIDTH 8
#include "base/regex.h"

#include <pcre2.h>

namespace vllm {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Result<Regex> Regex::compile(const std::string& pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // UTF + UCP: \s, \w and \d follow Unicode, as Rust's regex (used by HF) does.
  // MATCH_INVALID_UTF lets arbitrary bytes be searched without failing.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    return invalid_argument("invalid regex '" + pattern + "' at offset " + std::to_string(offset) + ": " +
                            reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
  Regex re;
  auto owned = std::make_shared<Code>();
  owned->code = code;
  re.code_ = std::move(owned);
  return re;
}

Result<Regex> Regex::literal(const std::string& literal) { return compile("\\Q" + literal + "\\E"); }

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), start, 0, match, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      out.emplace_back(begin, end);
      start = end;
    } else {  // empty match: step over one character
      start = begin + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
  pcre2_match_data_free(match);
  return out;
}

}  // namespace vllm
