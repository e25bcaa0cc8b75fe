// tokenizer.json "decoder": turns the token strings of ids back into text.
// Like Hugging Face, each decoder maps a list of token strings to a new list;
// the final text is their concatenation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

// Null JSON gives nullptr (tokens are concatenated as they are).
Result<std::unique_ptr<Decoder>> make_decoder(const Json& json);

}  // namespace vllm
