// GPT-2's byte-level alphabet: every byte maps to one printable code point
// (printable Latin-1 to itself, the rest to U+0100 onwards), so that any
// byte string becomes text a BPE vocabulary can hold.
#pragma once

#include <string>
#include <string_view>

namespace vllm::byte_level {

// The UTF-8 text of the byte-level characters of `bytes`.
std::string encode(std::string_view bytes);

// The bytes behind byte-level text; false if `text` holds a character
// outside the alphabet (then `out` is unspecified).
bool decode(std::string_view text, std::string& out);

}  // namespace vllm::byte_level
