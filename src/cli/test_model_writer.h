// Writes a random-weight Hugging Face model directory (config.json,
// generation_config.json, safetensors, tokenizer files) for tests and
// benchmarks.  Weights: N(0, s), norms 1 + N(0, s) (s = 0.02 unless told), each tensor drawn
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
  // An EAGLE head (model/arch/eagle.h) of the preset's config instead of a
  // model: its tensors and config.json only (it uses its target's tokenizer).
  bool eagle_head = false;
  DType dtype = DType::kF32;
  uint64_t seed = 0;
  double stddev = 0.02;
  int num_shards = 1;
  std::string tokenizer_dir;  // tokenizer.json + tokenizer_config.json to adapt
  std::string out_dir;
};

Status write_test_model(const TestModelOptions& options, ThreadPool& pool);

// The config of a random EAGLE head for the model in `target_dir`: its
// config.json as a Llama of `num_layers` layers (EAGLE publishes one).
Result<TestModelPreset> eagle_head_preset(const std::string& target_dir, int64_t num_layers);

}  // namespace vllm
