// Picks the next token from one row of logits: greedy argmax or temperature
// sampling with the request's own random generator.
#pragma once

#include <cstdint>
#include <random>

#include "engine/sched/sampling_params.h"

namespace vllm {

// A request's generator: seeded requests are reproducible whatever else runs.
class RequestRng {
 public:
  explicit RequestRng(std::optional<uint64_t> seed);
  double uniform();  // in [0, 1)

 private:
  std::mt19937_64 engine_;
};

// Argmax; ties go to the lowest token id.
int32_t greedy_token(const float* logits, int32_t vocab_size);

int32_t sample_token(const float* logits, int32_t vocab_size, const SamplingParams& params, RequestRng& rng);

}  // namespace vllm
