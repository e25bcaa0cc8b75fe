// Scratch memory of a forward pass, shared by its layers and kept across
// passes (sized to the largest batch so far): each use has its slot, so a
// layer's buffers are never another's that is still live.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace vllm {

enum class ScratchSlot {
  kQkv,           // [T, q + k + v dims]: the stacked projection
  kQ,             // [T, heads * head_dim]
  kK,             // [T, kv_heads * head_dim]
  kV,             // [T, kv_heads * head_dim]
  kAttnOut,       // [T, heads * head_dim]
  kGateUp,        // [T, 2 * intermediate]
  kAct,           // [T, intermediate]
  kRouterLogits,  // [T, experts]
  kExpertIn,      // [tokens of one expert, hidden]: its gathered inputs
  kExpertOut,     // [tokens of one expert, hidden]
  kSharedGateUp,  // [T, 2 * shared intermediate]
  kSharedAct,     // [T, shared intermediate]
  kSharedOut,     // [T, hidden]: a shared expert's output
  kLatent,        // [T, kv_lora_rank]: latent attention's compressed KV, normed
  kHeadsIn,       // [heads, T, dims]: per-head inputs of latent attention's up-projections
  kHeadsOut,      // [heads, T, dims]: their outputs
  kCount,
};

class Scratch {
 public:
  // At least `n` floats; their contents are whatever the last user left.
  float* get(ScratchSlot slot, size_t n) {
    std::vector<float>& b = buffers_[static_cast<size_t>(slot)];
    if (b.size() < n) b.resize(n);
    return b.data();
  }

 private:
  std::array<std::vector<float>, static_cast<size_t>(ScratchSlot::kCount)> buffers_;
};

}  // namespace vllm
