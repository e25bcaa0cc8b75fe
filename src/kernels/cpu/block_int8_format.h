// What the block int8 kernels (gemm.h) share about a kBlockInt4 /
// kBlockInt6 / kBlockInt8 matrix's format: the numbers its nibbles stand for, and the
// choice of a kernel instantiated per format.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/cpu/quant_params_dispatch.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {

// The unsigned number (code + code_bias) each nibble of a kBlockInt4 matrix stands for.
inline std::array<uint8_t, 16> block_int4_numbers(const QuantFormat& f) {
  std::array<uint8_t, 16> numbers{};
  for (size_t n = 0; n < numbers.size(); ++n) numbers[n] = static_cast<uint8_t>(f.int4_codes[n] + f.code_bias);
  return numbers;
}

// fn.template operator()<kBits, kParams, kOffsets, kGroups>() for f: bits
// a code is stored in (4, 6 or 8), how the parameters are stored, offsets,
// and groups per block of 32 k (1, or 2 of 16 values).
template <typename Fn>
void for_block_format(const QuantFormat& f, Fn&& fn) {
  const auto with_groups = [&]<int kBits, QuantParams kParams, bool kOffsets>() {
    if (f.group_size == kActivationHalf) return fn.template operator()<kBits, kParams, kOffsets, 2>();
    fn.template operator()<kBits, kParams, kOffsets, 1>();
  };
  const auto with_offsets = [&]<int kBits, QuantParams kParams>() {
    if (f.has_offsets) return with_groups.template operator()<kBits, kParams, true>();
    with_groups.template operator()<kBits, kParams, false>();
  };
  const auto with_params = [&]<int kBits>() {
    for_quant_params(f.params, [&]<QuantParams kParams>() { with_offsets.template operator()<kBits, kParams>(); });
  };
  if (f.codes == QuantCodes::kBlockInt4) return with_params.template operator()<4>();
  if (f.codes == QuantCodes::kBlockInt6) return with_params.template operator()<6>();
  with_params.template operator()<8>();
}

}  // namespace vllm::kernels::cpu
