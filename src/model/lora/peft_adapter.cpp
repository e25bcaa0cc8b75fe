#include "model/lora/peft_adapter.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>

#include "base/file_util.h"
#include "base/json.h"
#include "base/thread_pool.h"
#include "model/loader/safetensors.h"
#include "model/lora/folded_shrink.h"
#include "model/model_config.h"
#include "tensor/dtype.h"

namespace vllm {
namespace {

constexpr char kConfigFile[] = "adapter_config.json";
constexpr char kTensorsFile[] = "adapter_model.safetensors";

// A tensor name as PEFT saves a LoRA weight: which module, which matrix.
struct LoraWeightName {
  std::string module;
  bool is_a = false;
  bool embedding = false;
};

// PEFT prefixes every key with its wrapper's path to the transformers model.
std::string_view without_peft_prefix(std::string_view key) {
  constexpr std::string_view kPrefix = "base_model.model.";
  return key.starts_with(kPrefix) ? key.substr(kPrefix.size()) : key;
}

std::optional<LoraWeightName> parse_lora_weight_name(std::string_view key) {
  struct Suffix {
    std::string_view text;
    bool is_a, embedding;
  };
  static constexpr Suffix kSuffixes[] = {{".lora_A.weight", true, false},
                                         {".lora_B.weight", false, false},
                                         {".lora_embedding_A", true, true},
                                         {".lora_embedding_B", false, true}};
  const std::string_view name = without_peft_prefix(key);
  for (const Suffix& s : kSuffixes) {
    if (name.size() > s.text.size() && name.ends_with(s.text)) {
      return LoraWeightName{std::string(name.substr(0, name.size() - s.text.size())), s.is_a, s.embedding};
    }
  }
  return std::nullopt;
}

// The base model's own weights PEFT copies into an adapter that changes an
// embedding ("model.embed_tokens.base_layer.weight"): not part of the adapter.
bool is_base_layer_copy(std::string_view key) { return key.find("base_layer") != std::string_view::npos; }

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// The config's fields an engine acts on, with every refusal vLLM makes of
// them, gathered into one message.
Status read_config(const Json& json, const std::string& source, int64_t max_lora_rank, PeftAdapter& adapter) {
  if (!json.is_object()) return invalid_argument(source + ": not a JSON object");
  std::set<std::string> missing;
  for (const char* key : {"r", "lora_alpha", "target_modules"}) {
    if (!json.contains(key)) missing.insert(key);
  }
  if (!missing.empty()) return invalid_argument(source + ": missing required configuration fields: " + joined(missing));
  const ConfigReader config(json, source);
  VLLM_ASSIGN_OR_RETURN(adapter.rank, config.positive_integer("r", std::nullopt));
  if (!json["lora_alpha"].is_number()) return config.error("lora_alpha", "must be a number");
  VLLM_ASSIGN_OR_RETURN(adapter.alpha, config.number("lora_alpha", 0));
  VLLM_ASSIGN_OR_RETURN(adapter.use_rslora, config.boolean("use_rslora", false));
  VLLM_ASSIGN_OR_RETURN(const bool use_dora, config.boolean("use_dora", false));
  VLLM_ASSIGN_OR_RETURN(const std::string bias, config.string("bias", "none"));
  const double rank = static_cast<double>(adapter.rank);
  adapter.scaling = static_cast<float>(adapter.use_rslora ? adapter.alpha / std::sqrt(rank) : adapter.alpha / rank);

  std::string refusals;
  auto refuse = [&](const std::string& why) { refusals += (refusals.empty() ? "" : " ") + why; };
  const bool saves_modules =
      config.present("modules_to_save") && !(json["modules_to_save"].is_array() && json["modules_to_save"].empty());
  if (saves_modules) refuse("modules_to_save must be null (whole modules saved beside the adapter are not served).");
  if (use_dora) refuse("DoRA (use_dora) is not supported.");
  if (adapter.rank > max_lora_rank) {
    refuse("LoRA rank " + std::to_string(adapter.rank) + " is greater than max_lora_rank " +
           std::to_string(max_lora_rank) + ".");
  }
  if (bias != "none") refuse("Adapter bias is not supported (bias \"" + bias + "\").");
  if (!refusals.empty()) return invalid_argument(source + ": " + refusals);
  return Status::ok();
}

// Checks one matrix of a module against the module's shape.
Status check_matrix(const std::string& key, const Tensor& t, const LoraWeightName& name, const LoraTarget& target,
                    int64_t max_lora_rank) {
  if (!is_float_dtype(t.dtype)) {
    return invalid_argument(key + ": a LoRA weight must be F32, F16 or BF16, found " + dtype_name(t.dtype));
  }
  if (t.rank() != 2)
    return invalid_argument(key + ": a LoRA weight has 2 dimensions, found " + shape_to_string(t.shape));
  const int64_t rank = name.is_a ? t.dim(0) : t.dim(1);
  const int64_t features = name.is_a ? t.dim(1) : t.dim(0);
  if (rank <= 0 || rank > max_lora_rank) {
    return invalid_argument(key + ": LoRA rank " + std::to_string(rank) + " is greater than max_lora_rank " +
                            std::to_string(max_lora_rank) + " (or not positive)");
  }
  const int64_t expected = name.is_a ? target.in_features : target.out_features;
  if (name.embedding && name.is_a && features != expected) {
    return invalid_argument(key + ": the embedding LoRA size (" + std::to_string(features) +
                            ") must be the base model's vocabulary size (" + std::to_string(expected) + ")");
  }
  if (features != expected) {
    return invalid_argument(key + ": shape " + shape_to_string(t.shape) + " does not fit " + name.module + " (" +
                            (name.is_a ? "in" : "out") + " features " + std::to_string(expected) + ")");
  }
  return Status::ok();
}

}  // namespace

DType lora_dtype(const ModelConfig& model) { return model.torch_dtype == "bfloat16" ? DType::kBF16 : DType::kF32; }

namespace {

std::shared_ptr<const kernels::PackedMatrix> packed(const std::vector<float>& values, int64_t rows, int64_t cols,
                                                    DType dtype, ThreadPool& pool) {
  if (dtype == DType::kF32) {
    return std::make_shared<const kernels::PackedMatrix>(
        kernels::pack_matrix(Tensor{values.data(), DType::kF32, {rows, cols}}, pool));
  }
  std::vector<uint16_t> bf16(values.size());
  for (size_t i = 0; i < values.size(); ++i) bf16[i] = f32_to_bf16(values[i]);
  return std::make_shared<const kernels::PackedMatrix>(
      kernels::pack_matrix(Tensor{bf16.data(), DType::kBF16, {rows, cols}}, pool));
}

}  // namespace

Result<PeftAdapter> load_peft_adapter(const std::string& dir, const LoraTargets& targets, int64_t max_lora_rank,
                                      DType dtype) {
  const std::string config_path = join_path(dir, kConfigFile);
  if (!file_exists(config_path)) return not_found("No adapter found for " + dir + " (no " + kConfigFile + ")");
  VLLM_ASSIGN_OR_RETURN(const Json config, read_json_file(config_path));
  PeftAdapter adapter;
  VLLM_RETURN_IF_ERROR(read_config(config, config_path, max_lora_rank, adapter));

  const std::string tensors_path = join_path(dir, kTensorsFile);
  if (!file_exists(tensors_path)) {
    for (const char* pickle : {"adapter_model.bin", "adapter_model.pt"}) {
      if (file_exists(join_path(dir, pickle))) {
        return invalid_argument(dir + ": " + pickle + " is a PyTorch pickle; only " + kTensorsFile +
                                " is read (save the adapter with safe_serialization=True)");
      }
    }
    return invalid_argument(dir + " doesn't contain tensors (no " + kTensorsFile + ")");
  }
  VLLM_ASSIGN_OR_RETURN(const SafetensorsFile file, SafetensorsFile::open(tensors_path));

  std::set<std::string> unexpected;
  for (const auto& [key, tensor] : file.tensors()) {
    if (is_base_layer_copy(key)) continue;
    const std::optional<LoraWeightName> name = parse_lora_weight_name(key);
    if (!name) return invalid_argument(tensors_path + ": " + key + " is unsupported LoRA weight");
    const auto target = targets.find(name->module);
    if (target == targets.end() || target->second.embedding != name->embedding) {
      unexpected.insert(name->module);
      continue;
    }
    VLLM_RETURN_IF_ERROR(check_matrix(key, tensor, *name, target->second, max_lora_rank).with_context(tensors_path));
    LoraModuleWeights& module = adapter.modules[name->module];
    (name->is_a ? module.a : module.b) = widened_values(tensor);
    const int64_t rank = name->is_a ? tensor.dim(0) : tensor.dim(1);
    if (module.rank != 0 && module.rank != rank) {
      return invalid_argument(tensors_path + ": " + name->module + "'s lora_A and lora_B have ranks " +
                              std::to_string(module.rank) + " and " + std::to_string(rank));
    }
    module.rank = rank;
  }
  if (!unexpected.empty()) {
    std::set<std::string> adaptable;
    for (const auto& [module, target] : targets) {
      const size_t dot = module.rfind('.');
      adaptable.insert(dot == std::string::npos ? module : module.substr(dot + 1));
    }
    return invalid_argument("While loading " + dir + ", expected target modules in [" + joined(adaptable) +
                            "] but received [" + joined(unexpected) +
                            "]: the base model has no such module, or none an adapter can change");
  }
  for (const auto& [name, module] : adapter.modules) {
    if (module.a.empty() || module.b.empty()) {
      return invalid_argument(tensors_path + ": " + name + " has only its lora_" + (module.a.empty() ? "B" : "A") +
                              " matrix");
    }
  }
  pack_adapter(adapter, targets, dtype);
  return adapter;
}

void pack_adapter(PeftAdapter& adapter, const LoraTargets& targets, DType dtype) {
  ThreadPool serial(1);  // on the reading thread: the engine's threads run steps meanwhile
  for (auto& [name, module] : adapter.modules) {
    const LoraTarget& target = targets.at(name);
    if (target.embedding) continue;
    const int64_t in = target.cols.size_of(target.in_features), out = target.rows.size_of(target.out_features);
    std::vector<float> a(static_cast<size_t>(module.rank * in));  // A's columns of the rank's inputs
    for (int64_t r = 0; r < module.rank; ++r) {
      std::copy_n(module.a.begin() + r * target.in_features + target.cols.first, in, a.begin() + r * in);
    }
    const std::vector<float> all_b = module.scaled_b(adapter.scaling);  // its rows of the rank's outputs
    const std::vector<float> b(all_b.begin() + target.rows.first * module.rank,
                               all_b.begin() + (target.rows.first + out) * module.rank);
    module.shrink_fold = shrink_fold(module.rank, in);
    module.packed_a = packed(fold_lora_a(a, module.rank, in, module.shrink_fold), module.shrink_fold * module.rank,
                             in / module.shrink_fold, dtype, serial);
    module.packed_scaled_b = packed(b, out, module.rank, dtype, serial);
  }
}

}  // namespace vllm
