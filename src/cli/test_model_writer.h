// Writes a random-weight Hugging Face model directory (config.json,
// generation_config.json, safetensors, tokenizer files) for tests and
// benchmarks.  Weights: N(0, 0.02), norms 1 + N(0, 0.02), each tensor drawn
// from its own generator seeded by (seed, tensor name), so the values do not
// depend on the order of writing, the shard layout or the thread count.
#pragma once

#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "cli/test_model_presets.h"
#include "tensor/dtype.h"

namespace vllm {

struct TestModelOptions {
  TestModelPreset preset;
  DType dtype = DType::kF32;
  uint64_t seed = 0;
  int num_shards = 1;
  std::string tokenizer_dir;  // tokenizer.json + tokenizer_config.json to adapt
  std::string out_dir;
};

Status write_test_model(const TestModelOptions& options, ThreadPool& pool);

}  // namespace vllm
