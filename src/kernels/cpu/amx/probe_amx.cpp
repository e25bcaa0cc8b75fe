// Compiled with -mamx-tile -mamx-bf16 -mavx512f; reached only through the dispatch table.
#include <immintrin.h>

#include "kernels/cpu/amx/amx_tiles.h"
#include "kernels/cpu/probe.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int kAccumulators = 4;  // tmm0-3, each 16 x 16 FP32
constexpr int64_t kFlopsPerProduct = 16 * 16 * 32 * 2;

// Four independent accumulator tiles fed by the same two operand tiles: the
// matrix unit's rate with nothing else in the way.  One iteration is one
// tile product (taken four at a time), so that the start-up probe's
// iterations take milliseconds here as they do for the vector units.
float amx_bf16_burst(int64_t iterations) {
  amx::TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  amx::use_tile_config(config);
  alignas(64) uint16_t operand[16 * 32];
  for (auto& v : operand) v = 0x3f80;  // 1.0
  alignas(64) float out[16 * 16];
  _tile_loadd(4, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iterations; i += kAccumulators) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 6);
    _tile_dpbf16ps(2, 4, 6);
    _tile_dpbf16ps(3, 4, 6);
  }
  _tile_stored(0, out, 64);
  return out[0];
}

}  // namespace

ProbeTable amx_probe_table() {
  ProbeTable table = avx512_bf16_probe_table();
  table.amx_bf16_burst = amx_bf16_burst;
  table.amx_bf16_flops_per_iteration = kFlopsPerProduct;
  return table;
}

}  // namespace vllm::kernels::cpu
