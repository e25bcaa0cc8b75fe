// libFuzzer target: arbitrary bytes as the body of /v1/completions,
// /v1/chat/completions, /tokenize and /detokenize.  Never a crash or hang; a
// request that parses has at least one prompt, chat prompts come out
// tokenised, and detokenised ids are inside the vocabulary.
#include <cstdlib>
#include <memory>
#include <string>

#include "server/completion_request.h"
#include "server/tokenize_request.h"

namespace {

struct Fixture {
  std::unique_ptr<vllm::Tokenizer> tokenizer;
  std::unique_ptr<vllm::server::ChatRenderer> renderer;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    auto loaded = vllm::Tokenizer::load(VLLM_FUZZ_DEFAULT_TOKENIZER);
    if (!loaded.is_ok()) std::abort();
    x.tokenizer = std::move(loaded).value();
    auto renderer = vllm::server::ChatRenderer::create(*x.tokenizer, std::nullopt);
    if (!renderer.is_ok()) std::abort();
    x.renderer = std::make_unique<vllm::server::ChatRenderer>(std::move(renderer).value());
    return x;
  }();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  vllm::Result<vllm::server::CompletionRequest> completion = vllm::server::parse_completion_request(body);
  if (completion.is_ok() && completion->prompts.empty()) std::abort();
  const Fixture& f = fixture();
  vllm::Result<vllm::server::CompletionRequest> chat = vllm::server::parse_chat_request(body, *f.renderer);
  if (chat.is_ok() && (chat->prompts.size() != 1 || chat->prompts[0].token_ids)) std::abort();  // one rendered text
  vllm::Result<vllm::server::TokenizeRequest> tokenize = vllm::server::parse_tokenize_request(body, *f.renderer);
  if (tokenize.is_ok()) (void)f.tokenizer->encode(tokenize->text, tokenize->add_special_tokens);
  const int32_t vocab_size = f.tokenizer->vocab_size();
  vllm::Result<std::vector<int32_t>> ids = vllm::server::parse_detokenize_request(body, vocab_size);
  if (ids.is_ok()) {
    for (int32_t id : *ids) {
      if (id < 0 || id >= vocab_size) std::abort();
    }
    (void)f.tokenizer->decode(*ids, /*skip_special_tokens=*/true);
  }
  return 0;
}
