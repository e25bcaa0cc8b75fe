// Element-wise math that needs an exponential, per ISA: SwiGLU, GeGLU and
// the shifted exponentials of a log-sum-exp.  All use exp_poly (attention.h)
// lane-wise, so every ISA computes the same bits.
#pragma once

#include <cstdint>

namespace vllm::kernels::cpu {

struct ActivationTable {
  // out[i] = gate[i] * (1 / (1 + e^-gate[i])) * up[i], gate = gate_up[0, n), up = gate_up[n, 2n);
  // e^-gate via exp_poly(-max(gate, -87)).
  void (*silu_and_mul_row)(const float* gate_up, int64_t n, float* out);
  // out[i] = 0.5 * g * (1 + tanh(sqrt(2/pi) * (g + 0.044715 g^3))) * up[i] (GELU's tanh form, as
  // PyTorch's approximate="tanh"), tanh(y) = 1 - 2 / (e^(2y) + 1) with 2y kept within [-87, 87].
  void (*gelu_tanh_and_mul_row)(const float* gate_up, int64_t n, float* out);
  // out[i] = exp_poly(x[i] - shift).
  void (*exp_shifted)(const float* x, int64_t n, float shift, float* out);
};

ActivationTable ref_activation_table();
ActivationTable avx2_activation_table();
ActivationTable avx512_activation_table();

}  // namespace vllm::kernels::cpu
