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
  // An EAGLE or EAGLE-3 head (model/arch/eagle.h, eagle3.h) of the preset's
  // config instead of a model: its tensors and config.json only (it uses its
  // target's tokenizer); an EAGLE-3 head's d2t maps draft token d to target
  // token 2d.
  enum class Kind { kModel, kEagleHead, kEagle3Head } kind = Kind::kModel;
  DType dtype = DType::kF32;
  uint64_t seed = 0;
  double stddev = 0.02;
  int num_shards = 1;
  std::string tokenizer_dir;  // tokenizer.json + tokenizer_config.json to adapt
  std::string out_dir;
};

Status write_test_model(const TestModelOptions& options, ThreadPool& pool);

// The config of a random EAGLE head for the model in `target_dir`: its
// config.json as a Llama of `num_layers` layers (EAGLE publishes one); for
// an EAGLE-3 head, of one layer, with half the target's vocabulary as its
// own and, for a target of fewer than 4 layers (which has no default), the
// auxiliary layers 0, L / 2 and L - 1.
Result<TestModelPreset> eagle_head_preset(const std::string& target_dir, int64_t num_layers, bool eagle3 = false);

}  // namespace vllm
