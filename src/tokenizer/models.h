// tokenizer.json "model" factory: BPE, WordPiece or Unigram.
#pragma once

#include <memory>

#include "base/json.h"
#include "base/status.h"
#include "tokenizer/tokenizer_model.h"

namespace vllm {

Result<std::unique_ptr<TokenizerModel>> make_model(const Json& json);

}  // namespace vllm
