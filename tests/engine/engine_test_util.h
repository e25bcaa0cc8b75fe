// Models and workloads for the engine tests that run a real forward pass:
// the embedded stories260k and a tiny random-weight Llama written on the fly.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/test_model_writer.h"
#include "engine/llm_engine.h"
#include "model/loader/safetensors.h"
#include "model/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace vllm::testing {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

inline LoadedModel load_model(const std::string& dir) {
  LoadedModel m;
  m.model = std::move(vllm::load_model(dir)).value();
  m.tokenizer = std::move(Tokenizer::load(dir)).value();
  return m;
}

// A tiny random model of `arch` (vocab 512, context 256) with the stories260k tokenizer.
inline void write_tiny_model(const std::string& dir, const std::string& arch = "llama") {
  TestModelOptions options;
  options.preset = std::move(find_test_model_preset("tiny", arch)).value();
  options.dtype = DType::kBF16;
  options.seed = 7;
  options.tokenizer_dir = model_dir();
  options.out_dir = dir;
  ThreadPool pool(1);
  const Status s = write_test_model(options, pool);
  ASSERT_TRUE(s.is_ok()) << s.message();
}

inline std::unique_ptr<LLMEngine> make_engine(LoadedModel& m, EngineConfig config = {}) {
  if (config.num_threads == 1) config.num_threads = 2;
  Result<std::unique_ptr<LLMEngine>> engine = LLMEngine::create(*m.model, *m.tokenizer, config);
  EXPECT_TRUE(engine.is_ok()) << engine.status().message();
  return std::move(engine).value();
}

// An engine with a token budget and a KV pool of exactly `num_blocks` blocks of 16 tokens.
inline EngineConfig small_engine(const LoadedModel& m, int32_t budget, int32_t num_blocks) {
  EngineConfig config;
  config.scheduler.max_num_batched_tokens = budget;
  const KVCacheShape shape{m.model->kv_cache_spec(), 16};
  config.cache.kv_cache_memory_bytes = static_cast<int64_t>(shape.bytes_per_block()) * num_blocks;
  return config;
}

// Random token ids in [3, vocab): never BOS/EOS/unk.
inline std::vector<int32_t> random_tokens(std::mt19937& rng, int32_t n, int32_t vocab) {
  std::uniform_int_distribution<int32_t> dist(3, vocab - 1);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = dist(rng);
  return ids;
}

inline SamplingParams greedy(int64_t max_tokens, bool ignore_eos = true) {
  SamplingParams p;
  p.temperature = 0.0;
  p.max_tokens = max_tokens;
  p.ignore_eos = ignore_eos;
  return p;
}

// The directory of a model by name: "stories260k", or "tiny_" and an
// architecture make-test-model knows (written to `dir`).
inline std::string named_model_dir(const std::string& name, const TempDir& dir) {
  if (name == "stories260k") return model_dir();
  write_tiny_model(dir.path(), name.substr(std::string("tiny_").size()));
  return dir.path();
}

// Speculative decoding with the draft model (or EAGLE head) in `dir`, k guesses, at every batch size.
inline SpeculativeConfig draft_model_config(const std::string& dir, int32_t k,
                                            SpeculativeMethod method = SpeculativeMethod::kDraftModel) {
  SpeculativeConfig c;
  c.method = method;
  c.model = dir;
  c.num_speculative_tokens = k;
  c.disable_by_batch_size = 0;
  return c;
}

// A random EAGLE (or EAGLE-3) head of one layer for the model in `target`,
// written to `dir`, its weights N(0, stddev).
inline void write_eagle_head(const std::string& target, const std::string& dir, double stddev = 0.02,
                             bool eagle3 = false) {
  TestModelOptions options;
  options.preset = std::move(eagle_head_preset(target, 1, eagle3)).value();
  options.kind = eagle3 ? TestModelOptions::Kind::kEagle3Head : TestModelOptions::Kind::kEagleHead;
  options.seed = 3;
  options.stddev = stddev;
  options.out_dir = dir;
  ThreadPool pool(1);
  const Status s = write_test_model(options, pool);
  ASSERT_TRUE(s.is_ok()) << s.message();
}

// An EAGLE head for the model in `target` whose output is the target's hidden
// state it reads (fc = [0 | I], o_proj and down_proj zero): its logits are
// the target's at the row's position, so every guess is the newest token
// (the target's argmax there), whatever the positions and the cache hold.
inline void write_pass_through_eagle_head(const std::string& target, const std::string& dir) {
  write_eagle_head(target, dir);
  const ModelConfig c = std::move(load_model_config(dir)).value();
  const int64_t h = c.hidden_size;
  std::vector<TensorToWrite> tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, auto value) {
    TensorToWrite& t = tensors.emplace_back(TensorToWrite{name, DType::kF32, shape, {}});
    const int64_t n = shape.size() == 1 ? shape[0] : shape[0] * shape[1];
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(i / shape.back(), i % shape.back());
    t.bytes.resize(v.size() * sizeof(float));
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  };
  auto zero = [](int64_t, int64_t) { return 0.0f; };
  add("fc.weight", {h, 2 * h}, [h](int64_t r, int64_t col) { return col == h + r ? 1.0f : 0.0f; });
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  add("layers.0.self_attn.q_proj.weight", {q, h}, zero);
  add("layers.0.self_attn.k_proj.weight", {kv, h}, zero);
  add("layers.0.self_attn.v_proj.weight", {kv, h}, zero);
  add("layers.0.self_attn.o_proj.weight", {h, q}, zero);
  add("layers.0.mlp.gate_proj.weight", {c.intermediate_size, h}, zero);
  add("layers.0.mlp.up_proj.weight", {c.intermediate_size, h}, zero);
  add("layers.0.mlp.down_proj.weight", {h, c.intermediate_size}, zero);
  add("layers.0.post_attention_layernorm.weight", {h}, [](int64_t, int64_t) { return 1.0f; });
  const Status s = write_safetensors(dir + "/model.safetensors", tensors);
  ASSERT_TRUE(s.is_ok()) << s.message();
}

// Tests over a model named by their parameter (named_model_dir).
class NamedModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  LoadedModel load() { return load_model(named_model_dir(GetParam(), dir_)); }

  TempDir dir_;
};

// 64 greedy requests of mixed lengths, a third of them sharing a prefix.
inline std::vector<std::pair<PromptInput, SamplingParams>> mixed_workload(int32_t vocab) {
  std::mt19937 rng(1234);
  const std::vector<int32_t> shared = random_tokens(rng, 40, vocab);
  std::vector<std::pair<PromptInput, SamplingParams>> work;
  for (int i = 0; i < 64; ++i) {
    std::vector<int32_t> prompt = random_tokens(rng, 1 + static_cast<int32_t>(rng() % 100), vocab);
    if (i % 3 == 0) prompt.insert(prompt.begin(), shared.begin(), shared.end());
    work.emplace_back(PromptInput::from_token_ids(prompt), greedy(5 + static_cast<int64_t>(rng() % 36)));
  }
  return work;
}

}  // namespace vllm::testing
