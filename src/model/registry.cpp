#include "model/registry.h"

namespace vllm {
namespace {

struct Entry {
  const char* architecture;
  DecoderVariant (*make)(const ModelConfig&);
};

constexpr Entry kRegistry[] = {
    {"LlamaForCausalLM", llama_variant},
    {"MistralForCausalLM", mistral_variant},
    {"Qwen2ForCausalLM", qwen2_variant},
    {"Qwen3ForCausalLM", qwen3_variant},
};

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> names;
  for (const Entry& e : kRegistry) names.emplace_back(e.architecture);
  return names;
}

Result<DecoderVariant> decoder_variant_for(const ModelConfig& config) {
  for (const Entry& e : kRegistry) {
    if (config.architecture == e.architecture) return e.make(config);
  }
  std::string list;
  for (const Entry& e : kRegistry) list += std::string(list.empty() ? "" : ", ") + e.architecture;
  return unimplemented("unsupported architecture '" + config.architecture + "'; supported: " + list);
}

}  // namespace vllm
