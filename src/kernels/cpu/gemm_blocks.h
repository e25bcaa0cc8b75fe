// The packed GEMM of gemm.h, written once for any vector ISA.  An ISA file
// defines a traits struct V and weight loaders W, and instantiates
// packed_gemm<V, W, T> under its own compiler flags:
//   V::Reg, V::kLanes, V::kTileRows (activation rows per register tile),
//   V::zero(), V::broadcast(const float*), V::fmadd(a, b, c) = a * b + c,
//   V::prefetch(const void*) (a hint: may do nothing),
//   V::load(const float*, int64_t count), V::store(float*, Reg, int64_t count)
//   (count < kLanes: only the first count lanes are read or written);
//   W::load(const T* step, Reg out[kPanelWidth / kLanes]) widens one k step
//   of a panel into column order.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu::blocks {

// Rows of activations per block (their k slice stays in L2 while the
// thread's panels pass) and the k slice of a panel kept in L1 meanwhile.
inline constexpr int64_t kRowBlock = 192;
inline constexpr int64_t kDepthBlock = 512;

// R rows x one panel over k steps [k0, k0 + kc): the R x kPanelWidth
// accumulators live in registers; `resume` reloads them from y, which is how
// the k chain continues across depth blocks unchanged.  `next` (or null) is
// the panel whose same k steps come next: they are prefetched meanwhile, so
// that a small batch, whose tiles are few, does not wait on memory.
template <typename V, typename W, int R, typename T>
void tile(const float* x, int64_t ldx, const T* panel, const T* next, int64_t k0, int64_t kc, int64_t cols, bool resume,
          float* y, int64_t ldy) {
  constexpr int NV = static_cast<int>(kPanelWidth / V::kLanes);
  typename V::Reg acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) {
      const int64_t count = std::clamp<int64_t>(cols - v * V::kLanes, 0, V::kLanes);
      acc[r][v] = resume ? V::load(y + r * ldy + v * V::kLanes, count) : V::zero();
    }
  }
  const float* xk = x + k0;
  const T* step = panel + k0 * kPanelWidth;
  const T* ahead = (next != nullptr ? next : panel) + k0 * kPanelWidth;
  for (int64_t k = 0; k < kc; ++k, step += kPanelWidth, ahead += kPanelWidth) {
    V::prefetch(ahead);
    if constexpr (sizeof(T) * kPanelWidth > 64) V::prefetch(ahead + 64 / sizeof(T));
    typename V::Reg w[NV];
    W::load(step, w);
    for (int r = 0; r < R; ++r) {
      const typename V::Reg xr = V::broadcast(xk + r * ldx + k);
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(xr, w[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) {
      const int64_t count = std::clamp<int64_t>(cols - v * V::kLanes, 0, V::kLanes);
      V::store(y + r * ldy + v * V::kLanes, acc[r][v], count);
    }
  }
}

// A tile of `rows` (<= R) rows.
template <typename V, typename W, int R = V::kTileRows, typename T>
void tile_any_rows(int64_t rows, const float* x, int64_t ldx, const T* panel, const T* next, int64_t k0, int64_t kc,
                   int64_t cols, bool resume, float* y, int64_t ldy) {
  if constexpr (R == 1) {
    tile<V, W, 1>(x, ldx, panel, next, k0, kc, cols, resume, y, ldy);
  } else {
    if (rows == R) return tile<V, W, R>(x, ldx, panel, next, k0, kc, cols, resume, y, ldy);
    tile_any_rows<V, W, R - 1>(rows, x, ldx, panel, next, k0, kc, cols, resume, y, ldy);
  }
}

// One activation row against P panels at once (decode): 2P independent FMA
// chains keep the FMA units busy while the weights stream from memory, where
// one panel's chain would wait on its own latency at every k step.
template <typename V, typename W, int P, typename T>
void row_panels(const float* x, const T* w, int64_t k_total, int64_t n, int64_t p0, float* y) {
  constexpr int NV = static_cast<int>(kPanelWidth / V::kLanes);
  typename V::Reg acc[P][NV];
  for (int i = 0; i < P; ++i) {
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  }
  const T* panel = w + p0 * k_total * kPanelWidth;
  const int64_t panel_stride = k_total * kPanelWidth;
  for (int64_t k = 0; k < k_total; ++k) {
    const typename V::Reg xr = V::broadcast(x + k);
    for (int i = 0; i < P; ++i) {
      typename V::Reg wv[NV];
      W::load(panel + i * panel_stride + k * kPanelWidth, wv);
      for (int v = 0; v < NV; ++v) acc[i][v] = V::fmadd(xr, wv[v], acc[i][v]);
    }
  }
  for (int i = 0; i < P; ++i) {
    const int64_t first_col = (p0 + i) * kPanelWidth;
    for (int v = 0; v < NV; ++v) {
      const int64_t count = std::clamp<int64_t>(n - first_col - v * V::kLanes, 0, V::kLanes);
      V::store(y + first_col + v * V::kLanes, acc[i][v], count);
    }
  }
}

template <typename V, typename W, typename T>
void packed_gemm(const float* x, int64_t m, const void* panels, int64_t k_total, int64_t n, int64_t p_begin,
                 int64_t p_end, float* y, int64_t ldy) {
  const T* w = static_cast<const T*>(panels);
  if (m == 1) {
    int64_t p = p_begin;
    for (; p + 4 <= p_end; p += 4) row_panels<V, W, 4>(x, w, k_total, n, p, y);
    if (p_end - p == 3) row_panels<V, W, 3>(x, w, k_total, n, p, y);
    if (p_end - p == 2) row_panels<V, W, 2>(x, w, k_total, n, p, y);
    if (p_end - p == 1) row_panels<V, W, 1>(x, w, k_total, n, p, y);
    return;
  }
  for (int64_t r0 = 0; r0 < m; r0 += kRowBlock) {
    const int64_t r_end = std::min(m, r0 + kRowBlock);
    // Depth blocks of near-equal length (576 = 288 + 288, not 256 + 256 + 64).
    const int64_t depth_blocks = (k_total + kDepthBlock - 1) / kDepthBlock;
    const int64_t depth = (k_total + depth_blocks - 1) / depth_blocks;
    for (int64_t k0 = 0; k0 < k_total; k0 += depth) {
      const int64_t kc = std::min(depth, k_total - k0);
      for (int64_t p = p_begin; p < p_end; ++p) {
        const T* panel = w + p * k_total * kPanelWidth;
        const int64_t cols = std::min(kPanelWidth, n - p * kPanelWidth);
        // Row tiles of near-equal height (16 rows: 8 + 8, not 12 + 4), so
        // that no tile is left with too few FMA chains to hide their latency.
        const int64_t rows = r_end - r0;
        const int64_t tiles = (rows + V::kTileRows - 1) / V::kTileRows;
        for (int64_t t = 0, r = r0; t < tiles; ++t) {
          const int64_t height = rows / tiles + (t < rows % tiles ? 1 : 0);
          const T* next = t == 0 && p + 1 < p_end ? panel + k_total * kPanelWidth : nullptr;
          tile_any_rows<V, W>(height, x + r * k_total, k_total, panel, next, k0, kc, cols, k0 > 0,
                              y + r * ldy + p * kPanelWidth, ldy);
          r += height;
        }
      }
    }
  }
}

}  // namespace vllm::kernels::cpu::blocks
