#include "model/layers/pipeline_stage.h"

#include <cstdlib>
#include <numeric>

#include "base/logging.h"

namespace vllm {
namespace {

Result<std::vector<int64_t>> parse_partition(const std::string& text, int64_t num_layers, int stages) {
  std::vector<int64_t> layers;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    char* end = nullptr;
    const long long n = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || end != part.c_str() + part.size() || n < 0) {
      return invalid_argument("VLLM_PP_LAYER_PARTITION '" + text + "' is not a comma-separated list of layer counts");
    }
    layers.push_back(n);
    at = comma + 1;
  }
  if (static_cast<int>(layers.size()) != stages) {
    return invalid_argument("VLLM_PP_LAYER_PARTITION '" + text + "' has " + std::to_string(layers.size()) +
                            " counts for " + std::to_string(stages) + " pipeline stages");
  }
  if (std::accumulate(layers.begin(), layers.end(), int64_t{0}) != num_layers) {
    return invalid_argument("VLLM_PP_LAYER_PARTITION '" + text + "' does not add up to the model's " +
                            std::to_string(num_layers) + " layers");
  }
  return layers;
}

}  // namespace

Result<std::vector<int64_t>> pipeline_partition(int64_t num_layers, int stages, const std::string& partition) {
  if (!partition.empty()) return parse_partition(partition, num_layers, stages);
  std::vector<int64_t> layers(static_cast<size_t>(stages), num_layers / stages);
  const int64_t remainder = num_layers % stages;
  for (int64_t i = 0; i < remainder; ++i) ++layers[static_cast<size_t>(stages - 2 - i)];
  return layers;
}

Result<PipelineStage> PipelineStage::of(Communicator* world, int num_stages, int ranks_per_stage, int64_t num_layers) {
  if (num_stages == 1) return PipelineStage{};
  VLLM_CHECK(world != nullptr && world->size() == num_stages * ranks_per_stage, "stages of equal ranks fill the job");
  const char* partition = std::getenv("VLLM_PP_LAYER_PARTITION");
  VLLM_ASSIGN_OR_RETURN(const std::vector<int64_t> layers,
                        pipeline_partition(num_layers, num_stages, partition != nullptr ? partition : ""));
  for (size_t stage = 0; stage < layers.size(); ++stage) {
    if (layers[stage] == 0) {
      return invalid_argument("pipeline stage " + std::to_string(stage) + " of " + std::to_string(num_stages) +
                              " would hold none of the model's " + std::to_string(num_layers) + " layers");
    }
  }
  PipelineStage s;
  s.world = world;
  s.num_stages = num_stages;
  s.ranks_per_stage = ranks_per_stage;
  s.stage = world->rank() / ranks_per_stage;
  s.first_layer = std::accumulate(layers.begin(), layers.begin() + s.stage, int64_t{0});
  s.end_layer = s.first_layer + layers[static_cast<size_t>(s.stage)];
  return s;
}

}  // namespace vllm
