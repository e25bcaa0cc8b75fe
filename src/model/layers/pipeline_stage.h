// Pipeline parallelism: a model's layers split into contiguous ranges, one
// per stage, each stage a group of ranks (of tensor_parallel_size, the
// innermost: world rank = stage * ranks_per_stage + rank in the stage).  The
// first stage holds the embedding, the last the final norm and the LM head;
// a stage passes its residual stream and its last sub-layer's output to the
// same rank of the next stage, and the last stage's first rank sends rank 0
// the logits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "distributed/communicator.h"

namespace vllm {

// The layers of each of `stages` stages, as vLLM's get_pp_indices splits
// them: `partition` when given (VLLM_PP_LAYER_PARTITION's comma-separated
// counts, which must be `stages` of them summing to num_layers), else
// num_layers / stages each and the remainder one each to the stages before
// the last, walking back from it (the last also holds the LM head).
Result<std::vector<int64_t>> pipeline_partition(int64_t num_layers, int stages, const std::string& partition = "");

struct PipelineStage {
  Communicator* world = nullptr;  // every rank of the job; null: the whole model here
  int stage = 0, num_stages = 1;
  int ranks_per_stage = 1;
  int64_t first_layer = 0;
  int64_t end_layer = -1;  // -1: every layer from first_layer

  // This rank's stage (VLLM_PP_LAYER_PARTITION read from the environment).
  static Result<PipelineStage> of(Communicator* world, int num_stages, int ranks_per_stage, int64_t num_layers);

  bool first() const { return stage == 0; }
  bool last() const { return stage == num_stages - 1; }
  // One past the last layer it holds, of a model of num_layers.
  int64_t end(int64_t num_layers) const { return end_layer < 0 ? num_layers : end_layer; }
  // The world ranks of this rank's peers in the stages before and after it.
  int previous_rank() const { return world->rank() - ranks_per_stage; }
  int next_rank() const { return world->rank() + ranks_per_stage; }
  // The rank that sends rank 0 the logits: the last stage's first.
  int logits_rank() const { return (num_stages - 1) * ranks_per_stage; }
};

}  // namespace vllm
