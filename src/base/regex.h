// A compiled PCRE2 pattern (UTF mode, Unicode properties, JIT when
// available): the regexes tokenizer.json uses (look-ahead, \p{L}, \p{N}),
// and the "re:" layer patterns of compressed-tensors configs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace vllm {

class Regex {
 public:
  static Result<Regex> compile(const std::string& pattern);
  // A pattern matching `literal` exactly.
  static Result<Regex> literal(const std::string& literal);

  // Byte ranges [begin, end) of every non-empty, non-overlapping match, left to right.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;  // immutable once compiled; shared by copies
};

}  // namespace vllm
