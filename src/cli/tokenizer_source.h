// The tokenizer a path names: a Hugging Face tokenizer directory, a GGUF
// file (its own vocabulary), or a directory holding one GGUF file.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

}  // namespace vllm::cli
