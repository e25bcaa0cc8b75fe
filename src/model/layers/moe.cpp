#include "model/layers/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/logging.h"
#include "kernels/kernels.h"

namespace vllm {
namespace {

// Indices of the n largest of values[candidates...], best first; ties go to
// the lower index (torch.topk leaves them unspecified; a fixed rule keeps a
// token's routing independent of everything else).
void top_n(const std::vector<double>& values, std::vector<int32_t>& candidates, size_t n) {
  n = std::min(n, candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(n), candidates.end(),
                    [&](int32_t a, int32_t b) {
                      const double va = values[static_cast<size_t>(a)], vb = values[static_cast<size_t>(b)];
                      return va > vb || (va == vb && a < b);
                    });
  candidates.resize(n);
}

// The experts of the topk_groups groups whose scores are best, in order.
std::vector<int32_t> experts_of_best_groups(const RouterConfig& c, const std::vector<double>& choice) {
  const int32_t per_group = c.num_experts / c.num_groups;
  std::vector<double> group_scores(static_cast<size_t>(c.num_groups));
  for (int32_t g = 0; g < c.num_groups; ++g) {
    const auto first = choice.begin() + static_cast<std::ptrdiff_t>(g) * per_group;
    std::vector<double> members(first, first + per_group);
    std::sort(members.begin(), members.end(), std::greater<>());
    group_scores[static_cast<size_t>(g)] =
        c.group_score == RouterConfig::GroupScore::kMax ? members[0] : members[0] + members[std::min(1, per_group - 1)];
  }
  std::vector<int32_t> groups(static_cast<size_t>(c.num_groups));
  std::iota(groups.begin(), groups.end(), 0);
  top_n(group_scores, groups, static_cast<size_t>(c.topk_groups));
  std::sort(groups.begin(), groups.end());
  std::vector<int32_t> experts;
  for (int32_t g : groups) {
    for (int32_t e = g * per_group; e < (g + 1) * per_group; ++e) experts.push_back(e);
  }
  return experts;
}

}  // namespace

void route_token(const RouterConfig& c, const float* logits, const float* selection_bias, int32_t* ids,
                 float* weights) {
  const auto n = static_cast<size_t>(c.num_experts);
  std::vector<double> scores(n);
  if (c.scoring == RouterConfig::Scoring::kSoftmax) {
    const double max = *std::max_element(logits, logits + n);
    double sum = 0;
    for (size_t e = 0; e < n; ++e) sum += scores[e] = std::exp(static_cast<double>(logits[e]) - max);
    for (double& s : scores) s /= sum;
  } else {
    for (size_t e = 0; e < n; ++e) scores[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[e])));
  }
  std::vector<double> choice = scores;
  if (selection_bias != nullptr) {
    for (size_t e = 0; e < n; ++e) choice[e] += selection_bias[e];
  }
  std::vector<int32_t> candidates(n);
  if (c.num_groups > 1) {
    candidates = experts_of_best_groups(c, choice);
  } else {
    std::iota(candidates.begin(), candidates.end(), 0);
  }
  top_n(choice, candidates, static_cast<size_t>(c.top_k));
  double sum = 0;
  for (int32_t id : candidates) sum += scores[static_cast<size_t>(id)];
  for (size_t j = 0; j < candidates.size(); ++j) {
    double w = scores[static_cast<size_t>(candidates[j])];
    if (c.renormalize) w /= sum;
    ids[j] = candidates[j];
    weights[j] = static_cast<float>(w * c.routed_scaling_factor);
  }
}

namespace {

// The experts one rank of an expert-parallel group holds: a contiguous run,
// num_experts / size each and one more for the first num_experts % size
// ranks (vLLM's "linear" placement).
IndexRange expert_share(int64_t num_experts, int64_t rank, int64_t size) {
  const int64_t base = num_experts / size, extra = num_experts % size;
  return {rank * base + std::min(rank, extra), base + (rank < extra ? 1 : 0)};
}

// Rows grouped by their expert (ascending), in row order within one:
// expert e's are order[first[e]] to order[first[e + 1] - 1].
struct ByExpert {
  std::vector<size_t> first;  // [num_experts + 1]
  std::vector<size_t> order;  // [rows]: the row at each grouped place
};

ByExpert group_by_expert(const int32_t* experts, size_t rows, size_t num_experts) {
  ByExpert g{std::vector<size_t>(num_experts + 1, 0), std::vector<size_t>(rows)};
  for (size_t i = 0; i < rows; ++i) ++g.first[static_cast<size_t>(experts[i]) + 1];
  for (size_t e = 0; e < num_experts; ++e) g.first[e + 1] += g.first[e];
  std::vector<size_t> filled(g.first.begin(), g.first.end() - 1);
  for (size_t i = 0; i < rows; ++i) g.order[filled[static_cast<size_t>(experts[i])]++] = i;
  return g;
}

}  // namespace

Result<MoE::Expert> MoE::load_expert(WeightReader& weights, const std::string& prefix, const MlpNames& n,
                                     int64_t intermediate_size, int64_t hidden_size, bool split) {
  MatrixShard gate_up, down;
  if (split) {
    const IndexRange share = weights.tensor_parallel().share(intermediate_size);
    gate_up.rows = {share, share};
    down.cols = share;
  }
  Expert expert;
  VLLM_ASSIGN_OR_RETURN(expert.gate_up,
                        Linear::load_shard(weights, {prefix + n.gate + ".weight", prefix + n.up + ".weight"},
                                           {intermediate_size, intermediate_size}, hidden_size, gate_up));
  VLLM_ASSIGN_OR_RETURN(
      expert.down, Linear::load_shard(weights, {prefix + n.down + ".weight"}, {hidden_size}, intermediate_size, down));
  return expert;
}

Result<std::unique_ptr<MoE>> MoE::load(WeightReader& weights, const MoeWeights& names, int64_t hidden_size,
                                       const RouterConfig& router) {
  const TensorParallel& tp = weights.tensor_parallel();
  const bool split = tp.size() > 1 && !tp.expert_parallel;  // each expert split like a dense MLP
  for (const int64_t inter : {names.expert_intermediate_size, names.shared_intermediate_size}) {
    if (tp.size() > 1 && inter % tp.size() != 0) {
      return invalid_argument(names.prefix + ": tensor parallel size " + std::to_string(tp.size()) +
                              " does not divide the experts' intermediate size " + std::to_string(inter));
    }
  }
  if (router.top_k < 1 || router.top_k > router.num_experts) {
    return invalid_argument("num_experts_per_tok (" + std::to_string(router.top_k) + ") must be in [1, " +
                            std::to_string(router.num_experts) + "], the number of experts");
  }
  if (router.num_experts % router.num_groups != 0 || router.topk_groups < 1 || router.topk_groups > router.num_groups ||
      router.top_k > router.topk_groups * (router.num_experts / router.num_groups)) {
    return invalid_argument("n_group (" + std::to_string(router.num_groups) + ") and topk_group (" +
                            std::to_string(router.topk_groups) + ") must split " + std::to_string(router.num_experts) +
                            " experts into groups that hold the top " + std::to_string(router.top_k));
  }
  auto m = std::make_unique<MoE>();
  m->hidden_size_ = hidden_size;
  m->config_ = router;
  const std::string& p = names.prefix;
  VLLM_ASSIGN_OR_RETURN(m->router_,
                        Linear::load(weights, {p + names.router + ".weight"}, {router.num_experts}, hidden_size));
  if (router.selection_bias) {
    VLLM_ASSIGN_OR_RETURN(m->selection_bias_, weights.vector(p + names.router + ".e_score_correction_bias",
                                                             router.num_experts, WeightKind::kBias));
  }
  m->group_ = tp.size() > 1 ? tp.group : nullptr;
  m->expert_intermediate_size_ = names.expert_intermediate_size / (split ? tp.size() : 1);
  IndexRange held{0, router.num_experts};
  if (tp.expert_exchange != nullptr) {
    const Communicator& ranks = tp.expert_exchange->group();
    held = expert_share(router.num_experts, ranks.rank(), ranks.size());
    m->exchange_ = tp.expert_exchange;
    m->exchange_layer_ = tp.expert_exchange->add_layer(*m, hidden_size);
    if (m->exchange_layer_ == 0) {
      VLLM_LOG(Info) << "expert parallelism across data-parallel replicas: rank " << ranks.rank() << " of "
                     << ranks.size() << " holds experts " << held.first << "-" << held.first + held.count - 1
                     << " of each layer's " << router.num_experts;
    }
  } else if (tp.expert_parallel) {
    held = expert_share(router.num_experts, tp.rank(), tp.size());
  }
  m->held_experts_ = held;
  m->experts_.resize(static_cast<size_t>(router.num_experts));
  for (int64_t e = held.first; e < held.first + held.count; ++e) {
    VLLM_ASSIGN_OR_RETURN(m->experts_[static_cast<size_t>(e)],
                          load_expert(weights, p + "experts." + std::to_string(e) + ".", names.expert_names,
                                      names.expert_intermediate_size, hidden_size, split));
  }
  if (names.shared_intermediate_size > 0) {
    // Split across the group like a dense MLP, with or without expert parallelism (as vLLM does).
    m->shared_intermediate_size_ = names.shared_intermediate_size / tp.size();
    VLLM_ASSIGN_OR_RETURN(m->shared_expert_, load_expert(weights, p + names.shared_name, MlpNames{},
                                                         names.shared_intermediate_size, hidden_size, tp.size() > 1));
  }
  if (names.shared_gate) {
    VLLM_ASSIGN_OR_RETURN(m->shared_gate_, Linear::load(weights, {p + "shared_expert_gate.weight"}, {1}, hidden_size));
  }
  return m;
}

void MoE::forward(const float* x, int64_t num_rows, float* out, Scratch& scratch, ThreadPool& pool,
                  const int32_t* /*lora_slots*/) const {
  const int64_t h = hidden_size_;
  const auto k = static_cast<size_t>(config_.top_k);
  const auto rows = static_cast<size_t>(num_rows);
  float* logits = scratch.get(ScratchSlot::kRouterLogits, rows * static_cast<size_t>(config_.num_experts));
  router_.forward(x, num_rows, logits, pool);
  std::vector<int32_t> ids(rows * k);
  std::vector<float> weights(rows * k);
  const float* bias = selection_bias_.empty() ? nullptr : selection_bias_.data();
  pool.parallel_for(num_rows, [&](int64_t begin, int64_t end) {
    for (auto t = static_cast<size_t>(begin); t < static_cast<size_t>(end); ++t) {
      route_token(config_, logits + t * static_cast<size_t>(config_.num_experts), bias, &ids[t * k], &weights[t * k]);
    }
  });

  // The assignments grouped by expert, tokens ascending within: order[a]
  // is assignment a's index into ids / weights (t * k + j).
  const size_t assignments = rows * k;
  const auto [first, order] = group_by_expert(ids.data(), assignments, experts_.size());

  const int64_t inter = expert_intermediate_size_;
  float* in = scratch.get(ScratchSlot::kExpertIn, assignments * static_cast<size_t>(h));
  float* gate_up = scratch.get(ScratchSlot::kGateUp, assignments * static_cast<size_t>(2 * inter));
  float* act = scratch.get(ScratchSlot::kAct, assignments * static_cast<size_t>(inter));
  float* expert_out = scratch.get(ScratchSlot::kExpertOut, assignments * static_cast<size_t>(h));
  // The assignments this rank computes, [lo, hi): its own experts' (all of
  // them unless experts are placed across ranks), or under an exchange all,
  // wherever their experts are.
  const auto held_begin = static_cast<size_t>(held_experts_.first);
  const size_t held_end = held_begin + static_cast<size_t>(held_experts_.count);
  const size_t lo = exchange_ != nullptr ? 0 : first[held_begin];
  const size_t hi = exchange_ != nullptr ? assignments : first[held_end];
  for (size_t a = lo; a < hi; ++a) std::copy_n(x + order[a] / k * static_cast<size_t>(h), h, in + a * h);
  // The shared expert over every row, in the same two parallel regions.
  const int64_t shared_inter = shared_intermediate_size_;
  std::optional<SharedRun> shared_run;
  if (shared_expert_) {
    shared_run =
        SharedRun{x, num_rows, scratch.get(ScratchSlot::kSharedGateUp, rows * static_cast<size_t>(2 * shared_inter)),
                  scratch.get(ScratchSlot::kSharedAct, rows * static_cast<size_t>(shared_inter)),
                  scratch.get(ScratchSlot::kSharedOut, rows * static_cast<size_t>(h))};
  }
  if (exchange_ != nullptr) {
    // Each assignment's row to its expert's rank (experts ascending: ranks ascending).
    std::vector<int32_t> experts(assignments);
    std::vector<int64_t> rows_to(static_cast<size_t>(exchange_->group().size()), 0);
    for (size_t a = 0; a < assignments; ++a) experts[a] = ids[order[a]];
    for (int64_t r = 0; r < static_cast<int64_t>(rows_to.size()); ++r) {
      const IndexRange share = expert_share(config_.num_experts, r, static_cast<int64_t>(rows_to.size()));
      rows_to[static_cast<size_t>(r)] = static_cast<int64_t>(first[static_cast<size_t>(share.first + share.count)] -
                                                             first[static_cast<size_t>(share.first)]);
    }
    if (shared_run) run_experts(nullptr, first, 0, 0, nullptr, nullptr, nullptr, &*shared_run, pool);
    exchange_->exchange(exchange_layer_, in, experts.data(), rows_to.data(), static_cast<int64_t>(assignments),
                        expert_out);
  } else {
    run_experts(in, first, held_begin, held_end, gate_up, act, expert_out, shared_run ? &*shared_run : nullptr, pool);
  }
  const float* shared = shared_run ? shared_run->out : nullptr;

  std::fill(out, out + num_rows * h, 0.0f);
  for (size_t a = lo; a < hi; ++a) {
    float* dst = out + order[a] / k * static_cast<size_t>(h);
    const float w = weights[order[a]];
    const float* src = expert_out + a * h;
    for (int64_t c = 0; c < h; ++c) dst[c] += w * src[c];
  }
  if (shared_expert_) {
    std::vector<float> gate(rows, 1.0f);
    if (shared_gate_) {
      shared_gate_->forward(x, num_rows, gate.data(), pool);
      for (float& g : gate) g = 1.0f / (1.0f + std::exp(-g));
    }
    for (int64_t t = 0; t < num_rows; ++t) {
      const float g = gate[static_cast<size_t>(t)];
      for (int64_t c = 0; c < h; ++c) out[t * h + c] += g * shared[t * h + c];
    }
  }
  // Each rank's experts (or shares of every expert): the layer's output is their sum.
  if (group_ != nullptr) group_->all_reduce_sum(out, num_rows * h);
}

void MoE::run_experts(const float* in, const std::vector<size_t>& first, size_t e_begin, size_t e_end, float* gate_up,
                      float* act, float* expert_out, const SharedRun* shared, ThreadPool& pool) const {
  const int64_t h = hidden_size_;
  const int64_t inter = expert_intermediate_size_;
  std::vector<Linear::Call> gate_ups, downs;
  for (size_t e = e_begin; e < e_end; ++e) {
    const auto n = static_cast<int64_t>(first[e + 1] - first[e]);
    if (n == 0) continue;
    const auto at = static_cast<int64_t>(first[e]);
    gate_ups.push_back({&experts_[e].gate_up, in + at * h, n, gate_up + at * 2 * inter});
    downs.push_back({&experts_[e].down, act + at * inter, n, expert_out + at * h});
  }
  const int64_t shared_inter = shared_intermediate_size_;
  if (shared != nullptr) {
    gate_ups.push_back({&shared_expert_->gate_up, shared->x, shared->num_rows, shared->gate_up});
    downs.push_back({&shared_expert_->down, shared->act, shared->num_rows, shared->out});
  }
  Linear::forward_group(gate_ups, pool);
  if (e_begin < e_end) {
    const size_t lo = first[e_begin], hi = first[e_end];
    kernels::silu_and_mul(gate_up + lo * static_cast<size_t>(2 * inter), static_cast<int64_t>(hi - lo), inter,
                          act + lo * static_cast<size_t>(inter), pool);
  }
  if (shared != nullptr) kernels::silu_and_mul(shared->gate_up, shared->num_rows, shared_inter, shared->act, pool);
  Linear::forward_group(downs, pool);
}

void MoE::run_held_experts(const float* rows, int64_t row_stride, const int32_t* experts, int64_t n, float* out,
                           ThreadPool& pool) const {
  // Grouped by expert as forward() groups them, then put back in the rows' order.
  const auto h = static_cast<size_t>(hidden_size_);
  const auto count = static_cast<size_t>(n);
  const auto inter = static_cast<size_t>(expert_intermediate_size_);
  for (size_t i = 0; i < count; ++i) {
    VLLM_CHECK(experts[i] >= held_experts_.first && experts[i] < held_experts_.first + held_experts_.count,
               "rows only for the experts this rank holds");
  }
  const auto [first, order] = group_by_expert(experts, count, experts_.size());
  // Kept between calls (one engine thread calls): a prefill's rows are
  // megabytes, whose pages fresh buffers would fault in at every layer.
  thread_local std::vector<float> in, gate_up, act, expert_out;
  for (auto [buffer, size] : {std::pair{&in, count * h}, std::pair{&gate_up, count * 2 * inter},
                              std::pair{&act, count * inter}, std::pair{&expert_out, count * h}}) {
    if (buffer->size() < size) buffer->resize(size);
  }
  for (size_t a = 0; a < count; ++a)
    std::copy_n(rows + order[a] * static_cast<size_t>(row_stride), h, in.data() + a * h);
  const auto held_begin = static_cast<size_t>(held_experts_.first);
  run_experts(in.data(), first, held_begin, held_begin + static_cast<size_t>(held_experts_.count), gate_up.data(),
              act.data(), expert_out.data(), nullptr, pool);
  for (size_t a = 0; a < count; ++a) std::copy_n(expert_out.data() + a * h, h, out + order[a] * h);
}

void MoE::add_cost(ModelCost& cost) const {
  router_.add_cost(cost);
  ModelCost experts;
  for (int64_t e = held_experts_.first; e < held_experts_.first + held_experts_.count; ++e) {
    experts_[static_cast<size_t>(e)].gate_up.add_cost(experts);
    experts_[static_cast<size_t>(e)].down.add_cost(experts);
  }
  const double active = static_cast<double>(config_.top_k) / static_cast<double>(experts_.size());
  cost.layer_params += experts.layer_params * active;
  cost.weight_bytes += experts.weight_bytes * active;
  cost.routed_expert_bytes += experts.weight_bytes;
  cost.routed_fraction = active;
  cost.bf16_matrices &= experts.bf16_matrices;
  if (shared_expert_) {
    shared_expert_->gate_up.add_cost(cost);
    shared_expert_->down.add_cost(cost);
  }
  if (shared_gate_) shared_gate_->add_cost(cost);
}

}  // namespace vllm
