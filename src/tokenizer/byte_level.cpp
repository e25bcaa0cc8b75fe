#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace vllm::byte_level {
namespace {

struct Tables {
  std::array<std::string, 256> byte_to_text;
  std::array<int16_t, 512> code_point_to_byte;  // alphabet code points are < 0x144
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    t.code_point_to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const int cp = printable(b) ? b : next++;
      utf8::append(t.byte_to_text[static_cast<size_t>(b)], static_cast<uint32_t>(cp));
      t.code_point_to_byte[static_cast<size_t>(cp)] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return t;
}

}  // namespace

std::string encode(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.byte_to_text[static_cast<uint8_t>(c)];
  return out;
}

bool decode(std::string_view text, std::string& out) {
  const Tables& t = tables();
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<uint8_t>(text[i]);
    uint32_t cp;
    if (lead < 0x80) {
      cp = lead;
      i += 1;
    } else if ((lead & 0xE0) == 0xC0 && i + 1 < text.size()) {
      cp = ((lead & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      return false;
    }
    if (cp >= t.code_point_to_byte.size() || t.code_point_to_byte[cp] < 0) return false;
    out.push_back(static_cast<char>(t.code_point_to_byte[cp]));
  }
  return true;
}

}  // namespace vllm::byte_level
