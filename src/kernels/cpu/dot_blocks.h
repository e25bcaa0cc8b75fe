// The blocked dot products of dot.h, written once for any vector ISA.  An
// ISA file defines a traits struct V and instantiates dot_block<V, ...>
// under its own compiler flags:
//   V::Reg, V::kLanes, V::kTileRows, V::kTileCols,
//   V::zero(), V::load(const float*), V::fmadd(a, b, c) = a * b + c,
//   V::add(a, b), V::reduce(Reg) -> float (a fixed order),
//   and weight loaders W::load(const T*) -> V::Reg, W::widen(T) -> float.
//
// Every output x . w is summed the same way: four accumulators, the a-th
// taking elements [4Lt + La, 4Lt + La + L) (L = kLanes) for t = 0, 1, ... in
// order; then L-element steps into the first; then ((a0 + a1) + (a2 + a3)),
// V::reduce and a scalar tail.  A single row computes the four accumulators
// in one pass, reading its weights front to back (decode: as fast as memory
// allows); a tile of several activation rows computes them one phase a at a
// time, so each weight vector feeds kTileRows FMAs and each activation
// vector kTileCols.  Same arithmetic either way: a row's result never
// depends on the batch around it.
#pragma once

#include <cstdint>

namespace vllm::kernels::cpu::blocks {

// The L-element steps after the last 4L-element block go into accumulator 0,
// then the reduction and the scalar tail.
template <typename V, typename W, typename T>
float finish_dot(const float* x, const T* w, int64_t k, int64_t i, typename V::Reg acc[4]) {
  for (; i + V::kLanes <= k; i += V::kLanes) acc[0] = V::fmadd(V::load(x + i), W::load(w + i), acc[0]);
  float sum = V::reduce(V::add(V::add(acc[0], acc[1]), V::add(acc[2], acc[3])));
  for (; i < k; ++i) sum += x[i] * W::widen(w[i]);
  return sum;
}

template <typename V, typename W, typename T>
float dot_row(const float* x, const T* w, int64_t k) {
  constexpr int64_t L = V::kLanes;
  typename V::Reg acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
  int64_t i = 0;
  for (; i + 4 * L <= k; i += 4 * L) {
    for (int a = 0; a < 4; ++a) acc[a] = V::fmadd(V::load(x + i + L * a), W::load(w + i + L * a), acc[a]);
  }
  return finish_dot<V, W>(x, w, k, i, acc);
}

// R activation rows x N weight rows, phase by phase.
template <typename V, typename W, int R, int N, typename T>
void dot_tile(const float* x, const T* w, int64_t k, float* y, int64_t ldy) {
  constexpr int64_t L = V::kLanes;
  const int64_t blocks_end = k / (4 * L) * (4 * L);
  typename V::Reg acc[R][N][4];
  for (int a = 0; a < 4; ++a) {
    typename V::Reg phase[R][N];
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < N; ++j) phase[r][j] = V::zero();
    }
    for (int64_t i = L * a; i < blocks_end; i += 4 * L) {
      typename V::Reg xv[R];
      for (int r = 0; r < R; ++r) xv[r] = V::load(x + r * k + i);
      for (int j = 0; j < N; ++j) {
        const typename V::Reg wv = W::load(w + j * k + i);
        for (int r = 0; r < R; ++r) phase[r][j] = V::fmadd(xv[r], wv, phase[r][j]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < N; ++j) acc[r][j][a] = phase[r][j];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < N; ++j) y[r * ldy + j] = finish_dot<V, W>(x + r * k, w + j * k, k, blocks_end, acc[r][j]);
  }
}

// Up to kTileRows activation rows against `cols` (<= kTileCols) weight rows.
template <typename V, typename W, int R, typename T>
void dot_tile_rows(const float* x, const T* w, int64_t cols, int64_t k, float* y, int64_t ldy) {
  if constexpr (R == 1) {
    for (int64_t c = 0; c < cols; ++c) y[c] = dot_row<V, W>(x, w + c * k, k);
  } else if (cols == V::kTileCols) {
    dot_tile<V, W, R, V::kTileCols>(x, w, k, y, ldy);
  } else {
    // Fewer weight rows than a tile (the block's last ones): one at a time.
    for (int64_t c = 0; c < cols; ++c) dot_tile<V, W, R, 1>(x, w + c * k, k, y + c, ldy);
  }
}

template <typename V, typename W, int R = V::kTileRows, typename T>
void dot_tile_any_rows(int64_t rows, const float* x, const T* w, int64_t cols, int64_t k, float* y, int64_t ldy) {
  if constexpr (R == 1) {
    dot_tile_rows<V, W, 1>(x, w, cols, k, y, ldy);
  } else {
    if (rows >= R) return dot_tile_rows<V, W, R>(x, w, cols, k, y, ldy);
    dot_tile_any_rows<V, W, R - 1>(rows, x, w, cols, k, y, ldy);
  }
}

// Activation rows in panels of about 100 KiB (kept in L2) outermost, so the
// block's weight rows are streamed once per panel rather than the
// activations once per kTileCols weight rows; within a panel, kTileCols
// weight rows stay in L1 while its rows pass under them.
template <typename V, typename W, typename T>
void dot_block(const float* x, int64_t m, const T* w, int64_t n, int64_t k, float* y, int64_t ldy) {
  if (m == 1) {
    for (int64_t j = 0; j < n; ++j) y[j] = dot_row<V, W>(x, w + j * k, k);
    return;
  }
  constexpr int64_t kPanelRows = 16 * V::kTileRows;
  for (int64_t panel = 0; panel < m; panel += kPanelRows) {
    const int64_t panel_end = m - panel < kPanelRows ? m : panel + kPanelRows;
    for (int64_t j = 0; j < n; j += V::kTileCols) {
      const int64_t cols = n - j < V::kTileCols ? n - j : V::kTileCols;
      for (int64_t r = panel; r < panel_end; r += V::kTileRows) {
        dot_tile_any_rows<V, W>(panel_end - r, x + r * k, w + j * k, cols, k, y + r * ldy + j, ldy);
      }
    }
  }
}

}  // namespace vllm::kernels::cpu::blocks
