// tokenizer.json "post_processor": adds special tokens (BOS, ...) around the
// ids of a single sequence when add_special_tokens is requested.
#pragma once

#include <cstdint>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

class PostProcessor {
 public:
  // Null JSON gives a processor that adds nothing.
  static Result<PostProcessor> from_json(const Json& json);

  std::vector<int32_t> process(std::vector<int32_t> ids) const;

 private:
  // The "single" template: fixed ids, with one slot (-1) for the sequence.
  std::vector<int32_t> single_template_;
};

}  // namespace vllm
