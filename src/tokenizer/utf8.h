// Small UTF-8 helpers shared by the tokenizer's components.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vllm::utf8 {

// Length in bytes of the UTF-8 sequence starting with byte `lead` (1 for an
// invalid lead byte, so that scanning always advances).
int sequence_length(uint8_t lead);

// Whether `s` is entirely well-formed UTF-8.
bool is_valid(std::string_view s);

// `s` with each ill-formed sequence (each maximal subpart, as Unicode and
// Rust's from_utf8_lossy define it) replaced by one U+FFFD.
std::string make_valid(std::string_view s);

// Calls f(code_point, bytes) for each character of `s`; an invalid byte is
// passed alone with code point -1.
template <typename F>
void for_each_code_point(std::string_view s, F f) {
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<uint8_t>(s[i]);
    const int len = sequence_length(lead);
    uint32_t cp = len == 1 ? lead : lead & (0xFFu >> (len + 1));
    bool ok = len == 1 ? lead < 0x80 : i + static_cast<size_t>(len) <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto c = static_cast<uint8_t>(s[i + static_cast<size_t>(k)]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3Fu);
    }
    if (!ok || !is_valid(s.substr(i, static_cast<size_t>(len)))) {
      f(int32_t{-1}, s.substr(i, 1));
      ++i;
      continue;
    }
    f(static_cast<int32_t>(cp), s.substr(i, static_cast<size_t>(len)));
    i += static_cast<size_t>(len);
  }
}

// Appends the UTF-8 encoding of `code_point`.
void append(std::string& out, uint32_t code_point);

// U+FFFD REPLACEMENT CHARACTER, used for undecodable bytes.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace vllm::utf8
