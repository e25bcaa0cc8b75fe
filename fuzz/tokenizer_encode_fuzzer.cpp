// libFuzzer target: arbitrary bytes (invalid UTF-8 included) through
// encode and decode.  Never a crash or hang; ids stay in the vocabulary; the
// decoded text is valid UTF-8; and for a SentencePiece-style tokenizer, valid
// UTF-8 input without U+2581 or special-token text decodes back to itself.
// The tokenizer directory comes from VLLM_FUZZ_TOKENIZER (default: the
// embedded stories260k).
#include <cstdlib>
#include <memory>
#include <string>

#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

const vllm::Tokenizer& tokenizer() {
  static const std::unique_ptr<vllm::Tokenizer> tok = [] {
    const char* dir = std::getenv("VLLM_FUZZ_TOKENIZER");
    auto loaded = vllm::Tokenizer::load(dir ? dir : VLLM_FUZZ_DEFAULT_TOKENIZER);
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
      std::abort();
    }
    return std::move(loaded).value();
  }();
  return *tok;
}

bool round_trip_applies(const std::string& text) {
  return std::getenv("VLLM_FUZZ_TOKENIZER") == nullptr && vllm::utf8::is_valid(text) &&
         text.find("\xE2\x96\x81") == std::string::npos && text.find("<s>") == std::string::npos &&
         text.find("</s>") == std::string::npos && text.find("<unk>") == std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const vllm::Tokenizer& tok = tokenizer();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::vector<int32_t> ids = tok.encode(text, true);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) std::abort();
  }
  const std::string decoded = tok.decode(ids, true);
  if (!vllm::utf8::is_valid(decoded)) std::abort();
  if (round_trip_applies(text) && decoded != text) std::abort();
  vllm::IncrementalDetokenizer detok(tok, true);
  std::string streamed;
  for (int32_t id : ids) streamed += detok.push(id);
  streamed += detok.flush();
  if (streamed != decoded) std::abort();
  return 0;
}
