// tokenizer.json "pre_tokenizer": splits normalized text into the pieces the
// model tokenizes separately (and may rewrite them, as ByteLevel does).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces each piece by the pieces it splits into, in order.
  // `at_input_start`: pieces[0] begins the input text (no added token
  // before it), which Metaspace's prepend_scheme "first" looks at.
  virtual std::vector<std::string> split(std::vector<std::string> pieces, bool at_input_start) const = 0;
};

// Null JSON gives nullptr (the whole text is one piece).
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const Json& json);

}  // namespace vllm
