// Integers as people write them on a command line: "2048", "1k" (1000),
// "1K" (1024), "4GiB", "512MB", "1.5G".
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace vllm::cli {

// Suffixes: k m g t (powers of 1000), K M G T and KiB MiB GiB TiB (powers
// of 1024), KB MB GB TB (powers of 1000); an optional trailing "B" on a bare
// number.  The result must be a non-negative whole number.
Result<int64_t> parse_human_readable_int(const std::string& text);

}  // namespace vllm::cli
