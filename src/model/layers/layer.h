// The two kinds of sub-layer a decoder layer is made of, and what their
// forward passes read besides their input.  Attention variants (standard,
// sliding, soft-capped, latent) are SequenceMixers; dense MLPs and mixtures
// of experts are FeedForwards.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "model/forward_batch.h"
#include "model/layers/rotary.h"
#include "model/layers/scratch.h"
#include "model/model.h"

namespace vllm {

// cos and sin tables of each rotary embedding a model has, for this pass's
// positions: [num_tokens, rotary_dim / 2] each.
struct RopeTables {
  std::vector<std::vector<float>> cos, sin;
  std::vector<int64_t> rotary_dim;

  // The tables of `ropes` at the batch's positions (capacity kept between calls).
  void compute(const std::vector<RotaryEmbedding>& ropes, const ForwardBatch& batch);
};

struct LayerContext {
  const ForwardBatch& batch;
  const kernels::PagedKVLayer& kv;  // this layer's cache
  const RopeTables& rope;
  Scratch& scratch;
  ThreadPool& pool;
};

class SequenceMixer {
 public:
  virtual ~SequenceMixer() = default;
  // out: [T, hidden] of x: [T, hidden], T = ctx.batch.num_tokens.
  virtual void forward(const float* x, const LayerContext& ctx, float* out) const = 0;
  virtual LayerKVSpec kv_spec() const = 0;
  virtual void add_cost(ModelCost& cost) const = 0;
  // The modules a LoRA adapter may change; none unless the mixer says so.
  virtual void add_lora_targets(LoraTargets&) const {}
  // Slot `slot` takes `adapter`'s matrices of those modules (null: none).
  virtual void set_lora(int32_t /*slot*/, const PeftAdapter* /*adapter*/) {}
};

class FeedForward {
 public:
  virtual ~FeedForward() = default;
  // out: [num_rows, hidden] of x: [num_rows, hidden]; lora_slots: each
  // row's adapter slot (-1 none), or null.
  virtual void forward(const float* x, int64_t num_rows, float* out, Scratch& scratch, ThreadPool& pool,
                       const int32_t* lora_slots) const = 0;
  virtual void add_cost(ModelCost& cost) const = 0;
  // The modules a LoRA adapter may change; none unless the layer says so.
  virtual void add_lora_targets(LoraTargets&) const {}
  // Slot `slot` takes `adapter`'s matrices of those modules (null: none).
  virtual void set_lora(int32_t /*slot*/, const PeftAdapter* /*adapter*/) {}
};

}  // namespace vllm
