// The AMX tile state of one thread: its configuration (palette 1, each tile's
// rows and bytes per row), loaded only when it changes.  Include only from
// files compiled with -mamx-tile.  The process must have been granted the
// tile data (dispatch.cpp asks the kernel once, with ARCH_REQ_XCOMP_PERM,
// before any AMX path is chosen).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace vllm::kernels::cpu::amx {

// The 64-byte operand of ldtilecfg.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};

  bool operator==(const TileConfig& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};

// Loads `config` unless it is this thread's current one.  (ldtilecfg zeroes
// every tile, so a kernel configures before it starts a product, never in
// the middle of one.)
inline void use_tile_config(const TileConfig& config) {
  thread_local TileConfig current{0};
  if (current == config) return;
  _tile_loadconfig(&config);
  current = config;
}

}  // namespace vllm::kernels::cpu::amx
