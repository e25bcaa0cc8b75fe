// How the tokens of one request are chosen and when generation stops.
// (The sampling issue extends this with penalties, top-k/p, stop strings...)
#pragma once

#include <cstdint>
#include <optional>

#include "base/status.h"

namespace vllm {

// How a request's outputs are reported step by step (vLLM's RequestOutputKind).
enum class OutputKind {
  kCumulative,  // each output carries everything generated so far
  kDelta,       // each output carries only what this step added (streaming)
  kFinalOnly,   // one output, when the request finishes
};

struct SamplingParams {
  double temperature = 1.0;      // < 1e-5: greedy
  std::optional<uint64_t> seed;  // absent: non-deterministic
  int64_t max_tokens = 16;
  bool ignore_eos = false;
  OutputKind output_kind = OutputKind::kCumulative;

  Status validate() const;
  bool is_greedy() const { return temperature < 1e-5; }
};

}  // namespace vllm
