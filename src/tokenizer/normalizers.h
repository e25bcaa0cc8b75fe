// tokenizer.json "normalizer": rewrites each piece of text before the model
// sees it.  Built from JSON; an unsupported type is an error naming it.
#pragma once

#include <memory>
#include <string>

#include "base/json.h"
#include "base/status.h"

namespace vllm {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};

// Null JSON gives nullptr (no normalization).
Result<std::unique_ptr<Normalizer>> make_normalizer(const Json& json);

// The string a Replace-style pattern {"String": s} stands for; Regex
// patterns are reported as unsupported.
Result<std::string> string_pattern(const Json& pattern, const std::string& where);

// Replaces every occurrence of `from` in `text` by `to`.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

}  // namespace vllm
