// How the tokens of one request are chosen and when generation stops.
// (The sampling issue extends this with penalties, top-k/p, stop strings...)
#pragma once

#include <cstdint>
#include <optional>

#include "base/status.h"

namespace vllm {

struct SamplingParams {
  double temperature = 1.0;      // < 1e-5: greedy
  std::optional<uint64_t> seed;  // absent: non-deterministic
  int64_t max_tokens = 16;
  bool ignore_eos = false;

  Status validate() const;
  bool is_greedy() const { return temperature < 1e-5; }
};

}  // namespace vllm
