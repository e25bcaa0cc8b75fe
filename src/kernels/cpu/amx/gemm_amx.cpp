// Compiled with -mamx-tile -mamx-bf16 -mavx512f -mavx512bf16; reached only
// through the dispatch table.  BF16 weights in AMX tiles (packed_matrix.h's
// kAmxTiles) times activations rounded to BF16, accumulated in FP32 tiles.
//
// A block of up to 32 activation rows against one 32-column panel keeps a
// 2 x 2 grid of 16 x 16 accumulator tiles (tmm0-3) over the whole depth,
// with two activation tiles (tmm4-5) and the panel's two weight tiles
// (tmm6-7) per 32-k chunk.  The activations are rounded into tile order
// too (each tile 1 KiB in one piece) and the next chunk's tiles are
// prefetched: measured on the Xeon, contiguous, prefetched operand tiles
// run the same products 25-55% faster than rows read 64 bytes at a stride.  Each output is one accumulator fed by the
// chunks in k order, starting from zero, whatever the batch: a row's
// result depends only on its own activations, never on the rows beside it,
// the block it lands in or the thread count.  (How tdpbf16ps sums the 32
// products of one chunk is the hardware's: measured on a Xeon with AMX, it
// is not the sequential FP32 chain of Intel's pseudo-code, so there is no
// scalar model here; gemm_test bounds it against float64 instead.)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "base/aligned_buffer.h"
#include "kernels/cpu/amx/amx_tiles.h"
#include "kernels/cpu/avx512/avx512_vec.h"
#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu {
namespace {

constexpr int64_t kTileRows = 16;
constexpr int64_t kBlockRows = kAmxBlockRows;
// Rows whose BF16 activations stay in L2 while the thread's panels pass them
// (about 1 MiB), at least one block.
int64_t rows_per_pass(int64_t depth) {
  constexpr int64_t kBytes = int64_t{1} << 20;
  return std::max(kBlockRows, kBytes / (2 * depth) / kBlockRows * kBlockRows);
}

// Panels that a block of rows takes in turn, the group staying in L2 while
// every block of the pass meets it (about 256 KiB of weights).  Across the
// group, a block's outputs are whole runs of each row rather than 32 columns
// of rows 4 KiB and more apart: measured on the Xeon at 256 rows a thread,
// 1.1-1.35x faster than one panel at a time.
int64_t panels_per_group(int64_t depth) {
  constexpr int64_t kBytes = int64_t{256} << 10;
  return std::max<int64_t>(1, kBytes / (depth * kPanelWidth * static_cast<int64_t>(sizeof(uint16_t))));
}

// Elements of one block's activation tiles: two (rows 0-15, 16-31) per chunk.
int64_t block_elements(int64_t depth) { return amx_activation_block_elements(depth); }

// Rows [0, rows) of x as BF16 (to nearest even, a subnormal to zero, as the
// dot-product path rounds them), each padded with zeros to `depth`, in tile
// order: block b (32 rows), chunk c, half h (16 rows) is the tile at
// ((b * chunks + c) * 2 + h) * kAmxTileElements, row by row.
void round_activations(const float* x, int64_t rows, int64_t k_total, int64_t depth, uint16_t* out) {
  const int64_t full = k_total / kAmxTileDepth * kAmxTileDepth;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * k_total;
    uint16_t* dst = out + (r / kBlockRows) * block_elements(depth) + (r % kBlockRows) / kTileRows * kAmxTileElements +
                    (r % kTileRows) * kAmxTileDepth;
    int64_t k = 0;
    for (; k < full; k += kAmxTileDepth, dst += kAmxChunkElements) {
      const __m512 lo = _mm512_loadu_ps(row + k), hi = _mm512_loadu_ps(row + k + 16);
      _mm512_storeu_si512(dst, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
    }
    for (; k < depth; k += kAmxTileDepth, dst += kAmxChunkElements) {  // the last k, then zeros
      const int64_t count = std::clamp<int64_t>(k_total - k, 0, 32);
      const __m512 lo = Avx512::load(row + k, std::min<int64_t>(16, count));
      const __m512 hi = count > 16 ? Avx512::load(row + k + 16, count - 16) : _mm512_setzero_ps();
      _mm512_storeu_si512(dst, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
    }
  }
}

// Stores accumulator tile T (16 columns) of `rows` rows at y, keeping only
// the first `cols` columns.
template <int T>
void store_tile(int64_t rows, int64_t cols, float* y, int64_t ldy) {
  if (cols >= 16) {
    amx::tile_store<T>(y, ldy * static_cast<int64_t>(sizeof(float)));
    return;
  }
  if (cols <= 0) return;
  alignas(64) float part[kTileRows * 16];
  amx::tile_store<T>(part, 64);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(y + r * ldy, part + r * 16, static_cast<size_t>(cols) * sizeof(float));
}

// Chunks of weights requested ahead of their use when a panel comes from
// memory: a decode step's tiles feed one row each, too little work to hide
// the wait for them.  From the caches, the next chunk is enough.
constexpr int64_t kPrefetchChunks = 4;
constexpr int64_t kChunkBytes = kAmxChunkElements * static_cast<int64_t>(sizeof(uint16_t));

// Requests the chunk (two tiles) `chunks` ahead of `at`, if it is before `end`.
void prefetch_chunk(const uint16_t* at, int64_t chunks, const uint16_t* end) {
  if (end - at <= chunks * kAmxChunkElements) return;
  const char* ahead = reinterpret_cast<const char*>(at + chunks * kAmxChunkElements);
  for (int64_t line = 0; line < kChunkBytes; line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
}

// One block of `rows` rows (their BF16 activation tiles at a) against one
// panel, every chunk of the depth; `from_memory`: the panel's first pass,
// its chunks fetched further ahead.
void block_panel(const uint16_t* a, int64_t rows, int64_t depth, const uint16_t* panel, bool from_memory, int64_t cols,
                 float* y, int64_t ldy) {
  const bool two = rows > kTileRows;
  const uint16_t* a_end = a + block_elements(depth);
  const uint16_t* panel_end = panel + depth * kPanelWidth;
  const int64_t weights_ahead = from_memory ? kPrefetchChunks : 1;
  _tile_zero(0);
  _tile_zero(1);
  if (two) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (; panel < panel_end; a += kAmxChunkElements, panel += kAmxChunkElements) {
    prefetch_chunk(panel, weights_ahead, panel_end);
    prefetch_chunk(a, 1, a_end);
    _tile_loadd(4, a, 64);
    _tile_loadd(6, panel, 64);
    _tile_loadd(7, panel + kAmxTileElements, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (two) {
      _tile_loadd(5, a + kAmxTileElements, 64);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  const int64_t top = std::min(rows, kTileRows);
  store_tile<0>(top, cols, y, ldy);
  store_tile<1>(top, cols - 16, y + 16, ldy);
  if (two) {
    store_tile<2>(rows - kTileRows, cols, y + kTileRows * ldy, ldy);
    store_tile<3>(rows - kTileRows, cols - 16, y + kTileRows * ldy + 16, ldy);
  }
}

// Up to 16 rows (decode, a mixture's experts) against two panels at once:
// the weights are what takes time there, and two streams of them keep more
// requests to memory in flight than one.  Accumulators tmm0-1 for the first
// panel, tmm2-3 for the second; its second weight tile reuses tmm6 once the
// first panel's product with it has been issued.
amx::TileConfig panel_pair_config(int64_t rows) {
  amx::TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.bytes_per_row[t] = 64;
    c.rows[t] = t <= 4 ? static_cast<uint8_t>(rows) : kTileRows;
  }
  return c;
}

void rows_panel_pair(const uint16_t* a, int64_t rows, int64_t depth, const uint16_t* first, const uint16_t* second,
                     int64_t cols, float* y, int64_t ldy) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const uint16_t* first_end = first + depth * kPanelWidth;
  const uint16_t* second_end = second + depth * kPanelWidth;
  for (; first < first_end; a += kAmxChunkElements, first += kAmxChunkElements, second += kAmxChunkElements) {
    prefetch_chunk(first, kPrefetchChunks, first_end);
    prefetch_chunk(second, kPrefetchChunks, second_end);
    _tile_loadd(4, a, 64);
    _tile_loadd(6, first, 64);
    _tile_loadd(7, first + kAmxTileElements, 64);
    _tile_loadd(5, second, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 4, 5);
    _tile_loadd(6, second + kAmxTileElements, 64);
    _tile_dpbf16ps(3, 4, 6);
  }
  store_tile<0>(rows, kPanelWidth, y, ldy);
  store_tile<1>(rows, kPanelWidth - 16, y + 16, ldy);
  store_tile<2>(rows, cols, y + kPanelWidth, ldy);
  store_tile<3>(rows, cols - 16, y + kPanelWidth + 16, ldy);
}

// Rows [0, m) already rounded into blocks (tiles), the first a block's
// first, against panels [p_begin, p_end): passes of rows, groups of panels
// (above).
void rounded_bf16_gemm(const uint16_t* tiles, int64_t m, const void* panels, int64_t k_total, int64_t n,
                       int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  if (m == 0 || p_begin >= p_end) return;
  const auto* w = static_cast<const uint16_t*>(panels);
  const int64_t depth = amx_padded_depth(k_total);
  const int64_t panel_elements = amx_panel_elements(k_total);
  const int64_t pass = rows_per_pass(depth), group = panels_per_group(depth);
  for (int64_t r0 = 0; r0 < m; r0 += pass) {
    const int64_t pass_rows = std::min(pass, m - r0);
    const uint16_t* pass_tiles = tiles + r0 / kBlockRows * block_elements(depth);
    for (int64_t p = p_begin; p < p_end; p += group) {
      const int64_t group_end = std::min(p_end, p + group);
      for (int64_t b = 0; b < pass_rows; b += kBlockRows) {
        const int64_t rows = std::min(kBlockRows, pass_rows - b);
        amx::use_tile_config(amx::block_config(rows));
        for (int64_t q = p; q < group_end; ++q) {
          const int64_t cols = std::min(kPanelWidth, n - q * kPanelWidth);
          block_panel(pass_tiles + b / kBlockRows * block_elements(depth), rows, depth, w + q * panel_elements, b == 0,
                      cols, y + (r0 + b) * ldy + q * kPanelWidth, ldy);
        }
      }
    }
  }
}

void round_bf16_tiles(const float* x, int64_t rows, int64_t k_total, uint16_t* tiles) {
  round_activations(x, rows, k_total, amx_padded_depth(k_total), tiles);
}

// Rounds its own rows: up to 16 at once (decode: two panels at a time), or
// a pass of them at a time (rows whose tiles stay in L2) for the callers
// that give float rows with more (a thread's share of the rows, a
// mixture's experts).
void amx_bf16_gemm(const float* x, int64_t m, const void* panels, int64_t k_total, int64_t n, int64_t p_begin,
                   int64_t p_end, float* y, int64_t ldy) {
  if (m == 0 || p_begin >= p_end) return;
  const auto* w = static_cast<const uint16_t*>(panels);
  const int64_t depth = amx_padded_depth(k_total);
  const int64_t panel_elements = amx_panel_elements(k_total);
  const int64_t pass = rows_per_pass(depth);
  // Aligned (a std::vector's were 16 bytes off): a tile row split across two
  // cache lines costs a second access.  Measured on the Xeon, one thread:
  // 2-5% faster products here, 2.5x in a loop over L1-resident operands
  // with both operands split.
  thread_local AlignedBuffer rounded;
  for (int64_t r0 = 0; r0 < m; r0 += pass) {
    const int64_t pass_rows = std::min(pass, m - r0);
    const auto tiles_bytes = static_cast<size_t>(amx_activation_elements(pass_rows, k_total)) * sizeof(uint16_t);
    if (rounded.size_bytes() < tiles_bytes) rounded = AlignedBuffer(tiles_bytes);
    uint16_t* tiles = rounded.as<uint16_t>();
    round_activations(x + r0 * k_total, pass_rows, k_total, depth, tiles);
    int64_t p = p_begin;
    if (pass_rows <= kTileRows) {
      amx::use_tile_config(panel_pair_config(pass_rows));
      for (; p + 1 < p_end; p += 2) {
        const int64_t second_cols = std::min(kPanelWidth, n - (p + 1) * kPanelWidth);
        rows_panel_pair(tiles, pass_rows, depth, w + p * panel_elements, w + (p + 1) * panel_elements, second_cols,
                        y + r0 * ldy + p * kPanelWidth, ldy);
      }
    }
    rounded_bf16_gemm(tiles, pass_rows, panels, k_total, n, p, p_end, y + r0 * ldy, ldy);
  }
}

}  // namespace

PackedGemmFn amx_bf16_gemm_fn() { return amx_bf16_gemm; }
RoundBf16TilesFn amx_round_bf16_tiles_fn() { return round_bf16_tiles; }
RoundedBf16GemmFn amx_rounded_bf16_gemm_fn() { return rounded_bf16_gemm; }

}  // namespace vllm::kernels::cpu
