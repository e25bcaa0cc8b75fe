#include "cli/test_model_writer.h"

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/file_util.h"
#include "base/json.h"
#include "model/arch/eagle.h"
#include "model/arch/eagle3.h"
#include "model/loader/safetensors.h"
#include "model/registry.h"

namespace vllm {
namespace {

constexpr int64_t kValuesPerChunk = 1 << 20;

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Box-Muller normals; chunk c of a tensor has its own generator so chunks can
// be drawn in parallel with the same result.
void fill_chunk(uint64_t seed, float mean, double stddev, float* out, int64_t n) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; };
  for (int64_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    const double theta = 2.0 * M_PI * uniform();
    out[i] = static_cast<float>(mean + stddev * r * std::cos(theta));
    if (i + 1 < n) out[i + 1] = static_cast<float>(mean + stddev * r * std::sin(theta));
  }
}

TensorToWrite random_tensor(const WeightSpec& spec, DType dtype, uint64_t seed, double stddev, ThreadPool& pool) {
  TensorToWrite t;
  t.name = spec.name;
  t.dtype = dtype;
  t.shape = spec.shape;
  int64_t n = 1;
  for (int64_t d : spec.shape) n *= d;
  t.bytes.resize(static_cast<size_t>(n) * dtype_size(dtype));
  const float mean = spec.kind == WeightKind::kNorm ? 1.0f : 0.0f;
  const uint64_t tensor_seed = mix(seed ^ fnv1a(spec.name));
  const int64_t num_chunks = (n + kValuesPerChunk - 1) / kValuesPerChunk;
  pool.parallel_for(num_chunks, [&](int64_t begin, int64_t end) {
    std::vector<float> values(static_cast<size_t>(kValuesPerChunk));
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * kValuesPerChunk;
      const int64_t count = std::min(kValuesPerChunk, n - first);
      fill_chunk(mix(tensor_seed + static_cast<uint64_t>(c)), mean, stddev, values.data(), count);
      for (int64_t i = 0; i < count; ++i) {
        const float v = values[static_cast<size_t>(i)];
        uint8_t* dst = t.bytes.data() + static_cast<size_t>(first + i) * dtype_size(dtype);
        if (dtype == DType::kF32) {
          std::memcpy(dst, &v, 4);
        } else {
          const uint16_t h = dtype == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v);
          std::memcpy(dst, &h, 2);
        }
      }
    }
  });
  return t;
}

const char* torch_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return "bfloat16";
    case DType::kF16:
      return "float16";
    default:
      return "float32";
  }
}

Result<std::vector<WeightSpec>> weight_specs(TestModelOptions::Kind kind, const ModelConfig& config) {
  switch (kind) {
    case TestModelOptions::Kind::kEagleHead:
      return eagle_head_weight_specs(config);
    case TestModelOptions::Kind::kEagle3Head:
      return eagle3_head_weight_specs(config);
    default:
      return model_weight_specs(config);
  }
}

// An EAGLE-3 head's d2t: draft token d is target token 2d.
Result<TensorToWrite> every_other_token(const ModelConfig& config) {
  VLLM_ASSIGN_OR_RETURN(const int64_t draft_vocab, eagle3_draft_vocab_size(config));
  TensorToWrite t{"d2t", DType::kI64, {draft_vocab}, {}};
  std::vector<int64_t> offsets(static_cast<size_t>(draft_vocab));
  for (int64_t d = 0; d < draft_vocab; ++d) offsets[static_cast<size_t>(d)] = d;
  t.bytes.resize(offsets.size() * sizeof(int64_t));
  std::memcpy(t.bytes.data(), offsets.data(), t.bytes.size());
  return t;
}

Status write_weights(const TestModelOptions& o, const ModelConfig& config, ThreadPool& pool) {
  VLLM_ASSIGN_OR_RETURN(const std::vector<WeightSpec> specs, weight_specs(o.kind, config));
  const int shards = std::max(1, std::min<int>(o.num_shards, static_cast<int>(specs.size())));
  if (shards == 1) {
    std::vector<TensorToWrite> tensors;
    for (const WeightSpec& s : specs) tensors.push_back(random_tensor(s, o.dtype, o.seed, o.stddev, pool));
    if (o.kind == TestModelOptions::Kind::kEagle3Head) {
      VLLM_ASSIGN_OR_RETURN(TensorToWrite d2t, every_other_token(config));
      tensors.push_back(std::move(d2t));
    }
    return write_safetensors(join_path(o.out_dir, "model.safetensors"), tensors);
  }
  Json weight_map = Json::object();
  for (int shard = 0; shard < shards; ++shard) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", shard + 1, shards);
    std::vector<TensorToWrite> tensors;
    for (size_t i = static_cast<size_t>(shard); i < specs.size(); i += static_cast<size_t>(shards)) {
      tensors.push_back(random_tensor(specs[i], o.dtype, o.seed, o.stddev, pool));
      weight_map[specs[i].name] = name;
    }
    VLLM_RETURN_IF_ERROR(write_safetensors(join_path(o.out_dir, name), tensors));
  }
  const Json index = {{"metadata", Json::object()}, {"weight_map", weight_map}};
  return write_text_file(join_path(o.out_dir, "model.safetensors.index.json"), index.dump(2));
}

// The base tokenizer, its vocabulary padded with "<extra_N>" pieces (which no
// merge produces) up to the model's vocab_size.
Status write_tokenizer(const TestModelOptions& o, int64_t vocab_size) {
  VLLM_ASSIGN_OR_RETURN(Json tokenizer, read_json_file(join_path(o.tokenizer_dir, "tokenizer.json")));
  if (!tokenizer.is_object() || !tokenizer.contains("model") || !tokenizer["model"].contains("vocab")) {
    return invalid_argument(o.tokenizer_dir + "/tokenizer.json: expected a BPE model with a vocab");
  }
  Json& vocab = tokenizer["model"]["vocab"];
  const auto base_size = static_cast<int64_t>(vocab.size());
  if (vocab_size < base_size) {
    return invalid_argument("vocab_size " + std::to_string(vocab_size) + " is smaller than the base tokenizer's " +
                            std::to_string(base_size));
  }
  for (int64_t id = base_size; id < vocab_size; ++id) vocab["<extra_" + std::to_string(id - base_size) + ">"] = id;
  VLLM_RETURN_IF_ERROR(write_text_file(join_path(o.out_dir, "tokenizer.json"), tokenizer.dump()));
  VLLM_ASSIGN_OR_RETURN(std::string config, read_text_file(join_path(o.tokenizer_dir, "tokenizer_config.json")));
  return write_text_file(join_path(o.out_dir, "tokenizer_config.json"), config);
}

}  // namespace

Status write_test_model(const TestModelOptions& o, ThreadPool& pool) {
  if (!directory_exists(o.out_dir) && mkdir(o.out_dir.c_str(), 0755) != 0) {
    return invalid_argument(o.out_dir + ": cannot create directory: " + std::strerror(errno));
  }
  Json config = o.preset.config;
  config["torch_dtype"] = torch_dtype_name(o.dtype);
  const std::string config_path = join_path(o.out_dir, "config.json");
  VLLM_ASSIGN_OR_RETURN(ModelConfig parsed, parse_model_config(config, config_path));
  VLLM_RETURN_IF_ERROR(write_text_file(config_path, config.dump(2)));
  if (o.kind != TestModelOptions::Kind::kModel) return write_weights(o, parsed, pool);
  const Json generation = {{"bos_token_id", config["bos_token_id"]}, {"eos_token_id", config["eos_token_id"]}};
  VLLM_RETURN_IF_ERROR(write_text_file(join_path(o.out_dir, "generation_config.json"), generation.dump(2)));
  VLLM_RETURN_IF_ERROR(write_tokenizer(o, parsed.vocab_size));
  return write_weights(o, parsed, pool);
}

Result<TestModelPreset> eagle_head_preset(const std::string& target_dir, int64_t num_layers, bool eagle3) {
  VLLM_ASSIGN_OR_RETURN(Json config, read_json_file(join_path(target_dir, "config.json")));
  if (eagle3) {
    const int64_t layers = config.value("num_hidden_layers", int64_t{0});
    if (layers < 4) config["eagle_aux_hidden_state_layer_ids"] = Json::array({0, layers / 2, layers - 1});
    config["draft_vocab_size"] = config.value("vocab_size", int64_t{0}) / 2;
    config["architectures"] = Json::array({"LlamaForCausalLMEagle3"});
    config["model_type"] = "llama";
    config["num_hidden_layers"] = 1;
    config["attention_bias"] = false;
    config["tie_word_embeddings"] = false;
    config.erase("torch_dtype");
    return TestModelPreset{"eagle3-head", "llama", std::move(config)};
  }
  config["architectures"] = Json::array({"LlamaForCausalLM"});
  config["model_type"] = "llama";
  config["num_hidden_layers"] = num_layers;
  config["bias"] = false;  // no fc.bias (EAGLE's loader reads this key)
  config["attention_bias"] = false;
  config.erase("torch_dtype");
  return TestModelPreset{"eagle-head", "llama", std::move(config)};
}

}  // namespace vllm
