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

// The GEMMs' block of `rows` (1..32) activation rows against one 32-column
// panel: a 2 x 2 grid of 16 x 16 accumulators (tmm0-1 the top 16 rows,
// tmm2-3 the rest), the two activation tiles (tmm4 top, tmm5 bottom) and
// the panel's two weight tiles (tmm6-7: 16 rows of 64 bytes, each a pair of
// k in BF16 or a quad of k in int8), every row 64 bytes.
inline TileConfig block_config(int64_t rows) {
  constexpr int64_t kTileRows = 16;
  TileConfig c;
  const auto top = static_cast<uint8_t>(rows < kTileRows ? rows : kTileRows);
  const auto bottom = static_cast<uint8_t>(rows > kTileRows ? rows - kTileRows : 0);
  for (int t = 0; t < 8; ++t) c.bytes_per_row[t] = 64;
  c.rows[0] = c.rows[1] = c.rows[4] = top;
  c.rows[2] = c.rows[3] = c.rows[5] = bottom;
  c.rows[6] = c.rows[7] = kTileRows;
  if (bottom == 0) c.bytes_per_row[2] = c.bytes_per_row[3] = c.bytes_per_row[5] = 0;
  return c;
}

// The int8 GEMMs' walk over rows [0, m) and panels [p_begin, p_end): rows
// in passes whose activations (bytes_per_row each) stay in L2 (about 1 MiB)
// while the panels pass them, panels in groups that stay in L2 (about 256
// KiB of panel_bytes each) while every block of `block_rows` rows of the
// pass meets them.  For each block: configure(rows), then fn(first row,
// rows, panel) for each panel of the group.
template <typename Configure, typename Fn>
void for_blocks_and_panels(int64_t m, int64_t p_begin, int64_t p_end, int64_t block_rows, int64_t bytes_per_row,
                           int64_t panel_bytes, Configure&& configure, Fn&& fn) {
  constexpr int64_t kPassBytes = int64_t{1} << 20, kGroupBytes = int64_t{256} << 10;
  const int64_t pass = block_rows > kPassBytes / bytes_per_row / block_rows * block_rows
                           ? block_rows
                           : kPassBytes / bytes_per_row / block_rows * block_rows;
  const int64_t group = panel_bytes >= kGroupBytes ? 1 : kGroupBytes / panel_bytes;
  for (int64_t r0 = 0; r0 < m; r0 += pass) {
    const int64_t pass_end = r0 + pass < m ? r0 + pass : m;
    for (int64_t p0 = p_begin; p0 < p_end; p0 += group) {
      const int64_t group_end = p0 + group < p_end ? p0 + group : p_end;
      for (int64_t r = r0; r < pass_end; r += block_rows) {
        const int64_t rows = r + block_rows < pass_end ? block_rows : pass_end - r;
        configure(rows);
        for (int64_t p = p0; p < group_end; ++p) fn(r, rows, p);
      }
    }
  }
}

// Tile instructions with the tile numbers as template arguments.  (The
// compiler's intrinsics paste their tile argument into the instruction's
// text, so it must be a literal there; an "i" operand takes a constant
// expression instead.)  Unlike those intrinsics, each says that it reads or
// writes memory, so that no store to an operand is moved past its load.
template <int T>
void tile_load(const void* base, int64_t stride_bytes) {
  static_assert(T >= 0 && T < 8);
  asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(base), "r"(stride_bytes), "i"(T) : "memory");
}
template <int T>
void tile_store(void* base, int64_t stride_bytes) {
  static_assert(T >= 0 && T < 8);
  asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(base), "r"(stride_bytes), "i"(T) : "memory");
}
template <int T>
void tile_zero() {
  static_assert(T >= 0 && T < 8);
  asm volatile("tilezero %%tmm%c0" ::"i"(T));
}
// C += A . B: BF16 pairs of A's rows times B's (VNNI) columns, FP32 sums.
template <int C, int A, int B>
void tile_dot_bf16() {
  static_assert(C >= 0 && C < 8 && A >= 0 && A < 8 && B >= 0 && B < 8 && C != A && C != B && A != B);
  asm volatile("tdpbf16ps %%tmm%c0, %%tmm%c1, %%tmm%c2" ::"i"(B), "i"(A), "i"(C));
}

// C += A . B: four unsigned bytes of A's rows times four signed bytes of B's
// columns, int32 sums (AMX-INT8; only from files compiled with -mamx-int8).
template <int C, int A, int B>
void tile_dot_u8s8() {
  static_assert(C >= 0 && C < 8 && A >= 0 && A < 8 && B >= 0 && B < 8 && C != A && C != B && A != B);
  asm volatile("tdpbusd %%tmm%c0, %%tmm%c1, %%tmm%c2" ::"i"(B), "i"(A), "i"(C));
}

// C += A . B: four signed bytes of A's rows times four signed bytes of B's
// columns, int32 sums (AMX-INT8; only from files compiled with -mamx-int8).
template <int C, int A, int B>
void tile_dot_s8s8() {
  static_assert(C >= 0 && C < 8 && A >= 0 && A < 8 && B >= 0 && B < 8 && C != A && C != B && A != B);
  asm volatile("tdpbssd %%tmm%c0, %%tmm%c1, %%tmm%c2" ::"i"(B), "i"(A), "i"(C));
}

}  // namespace vllm::kernels::cpu::amx
