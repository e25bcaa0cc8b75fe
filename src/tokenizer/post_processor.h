// tokenizer.json "post_processor": adds special tokens (BOS, ...) around the
// ids of a single sequence when add_special_tokens is requested.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

class PostProcessor {
 public:
  // Null JSON gives a processor that adds nothing.
  static Result<PostProcessor> from_json(const Json& json);

  std::vector<int32_t> process(std::vector<int32_t> ids) const;

  // [bos] A [eos]: what transformers rebuilds for Llama- and Gemma-style
  // tokenizers from tokenizer_config.json's add_bos_token / add_eos_token.
  static PostProcessor bos_eos(std::optional<int32_t> bos, std::optional<int32_t> eos);

 private:
  // The "single" template: fixed ids, with one slot (-1) for the sequence.
  std::vector<int32_t> single_template_;
};

}  // namespace vllm
