// The one switch from how a quantized matrix stores its group parameters
// (QuantParams, a run-time value) to kernels instantiated per storage.
#pragma once

#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {

// fn.template operator()<kParams>() for `params`.
template <typename Fn>
void for_quant_params(QuantParams params, Fn&& fn) {
  switch (params) {
    case QuantParams::kF16:
      return fn.template operator()<QuantParams::kF16>();
    case QuantParams::kF32:
      return fn.template operator()<QuantParams::kF32>();
    case QuantParams::kSteps:
      return fn.template operator()<QuantParams::kSteps>();
  }
}

}  // namespace vllm::kernels::cpu
