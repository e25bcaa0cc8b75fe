// A GGUF file's own tokenizer (its tokenizer.ggml.* metadata) written as
// the tokenizer.json and tokenizer_config.json that Tokenizer reads, so that
// one tokenizer implementation serves both kinds of model.
//
// Read: SentencePiece vocabularies (tokenizer.ggml.model "llama": pieces
// with scores, byte pieces, "▁" for spaces), made into the BPE model
// transformers makes of them; byte-level BPE vocabularies ("gpt2", with
// merges) of the pre-tokenizers llama.cpp names gpt-2 / default, llama-bpe
// (Llama 3) and qwen2 (Qwen2 and Qwen3).  Unknown and control tokens become
// special added tokens, user-defined ones plain added tokens;
// tokenizer.ggml.add_bos_token / add_eos_token (else llama.cpp's default for
// the vocabulary) wrap each encoding; tokenizer.chat_template is the chat
// template.  Other vocabularies are an error naming what is missing.
#pragma once

#include "base/json.h"
#include "model/loader/gguf_file.h"

namespace vllm {

struct TokenizerDocuments {
  Json tokenizer;  // as tokenizer.json
  Json config;     // as tokenizer_config.json
};

Result<TokenizerDocuments> gguf_tokenizer_documents(const GgufFile& file);

}  // namespace vllm
