#include "model/registry.h"

#include "base/thread_pool.h"
#include "model/loader/checkpoint.h"
#include "model/loader/gguf_checkpoint.h"
#include "model/quant/quant_method.h"

namespace vllm {
namespace {

struct Entry {
  const char* architecture;
  ArchitectureBuilder build;
};

constexpr Entry kRegistry[] = {
    {"LlamaForCausalLM", build_llama},
    {"MistralForCausalLM", build_mistral},
    {"Qwen2ForCausalLM", build_qwen2},
    {"Qwen3ForCausalLM", build_qwen3},
    {"Gemma2ForCausalLM", build_gemma2},
    {"Gemma3ForCausalLM", build_gemma3},
    {"Phi3ForCausalLM", build_phi3},
    {"GraniteForCausalLM", build_granite},
    {"StableLmForCausalLM", build_stablelm},
    {"MixtralForCausalLM", build_mixtral},
    {"Qwen2MoeForCausalLM", build_qwen2_moe},
    {"Qwen3MoeForCausalLM", build_qwen3_moe},
    {"OlmoeForCausalLM", build_olmoe},
    {"DeepseekV2ForCausalLM", build_deepseek_v2},
    {"DeepseekV3ForCausalLM", build_deepseek_v3},
};

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> names;
  for (const Entry& e : kRegistry) names.emplace_back(e.architecture);
  return names;
}

Result<ArchitectureBuilder> architecture_builder(const std::string& architecture) {
  for (const Entry& e : kRegistry) {
    if (architecture == e.architecture) return e.build;
  }
  std::string list;
  for (const Entry& e : kRegistry) list += std::string(list.empty() ? "" : ", ") + e.architecture;
  return unimplemented("unsupported architecture '" + architecture + "'; supported: " + list);
}

Result<std::vector<WeightSpec>> model_weight_specs(const ModelConfig& config) {
  VLLM_ASSIGN_OR_RETURN(ArchitectureBuilder build, architecture_builder(config.architecture));
  WeightLister lister;
  VLLM_RETURN_IF_ERROR(build(config, lister).status());
  return std::move(lister.specs);
}

Status check_layers_present(const ModelConfig& config, const WeightSource& weights, const std::string& prefix) {
  const int64_t layers_present = weights.count_numbered(prefix);
  if (config.num_hidden_layers > layers_present) {
    return invalid_argument(config.source + ": num_hidden_layers is " + std::to_string(config.num_hidden_layers) +
                            " but " + weights.source() + " has tensors for " + std::to_string(layers_present) +
                            " layers");
  }
  return Status::ok();
}

Status check_tensor_parallel_size(const ModelConfig& c, const Communicator* group) {
  const int64_t size = group != nullptr ? group->size() : 1;
  if (size == 1) return Status::ok();
  const std::string tp = "tensor parallel size " + std::to_string(size);
  auto refuse = [&](const std::string& what) { return invalid_argument(c.source + ": " + tp + " " + what); };
  if (c.num_attention_heads % size != 0) {
    return refuse("does not divide the " + std::to_string(c.num_attention_heads) + " attention heads");
  }
  const int64_t kv = c.num_key_value_heads;
  if (kv % size != 0 && size % kv != 0) {
    return refuse("and the " + std::to_string(kv) + " key/value heads must divide one another");
  }
  if (c.intermediate_size % size != 0) {
    return refuse("does not divide intermediate_size " + std::to_string(c.intermediate_size));
  }
  if ((size - 1) * ((c.vocab_size + size - 1) / size) >= c.vocab_size) {
    return refuse("leaves a rank none of the " + std::to_string(c.vocab_size) + " vocabulary rows");
  }
  return Status::ok();
}

namespace {

// Builds the architecture `config` names from `weights`: this rank's share
// of it in a distributed job.
Result<std::unique_ptr<Model>> build_model(const ModelConfig& config, const WeightSource& weights,
                                           const LoadOptions& options) {
  Result<ArchitectureBuilder> build = architecture_builder(config.architecture);
  if (!build.is_ok()) return build.status().with_context(config.source);
  VLLM_RETURN_IF_ERROR(check_layers_present(config, weights, "model.layers."));
  ThreadPool packers(ThreadPool::default_num_threads());
  SourceWeightReader reader(weights, packers);
  reader.set_tensor_parallel({.group = options.tensor_parallel,
                              .expert_parallel = options.expert_parallel,
                              .expert_exchange = options.expert_exchange,
                              .whole_vocabulary_on_rank0 = options.whole_vocabulary_on_rank0});
  const int ranks_per_stage = options.tensor_parallel != nullptr ? options.tensor_parallel->size() : 1;
  VLLM_ASSIGN_OR_RETURN(const PipelineStage stage, PipelineStage::of(options.world, options.pipeline_parallel_size,
                                                                     ranks_per_stage, config.num_hidden_layers));
  reader.set_pipeline_stage(stage);
  return (*build)(config, reader);
}

Result<std::unique_ptr<Model>> load_gguf_model(const std::string& path, const LoadOptions& options) {
  VLLM_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  VLLM_ASSIGN_OR_RETURN(Json json, gguf_model_config(file));
  VLLM_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(json, path + " (GGUF metadata)"));
  VLLM_RETURN_IF_ERROR(check_tensor_parallel_size(config, options.tensor_parallel));
  VLLM_ASSIGN_OR_RETURN(GgufCheckpoint checkpoint, GgufCheckpoint::open(file));
  return build_model(config, checkpoint, options);
}

}  // namespace

Result<std::unique_ptr<Model>> load_model(const std::string& model_path, const LoadOptions& options) {
  VLLM_ASSIGN_OR_RETURN(const std::string gguf, find_gguf_file(model_path));
  if (!gguf.empty()) {
    const std::string& q = options.quantization;
    if (!q.empty() && q != "none" && q != "gguf") {
      return invalid_argument("--quantization " + q + ": " + gguf + " is a GGUF file, quantized as it is stored");
    }
    return load_gguf_model(gguf, options);
  }
  VLLM_ASSIGN_OR_RETURN(ModelConfig config, load_model_config(model_path));
  VLLM_RETURN_IF_ERROR(check_tensor_parallel_size(config, options.tensor_parallel));
  VLLM_ASSIGN_OR_RETURN(const std::unique_ptr<QuantMethod> quantization,
                        quant_method_for(config, model_path, options.quantization));
  VLLM_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(model_path));
  if (quantization) return build_model(config, *quantization->wrap(checkpoint), options);
  return build_model(config, checkpoint, options);
}

}  // namespace vllm
