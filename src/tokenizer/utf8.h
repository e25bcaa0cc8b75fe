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

// Appends the UTF-8 encoding of `code_point`.
void append(std::string& out, uint32_t code_point);

// U+FFFD REPLACEMENT CHARACTER, used for undecodable bytes.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace vllm::utf8
