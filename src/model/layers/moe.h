// A mixture of experts: a router scores each token against every expert,
// the token goes through its top-k experts (gated MLPs), and their outputs
// are summed with the routing weights, plus an optional shared expert.
//
// Execution groups the batch's tokens by expert and runs one GEMM per
// expert over its tokens (all experts' GEMMs in one parallel region), so
// batch-1 decode reads only the chosen experts' weights; each token's
// contributions are added in ascending expert order, so its output does not
// depend on what else is in the batch.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/layers/layer.h"
#include "model/layers/linear.h"
#include "model/layers/mlp.h"

namespace vllm {

// How router logits become the chosen experts and their weights, covering
// Mixtral / Qwen-MoE / OLMoE (softmax, top-k, optionally renormalised) and
// DeepSeek V2 / V3 (groups, a selection bias, a scaling factor).
struct RouterConfig {
  enum class Scoring { kSoftmax, kSigmoid } scoring = Scoring::kSoftmax;
  int32_t num_experts = 0;
  int32_t top_k = 0;
  bool renormalize = false;  // the k weights divided by their sum
  // Group-limited selection: experts split into num_groups contiguous
  // groups; only the topk_groups best groups are chosen from.
  int32_t num_groups = 1;
  int32_t topk_groups = 1;
  enum class GroupScore { kMax, kTopTwoSum } group_score = GroupScore::kMax;
  // DeepSeek V3's e_score_correction_bias: added to the scores to choose
  // experts (and groups), never to the weights.
  bool selection_bias = false;
  float routed_scaling_factor = 1.0f;  // on the weights, after renormalising
};

// The experts and weights of one token: ids[k], weights[k], in the order
// chosen (best first).
struct Routing {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// Routes one token's scores (DeepSeek's bias aside, every other input is
// the router's logits for that token); exposed for unit tests.
void route_token(const RouterConfig& config, const float* logits, const float* selection_bias, int32_t* ids,
                 float* weights);

// Checkpoint names under `prefix` ("model.layers.3.mlp."), routed experts
// at prefix + "experts.<e>." with the expert MLP's tensor names.
struct MoeWeights {
  std::string prefix;
  std::string router = "gate";  // router.weight: [num_experts, hidden]
  MlpNames expert_names;        // gate_proj/up_proj/down_proj, or Mixtral's w1/w3/w2
  int64_t expert_intermediate_size = 0;
  // A shared expert every token goes through, under prefix + shared_name;
  // its output optionally times sigmoid(shared_gate . x) (Qwen2-MoE).
  int64_t shared_intermediate_size = 0;  // 0: none
  std::string shared_name = "shared_expert.";
  bool shared_gate = false;  // prefix + "shared_expert_gate.weight": [1, hidden]
};

class MoE : public FeedForward, public ExpertHolder {
 public:
  static Result<std::unique_ptr<MoE>> load(WeightReader& weights, const MoeWeights& names, int64_t hidden_size,
                                           const RouterConfig& router);

  // Experts take no adapters (lora_slots is not read).
  void forward(const float* x, int64_t num_rows, float* out, Scratch& scratch, ThreadPool& pool,
               const int32_t* lora_slots) const override;
  // What one token reads and computes: the router, top_k of the experts
  // (their average size) and the shared expert.
  void add_cost(ModelCost& cost) const override;
  // The experts this rank holds, for the tokens of other replicas (TensorParallel::expert_exchange).
  void run_held_experts(const float* rows, int64_t row_stride, const int32_t* experts, int64_t n, float* out,
                        ThreadPool& pool) const override;

 private:
  int64_t hidden_size_ = 0;
  RouterConfig config_;
  Linear router_;
  std::vector<float> selection_bias_;  // [num_experts] or empty
  int64_t expert_intermediate_size_ = 0;
  struct Expert {
    Linear gate_up;  // [2 * intermediate, hidden]: gate rows, then up rows
    Linear down;     // [hidden, intermediate]
  };
  // `split`: this rank's share of it under tensor parallelism (its
  // intermediate features; the products are summed over the group once, for
  // the whole layer).
  // The shared expert's part of a forward pass, run in the routed experts' parallel regions.
  struct SharedRun {
    const float* x;
    int64_t num_rows;
    float* gate_up;
    float* act;
    float* out;
  };
  // Experts [e_begin, e_end) over in's rows, grouped by expert (expert e's
  // from first[e] to first[e + 1]), into the same rows of expert_out.
  void run_experts(const float* in, const std::vector<size_t>& first, size_t e_begin, size_t e_end, float* gate_up,
                   float* act, float* expert_out, const SharedRun* shared, ThreadPool& pool) const;
  static Result<Expert> load_expert(WeightReader& weights, const std::string& prefix, const MlpNames& names,
                                    int64_t intermediate_size, int64_t hidden_size, bool split);

  // Under expert parallelism only this rank's experts are loaded, a
  // contiguous run (held_experts_); the others' assignments are another
  // rank's to compute.
  std::vector<Expert> experts_;
  IndexRange held_experts_;
  Communicator* group_ = nullptr;       // tensor or expert parallelism: the ranks whose outputs are summed
  ExpertExchange* exchange_ = nullptr;  // experts across replicas: where the rows go
  int32_t exchange_layer_ = -1;
  // Run in the same parallel regions as the routed experts.
  std::optional<Expert> shared_expert_;
  int64_t shared_intermediate_size_ = 0;
  std::optional<Linear> shared_gate_;
};

}  // namespace vllm
