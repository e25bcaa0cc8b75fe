// Loading a model directory: every way it can be broken gives one clear
// message naming the file or tensor, never a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/json.h"
#include "base/thread_pool.h"
#include "cli/test_model_writer.h"
#include "model/loader/safetensors.h"
#include "model/model.h"
#include "test_util.h"

namespace vllm {
namespace {

using testing::copy_model;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

std::string load_error(const std::string& dir) {
  Result<std::unique_ptr<Model>> m = load_model(dir);
  EXPECT_FALSE(m.is_ok());
  return m.is_ok() ? "" : m.status().message();
}

// Rewrites model.safetensors of `dir` through `edit` (on the parsed tensors).
template <typename Edit>
void rewrite_weights(const std::string& dir, Edit edit) {
  std::vector<TensorToWrite> tensors;
  {
    Result<SafetensorsFile> f = SafetensorsFile::open(dir + "/model.safetensors");
    ASSERT_TRUE(f.is_ok());
    for (const auto& [name, t] : f->tensors()) {
      const auto* p = static_cast<const uint8_t*>(t.data);
      tensors.push_back({name, t.dtype, t.shape, std::vector<uint8_t>(p, p + t.size_bytes())});
    }
  }
  edit(tensors);
  ASSERT_TRUE(write_safetensors(dir + "/model.safetensors", tensors).is_ok());
}

TEST(ModelLoadingTest, LoadsTheEmbeddedModel) {
  Result<std::unique_ptr<Model>> m = load_model(testing::model_dir());
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ((*m)->config().num_hidden_layers, 5);
  EXPECT_EQ((*m)->config().head_dim, 8);
  EXPECT_TRUE((*m)->config().tie_word_embeddings);
}

TEST(ModelLoadingTest, MissingDirectory) {
  EXPECT_EQ(load_error("/nonexistent/model"), "/nonexistent/model: model directory not found");
}

TEST(ModelLoadingTest, MissingConfig) {
  TempDir dir;
  copy_model(dir.path());
  std::filesystem::remove(dir.file("config.json"));
  EXPECT_EQ(load_error(dir.path()), dir.file("config.json") + ": file not found");
}

TEST(ModelLoadingTest, MissingWeights) {
  TempDir dir;
  copy_model(dir.path());
  std::filesystem::remove(dir.file("model.safetensors"));
  EXPECT_EQ(load_error(dir.path()),
            dir.path() + ": no model weights: expected model.safetensors or model.safetensors.index.json");
}

TEST(ModelLoadingTest, TruncatedWeights) {
  TempDir dir;
  copy_model(dir.path());
  const std::string bytes = read_file(dir.file("model.safetensors"));
  write_file(dir.file("model.safetensors"), bytes.substr(0, bytes.size() / 2));
  const std::string msg = load_error(dir.path());
  EXPECT_NE(msg.find(dir.file("model.safetensors") + ": tensor '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(truncated?)"), std::string::npos) << msg;
}

TEST(ModelLoadingTest, MissingTensorIsNamed) {
  TempDir dir;
  copy_model(dir.path());
  rewrite_weights(dir.path(), [](std::vector<TensorToWrite>& ts) {
    std::erase_if(ts, [](const TensorToWrite& t) { return t.name == "model.layers.3.mlp.up_proj.weight"; });
  });
  EXPECT_EQ(load_error(dir.path()),
            dir.file("model.safetensors") + ": missing tensor 'model.layers.3.mlp.up_proj.weight'");
}

// A tiny random model of make-test-model's `arch` in `dir`.
void write_tiny(const TempDir& dir, const std::string& arch) {
  TestModelOptions options;
  options.preset = std::move(find_test_model_preset("tiny", arch)).value();
  options.tokenizer_dir = testing::model_dir();
  options.out_dir = dir.path();
  ThreadPool pool(1);
  ASSERT_TRUE(write_test_model(options, pool).is_ok());
}

TEST(ModelLoadingTest, MixtureOfExpertsNamesAMissingExpertTensorOrABadField) {
  TempDir dir;
  write_tiny(dir, "qwen2_moe");  // 8 experts, top 4, a shared expert
  rewrite_weights(dir.path(), [](std::vector<TensorToWrite>& ts) {
    std::erase_if(ts, [](const TensorToWrite& t) { return t.name == "model.layers.2.mlp.experts.5.down_proj.weight"; });
  });
  EXPECT_EQ(load_error(dir.path()),
            dir.file("model.safetensors") + ": missing tensor 'model.layers.2.mlp.experts.5.down_proj.weight'");
  Json config = Json::parse(read_file(dir.file("config.json")));
  config["num_experts_per_tok"] = 9;
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()),
            dir.file("config.json") + ": field 'num_experts_per_tok' is 9, more than the 8 experts");
  config["num_experts"] = "eight";
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()),
            dir.file("config.json") + ": field 'num_experts' must be an integer, found \"eight\"");
}

// A LayerNorm reads its bias as well; StableLM's variants we lack are refused by name.
TEST(ModelLoadingTest, StableLmNamesAMissingNormBiasOrAnUnsupportedVariant) {
  TempDir dir;
  write_tiny(dir, "stablelm");
  Json config = Json::parse(read_file(dir.file("config.json")));
  for (const char* field : {"use_parallel_residual", "qk_layernorm"}) {
    Json variant = config;
    variant[field] = true;
    write_file(dir.file("config.json"), variant.dump());
    EXPECT_EQ(load_error(dir.path()),
              dir.file("config.json") + ": field '" + field + "' true is not supported for StableLM");
  }
  write_file(dir.file("config.json"), config.dump());
  rewrite_weights(dir.path(), [](std::vector<TensorToWrite>& ts) {
    std::erase_if(ts, [](const TensorToWrite& t) { return t.name == "model.layers.1.post_attention_layernorm.bias"; });
  });
  EXPECT_EQ(load_error(dir.path()),
            dir.file("model.safetensors") + ": missing tensor 'model.layers.1.post_attention_layernorm.bias'");
}

TEST(ModelLoadingTest, DeepseekNamesAMissingLatentTensorABadShapeOrAnUnsupportedField) {
  TempDir dir;
  write_tiny(dir, "deepseek_v2");
  const std::string config_text = read_file(dir.file("config.json"));
  Json config = Json::parse(config_text);
  config["kv_lora_rank"] = 16;
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()), dir.file("model.safetensors") +
                                        ": tensor 'model.layers.0.self_attn.kv_a_proj_with_mqa.weight': expected "
                                        "shape [24, 64] from config.json, found [40, 64]");
  config = Json::parse(config_text);
  config["topk_method"] = "noaux_tc";
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()), dir.file("config.json") +
                                        ": field 'topk_method' 'noaux_tc' is not supported (greedy, "
                                        "group_limited_greedy)");
  config = Json::parse(config_text);
  config["attention_bias"] = true;
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()),
            dir.file("config.json") + ": field 'attention_bias' true is not supported (no DeepSeek checkpoint has it)");
  write_file(dir.file("config.json"), config_text);
  rewrite_weights(dir.path(), [](std::vector<TensorToWrite>& ts) {
    std::erase_if(ts, [](const TensorToWrite& t) { return t.name == "model.layers.1.self_attn.kv_b_proj.weight"; });
  });
  EXPECT_EQ(load_error(dir.path()),
            dir.file("model.safetensors") + ": missing tensor 'model.layers.1.self_attn.kv_b_proj.weight'");
}

// DeepSeek-V3 checkpoints carry their multi-token-prediction layer as
// model.layers.<num_hidden_layers>: it is not run, and its tensors are not read.
TEST(ModelLoadingTest, DeepseekV3SkipsTheMultiTokenPredictionLayer) {
  TempDir dir;
  write_tiny(dir, "deepseek_v3");
  Result<std::unique_ptr<Model>> plain = load_model(dir.path());
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  rewrite_weights(dir.path(), [](std::vector<TensorToWrite>& ts) {
    const std::vector<TensorToWrite> layer0(ts.begin(), ts.end());
    for (const TensorToWrite& t : layer0) {
      if (t.name.starts_with("model.layers.0.")) {
        TensorToWrite mtp = t;
        mtp.name = "model.layers.3." + t.name.substr(std::string("model.layers.0.").size());
        ts.push_back(mtp);
      }
    }
    ts.push_back({"model.layers.3.eh_proj.weight", DType::kF32, {64, 128}, std::vector<uint8_t>(64 * 128 * 4)});
  });
  Result<std::unique_ptr<Model>> with_mtp = load_model(dir.path());
  ASSERT_TRUE(with_mtp.is_ok()) << with_mtp.status().message();
  // Every layer caches one latent row per token: kv_lora_rank 32 + qk_rope_head_dim 8.
  ASSERT_EQ((*with_mtp)->kv_cache_spec().size(), 3u);
  for (const LayerKVSpec& layer : (*with_mtp)->kv_cache_spec()) {
    EXPECT_TRUE(layer.latent);
    EXPECT_EQ(layer.num_kv_heads, 1);
    EXPECT_EQ(layer.head_dim, 40);
    EXPECT_EQ(layer.elements_per_token(), 40);
  }
  EXPECT_EQ((*with_mtp)->cost().weight_bytes, (*plain)->cost().weight_bytes);
}

// Each real shape is written as its own architecture (the tiny one's).
TEST(ModelLoadingTest, EveryRealPresetIsItsArchitecture) {
  for (const std::string& name : test_model_preset_names()) {
    if (name == "tiny") continue;
    Result<TestModelPreset> real = find_test_model_preset(name, std::nullopt);
    ASSERT_TRUE(real.is_ok()) << name;
    Result<TestModelPreset> tiny = find_test_model_preset("tiny", real->arch);
    ASSERT_TRUE(tiny.is_ok()) << name;
    EXPECT_EQ(real->config["architectures"], tiny->config["architectures"]) << name;
    EXPECT_EQ(real->config["model_type"], tiny->config["model_type"]) << name;
  }
}

// A decode step of a batch reads each routed expert some token chose once:
// with tokens routed evenly, 1 - (1 - top_k / n)^batch of them.
TEST(ModelLoadingTest, CostCountsTheRoutedExpertsABatchReads) {
  TempDir dir;
  write_tiny(dir, "qwen2_moe");  // layers 0 and 2 mixtures of 8 experts, top 4, a shared expert
  Result<std::unique_ptr<Model>> moe = load_model(dir.path());
  ASSERT_TRUE(moe.is_ok()) << moe.status().message();
  const ModelCost cost = (*moe)->cost();
  // 2 layers of 8 experts, each gate, up [32, 64] and down [64, 32] in float32.
  EXPECT_EQ(cost.routed_expert_bytes, 2 * 8 * 3 * 32 * 64 * 4.0);
  EXPECT_EQ(cost.routed_fraction, 0.5);
  const double dense = cost.weight_bytes - cost.routed_expert_bytes / 2;
  EXPECT_GT(dense, 0);
  EXPECT_DOUBLE_EQ(cost.step_weight_bytes(1), cost.weight_bytes);
  EXPECT_DOUBLE_EQ(cost.step_weight_bytes(2), dense + cost.routed_expert_bytes * 0.75);
  EXPECT_NEAR(cost.step_weight_bytes(64), dense + cost.routed_expert_bytes, 1.0);

  Result<std::unique_ptr<Model>> plain = load_model(testing::model_dir());
  ASSERT_TRUE(plain.is_ok());
  EXPECT_EQ((*plain)->cost().routed_expert_bytes, 0);
  EXPECT_EQ((*plain)->cost().step_weight_bytes(16), (*plain)->cost().weight_bytes);
}

TEST(ModelLoadingTest, ShapeMismatchNamesTensorExpectedAndFound) {
  TempDir dir;
  copy_model(dir.path());
  rewrite_weights(dir.path(), [](std::vector<TensorToWrite>& ts) {
    for (auto& t : ts) {
      if (t.name == "model.layers.0.self_attn.k_proj.weight") {
        t.shape = {64, 32};  // same bytes, wrong shape
      }
    }
  });
  EXPECT_EQ(load_error(dir.path()), dir.file("model.safetensors") +
                                        ": tensor 'model.layers.0.self_attn.k_proj.weight': expected shape [32, 64] "
                                        "from config.json, found [64, 32]");
}

TEST(ModelLoadingTest, NonFloatDtypeIsRejected) {
  TempDir dir;
  copy_model(dir.path());
  rewrite_weights(dir.path(), [](std::vector<TensorToWrite>& ts) {
    for (auto& t : ts) {
      if (t.name == "model.norm.weight") t.dtype = DType::kI32;
    }
  });
  EXPECT_EQ(load_error(dir.path()), dir.file("model.safetensors") +
                                        ": tensor 'model.norm.weight': dtype I32 is not a float type (F32, BF16, F16)");
}

TEST(ModelLoadingTest, UnsupportedArchitectureListsSupportedOnes) {
  TempDir dir;
  copy_model(dir.path());
  Json config = Json::parse(read_file(dir.file("config.json")));
  config["architectures"] = {"GPT2LMHeadModel"};
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()), dir.file("config.json") +
                                        ": unsupported architecture 'GPT2LMHeadModel'; supported: LlamaForCausalLM, "
                                        "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, "
                                        "Gemma3ForCausalLM, Phi3ForCausalLM, GraniteForCausalLM, StableLmForCausalLM, "
                                        "MixtralForCausalLM, "
                                        "Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, OlmoeForCausalLM, "
                                        "DeepseekV2ForCausalLM, DeepseekV3ForCausalLM");
}

TEST(ModelLoadingTest, MalformedConfigJson) {
  TempDir dir;
  copy_model(dir.path());
  write_file(dir.file("config.json"), "{\"architectures\": [");
  EXPECT_NE(load_error(dir.path()).find(dir.file("config.json") + ": not valid JSON"), std::string::npos);
}

TEST(ModelLoadingTest, WrongFieldTypeInConfig) {
  TempDir dir;
  copy_model(dir.path());
  Json config = Json::parse(read_file(dir.file("config.json")));
  config["num_hidden_layers"] = "five";
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()),
            dir.file("config.json") + ": field 'num_hidden_layers' must be an integer, found \"five\"");
}

// Counts in config.json are checked against the tensors before anything is
// sized from them: a billion layers is an error line, not a failed allocation.
TEST(ModelLoadingTest, ConfigCountsBeyondTheTensorsAreOneError) {
  TempDir dir;
  copy_model(dir.path());
  const Json original = Json::parse(read_file(dir.file("config.json")));
  Json config = original;
  config["num_hidden_layers"] = 1000000000;
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()), dir.file("config.json") + ": num_hidden_layers is 1000000000 but " +
                                        dir.file("model.safetensors") + " has tensors for 5 layers");
  config = original;
  config["vocab_size"] = int64_t{1} << 40;
  write_file(dir.file("config.json"), config.dump());
  EXPECT_EQ(load_error(dir.path()), dir.file("model.safetensors") +
                                        ": tensor 'model.embed_tokens.weight': expected shape [1099511627776, 64] "
                                        "from config.json, found [512, 64]");
  config = original;
  config["hidden_size"] = 1 << 30;
  config["head_dim"] = 8;
  write_file(dir.file("config.json"), config.dump());
  const std::string msg = load_error(dir.path());
  EXPECT_TRUE(msg.starts_with(dir.file("model.safetensors") + ": tensor 'model.embed_tokens.weight': expected shape"))
      << msg;
}

TEST(ModelLoadingTest, ShardedCheckpointNamesMissingShard) {
  TempDir dir;
  copy_model(dir.path());
  std::filesystem::remove(dir.file("model.safetensors"));
  write_file(dir.file("model.safetensors.index.json"),
             R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors"}})");
  EXPECT_EQ(load_error(dir.path()), dir.file("model-00001-of-00002.safetensors") + ": file not found");
}

}  // namespace
}  // namespace vllm
