// The packed GEMM of gemm.h, written once for any vector ISA.  An ISA file
// defines a traits struct V and weight loaders W, and instantiates
// packed_gemm<V, W, T> under its own compiler flags:
//   V::Reg, V::kLanes, V::kTileRows (activation rows per register tile),
//   V::zero(), V::broadcast(const float*), V::fmadd(a, b, c) = a * b + c,
//   V::prefetch(const void*) (a hint: may do nothing),
//   V::load(const float*, int64_t count), V::store(float*, Reg, int64_t count)
//   (count < kLanes: only the first count lanes are read or written).
// W says how one step of every output's chain is taken:
//   W::kStepK, the k per step: 1, or 2 where a dot-product instruction takes
//   a pair of k at once;
//   W::XElem, one step of one activation row: a float, or for pairs a
//   uint32_t made by W::convert(const float* x, int64_t k_total, XElem* out);
//   W::load(const T* step, WReg out[kPanelWidth / kLanes]) loads one step of
//   a panel (W::load_last: the last step of an odd k, its second row absent);
//   W::madd(XReg x, WReg w, Reg acc) feeds the step of x = W::broadcast(const XElem*)
//   into the accumulators, and W::to_columns / W::from_columns turn them
//   into column order and back (identities unless the loads permute columns).
// WidenedSteps<V> is the W of the float32 chain: one k per step, FMAs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/packed_matrix.h"

namespace vllm::kernels::cpu::blocks {

// Rows of activations per block (their k slice stays in L2 while the
// thread's panels pass) and the k slice of a panel kept in L1 meanwhile.
inline constexpr int64_t kRowBlock = 192;
inline constexpr int64_t kDepthBlock = 512;

template <typename V>
struct WidenedSteps {
  static constexpr int64_t kStepK = 1;
  using XElem = float;
  using WReg = typename V::Reg;
  static typename V::Reg broadcast(const float* x) { return V::broadcast(x); }
  static typename V::Reg madd(typename V::Reg x, typename V::Reg w, typename V::Reg acc) { return V::fmadd(x, w, acc); }
  template <typename Reg, int NV>
  static void to_columns(Reg (&)[NV]) {}
  template <typename Reg, int NV>
  static void from_columns(Reg (&)[NV]) {}
  static void convert(const float*, int64_t, float*) {}
};

template <typename V>
constexpr int kVectorsPerPanel = static_cast<int>(kPanelWidth / V::kLanes);

// The panel's accumulators of one row, from y (in column order) or zero.
template <typename V, typename W>
void load_accumulators(const float* y, int64_t cols, bool resume, typename V::Reg (&acc)[kVectorsPerPanel<V>]) {
  constexpr int NV = kVectorsPerPanel<V>;
  for (int v = 0; v < NV; ++v) {
    const int64_t count = std::clamp<int64_t>(cols - v * V::kLanes, 0, V::kLanes);
    acc[v] = resume ? V::load(y + v * V::kLanes, count) : V::zero();
  }
  if (resume) W::from_columns(acc);
}

template <typename V, typename W>
void store_accumulators(typename V::Reg (&acc)[kVectorsPerPanel<V>], int64_t cols, float* y) {
  constexpr int NV = kVectorsPerPanel<V>;
  W::to_columns(acc);
  for (int v = 0; v < NV; ++v) {
    const int64_t count = std::clamp<int64_t>(cols - v * V::kLanes, 0, V::kLanes);
    V::store(y + v * V::kLanes, acc[v], count);
  }
}

// How a tile's rows leave it: stored to y (the default; `finish` below).
template <typename V, typename W>
struct StoreRows {
  void operator()(int64_t, typename V::Reg (&acc)[kVectorsPerPanel<V>], int64_t cols, float* y) const {
    store_accumulators<V, W>(acc, cols, y);
  }
};

// R rows x one panel over steps [s0, s0 + sc): the R x kPanelWidth
// accumulators live in registers; `resume` reloads them from y, which is how
// the chain continues across depth blocks unchanged.  `next` (or null) is
// the panel whose same steps come next: they are prefetched meanwhile, so
// that a small batch, whose tiles are few, does not wait on memory.
// `last_is_half`: the block's last step is the odd k's lone row (W::load_last).
// `finish(r, acc, cols, y + r * ldy)` takes row r's accumulators at the end.
template <typename V, typename W, int R, typename T, typename Finish = StoreRows<V, W>>
void tile(const typename W::XElem* x, int64_t ldx, const T* panel, const T* next, int64_t s0, int64_t sc,
          bool last_is_half, int64_t cols, bool resume, float* y, int64_t ldy, const Finish& finish = {}) {
  constexpr int NV = kVectorsPerPanel<V>;
  constexpr int64_t kStepElements = kPanelWidth * W::kStepK;
  typename V::Reg acc[R][NV];
  for (int r = 0; r < R; ++r) load_accumulators<V, W>(y + r * ldy, cols, resume, acc[r]);
  const typename W::XElem* xs = x + s0;
  const T* step = panel + s0 * kStepElements;
  const T* ahead = (next != nullptr ? next : panel) + s0 * kStepElements;
  auto take_step = [&](int64_t s, const auto& w) {
    for (int r = 0; r < R; ++r) {
      const auto xr = W::broadcast(xs + r * ldx + s);
      for (int v = 0; v < NV; ++v) acc[r][v] = W::madd(xr, w[v], acc[r][v]);
    }
  };
  const int64_t full_steps = last_is_half ? sc - 1 : sc;
  for (int64_t s = 0; s < full_steps; ++s, step += kStepElements, ahead += kStepElements) {
    for (int64_t line = 0; line < static_cast<int64_t>(sizeof(T)) * kStepElements; line += 64) {
      V::prefetch(reinterpret_cast<const char*>(ahead) + line);
    }
    typename W::WReg w[NV];
    W::load(step, w);
    take_step(s, w);
  }
  if constexpr (W::kStepK > 1) {
    if (last_is_half) {
      typename W::WReg w[NV];
      W::load_last(step, w);
      take_step(full_steps, w);
    }
  }
  for (int r = 0; r < R; ++r) finish(r, acc[r], cols, y + r * ldy);
}

// A tile of `rows` (<= R) rows.
template <typename V, typename W, int R = V::kTileRows, typename T, typename Finish = StoreRows<V, W>>
void tile_any_rows(int64_t rows, const typename W::XElem* x, int64_t ldx, const T* panel, const T* next, int64_t s0,
                   int64_t sc, bool last_is_half, int64_t cols, bool resume, float* y, int64_t ldy,
                   const Finish& finish = {}) {
  if constexpr (R == 1) {
    tile<V, W, 1>(x, ldx, panel, next, s0, sc, last_is_half, cols, resume, y, ldy, finish);
  } else {
    if (rows == R) return tile<V, W, R>(x, ldx, panel, next, s0, sc, last_is_half, cols, resume, y, ldy, finish);
    tile_any_rows<V, W, R - 1>(rows, x, ldx, panel, next, s0, sc, last_is_half, cols, resume, y, ldy, finish);
  }
}

// R activation rows (x_stride steps apart) against P panels at once:
// decode's one row, or the few rows of a mixture's expert.  R * P * NV
// independent chains keep the arithmetic units busy while the weights
// stream from memory (one panel's chain would wait on its own latency at
// every step), and each weight load feeds R rows.  Each output is the same
// chain of steps, in the same order, as in tile(), so a row's result does
// not depend on how many rows come with it.
template <typename V, typename W, int R, int P, typename T>
void row_panels(const typename W::XElem* x, int64_t x_stride, const T* w, int64_t k_total, int64_t n, int64_t p0,
                float* y, int64_t ldy) {
  constexpr int NV = kVectorsPerPanel<V>;
  constexpr int64_t kStepElements = kPanelWidth * W::kStepK;
  typename V::Reg acc[R][P][NV];
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < P; ++i) load_accumulators<V, W>(nullptr, 0, false, acc[r][i]);
  }
  // Several rows (a verification's, an expert's) wait on the arithmetic
  // of every step while its weights stream from memory: each panel's
  // lines are prefetched this far ahead, or the waiting multiplies fill
  // the core's queues and fewer loads are in flight.  A pass of 5 rows over
  // qwen2.5-0.5b measured 1.45-1.52x a decode step without, 1.27-1.44x with
  // 2-4 KiB (bench/spec/verify_cost, Zen 5); one row (decode) streams at
  // the read bandwidth without it.
  constexpr int64_t kRowsPrefetchBytes = 4096, kStepBytes = static_cast<int64_t>(sizeof(T)) * kStepElements;
  const int64_t stride = panel_stride(k_total);
  const T* panel = w + p0 * stride;
  const bool last_is_half = k_total % W::kStepK != 0;
  const int64_t full_steps = k_total / W::kStepK;
  auto take_step = [&](int64_t s, auto load) {
    typename W::WReg wv[P][NV];
    for (int i = 0; i < P; ++i) load(panel + i * stride + s * kStepElements, wv[i]);
    for (int r = 0; r < R; ++r) {
      const auto xr = W::broadcast(x + r * x_stride + s);
      for (int i = 0; i < P; ++i) {
        for (int v = 0; v < NV; ++v) acc[r][i][v] = W::madd(xr, wv[i][v], acc[r][i][v]);
      }
    }
  };
  for (int64_t s = 0; s < full_steps; ++s) {
    if constexpr (R > 1) {
      for (int i = 0; i < P; ++i) {
        const char* ahead = reinterpret_cast<const char*>(panel + i * stride + s * kStepElements) + kRowsPrefetchBytes;
        for (int64_t line = 0; line < kStepBytes; line += 64) V::prefetch(ahead + line);
      }
    }
    take_step(s, [](const T* at, typename W::WReg* wv) { W::load(at, wv); });
  }
  if constexpr (W::kStepK > 1) {
    if (last_is_half) take_step(full_steps, [](const T* at, typename W::WReg* wv) { W::load_last(at, wv); });
  }
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < P; ++i) {
      const int64_t first_col = (p0 + i) * kPanelWidth;
      store_accumulators<V, W>(acc[r][i], std::clamp<int64_t>(n - first_col, 0, kPanelWidth), y + r * ldy + first_col);
    }
  }
}

// Panels [p_begin, p_end) for R rows, P at a time while they last, then the rest together.
template <typename V, typename W, int R, int P, typename T>
void rows_over_panels(const typename W::XElem* x, int64_t x_stride, const T* w, int64_t k_total, int64_t n,
                      int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  int64_t p = p_begin;
  for (; p + P <= p_end; p += P) row_panels<V, W, R, P>(x, x_stride, w, k_total, n, p, y, ldy);
  if constexpr (P > 1) {
    if (p < p_end) rows_over_panels<V, W, R, P - 1>(x, x_stride, w, k_total, n, p, p_end, y, ldy);
  }
}

// Panels per pass: 4 for one row (decode's GEMV, measured best on every
// ISA), else as many as a register tile's accumulators allow for R rows, at most 4.
template <typename V, int R>
inline constexpr int kPanelsForRows = R == 1 ? 4 : std::clamp(V::kTileRows / R, 1, 4);

// rows_over_panels for m = R rows, R from the template's down to 1.
template <typename V, typename W, int R, typename T>
void few_rows(int64_t m, const typename W::XElem* x, int64_t x_stride, const T* w, int64_t k_total, int64_t n,
              int64_t p_begin, int64_t p_end, float* y, int64_t ldy) {
  if constexpr (R > 1) {
    if (m < R) return few_rows<V, W, R - 1>(m, x, x_stride, w, k_total, n, p_begin, p_end, y, ldy);
  }
  rows_over_panels<V, W, R, kPanelsForRows<V, R>>(x, x_stride, w, k_total, n, p_begin, p_end, y, ldy);
}

// Activation rows as W's steps: x itself for float steps, else converted
// into a per-thread buffer (a row block at a time, so that it stays small).
template <typename W>
const typename W::XElem* activation_steps(const float* x, int64_t rows, int64_t k_total) {
  if constexpr (std::is_same_v<typename W::XElem, float>) {
    (void)rows, (void)k_total;
    return x;
  } else {
    const int64_t steps = (k_total + W::kStepK - 1) / W::kStepK;
    thread_local std::vector<typename W::XElem> buffer;
    if (buffer.size() < static_cast<size_t>(rows * steps)) buffer.resize(static_cast<size_t>(rows * steps));
    for (int64_t r = 0; r < rows; ++r) W::convert(x + r * k_total, k_total, buffer.data() + r * steps);
    return buffer.data();
  }
}

template <typename V, typename W, typename T>
void packed_gemm(const float* x, int64_t m, const void* panels, int64_t k_total, int64_t n, int64_t p_begin,
                 int64_t p_end, float* y, int64_t ldy) {
  const T* w = static_cast<const T*>(panels);
  // Steps of the chain; an odd k with pairs ends on a lone row.
  const int64_t steps = (k_total + W::kStepK - 1) / W::kStepK;
  const bool odd_tail = k_total % W::kStepK != 0;
  const int64_t panel_elements = panel_stride(k_total);
  // Few rows (decode; a mixture's experts in a batch; a speculative
  // verification's 1 + k tokens): the weights streamed once, several panels
  // at a time.  Up to 8 rows on AVX-512: DecodeWeights batch 2-3 measured
  // 3-5% over the tiles, and a verification pass of 5 rows on the
  // qwen2.5-0.5b shape 1.39-1.50x a decode step against the tiles'
  // 1.70-1.82x (bench/spec/verify_cost, Zen 5); AVX2 keeps one row.
  constexpr int kFewRows = V::kTileRows >= 12 ? 8 : 1;
  if (m == 0) return;
  if (m <= std::max(kFewRows, 1)) {
    const typename W::XElem* xs = activation_steps<W>(x, m, k_total);
    return few_rows<V, W, std::max(kFewRows, 1)>(m, xs, steps, w, k_total, n, p_begin, p_end, y, ldy);
  }
  // Depth blocks of near-equal length (576 = 288 + 288, not 256 + 256 + 64), in steps.
  const int64_t block_steps = kDepthBlock / W::kStepK;
  const int64_t depth_blocks = (steps + block_steps - 1) / block_steps;
  const int64_t depth = (steps + depth_blocks - 1) / depth_blocks;
  for (int64_t r0 = 0; r0 < m; r0 += kRowBlock) {
    const int64_t r_end = std::min(m, r0 + kRowBlock);
    const typename W::XElem* xs = activation_steps<W>(x + r0 * k_total, r_end - r0, k_total);
    for (int64_t s0 = 0; s0 < steps; s0 += depth) {
      const int64_t sc = std::min(depth, steps - s0);
      const bool half = odd_tail && s0 + sc == steps;
      for (int64_t p = p_begin; p < p_end; ++p) {
        const T* panel = w + p * panel_elements;
        const int64_t cols = std::min(kPanelWidth, n - p * kPanelWidth);
        // Row tiles of near-equal height (16 rows: 8 + 8, not 12 + 4), so
        // that no tile is left with too few chains to hide their latency.
        const int64_t rows = r_end - r0;
        const int64_t tiles = (rows + V::kTileRows - 1) / V::kTileRows;
        for (int64_t t = 0, r = r0; t < tiles; ++t) {
          const int64_t height = rows / tiles + (t < rows % tiles ? 1 : 0);
          const T* next = t == 0 && p + 1 < p_end ? panel + panel_elements : nullptr;
          tile_any_rows<V, W>(height, xs + (r - r0) * steps, steps, panel, next, s0, sc, half, cols, s0 > 0,
                              y + r * ldy + p * kPanelWidth, ldy);
          r += height;
        }
      }
    }
  }
}

// A tile's finish that joins its rows' partial sums p of group g (an F32
// loader's, whose registers hold columns in order) to their outputs'
// accumulators, rows kPanelWidth apart in `acc`, as gemm.h's quantized
// arithmetic does: acc = fma(scale, p, acc) (from acc = 0 at the first
// group), then with offsets acc = fma(offset, xsum, acc); `sums`: each
// row's xsum of every group, `groups` apart (null without offsets).
template <typename V>
struct JoinGroup {
  static constexpr int NV = kVectorsPerPanel<V>;
  typename V::Reg scale[NV], offset[NV];
  const float* sums;
  int64_t groups, g;
  float* acc;

  JoinGroup(const PackedMatrix& w, int64_t p, int64_t group, const float* row_sums, int64_t sums_per_row,
            float* accumulators)
      : sums(row_sums), groups(sums_per_row), g(group), acc(accumulators) {
    alignas(64) float s[kPanelWidth], o[kPanelWidth] = {};
    group_params(w, p, g, 0, s);
    if (sums != nullptr) group_params(w, p, g, 1, o);
    for (int v = 0; v < NV; ++v) {
      scale[v] = V::load(s + v * V::kLanes, V::kLanes);
      offset[v] = V::load(o + v * V::kLanes, V::kLanes);
    }
  }
  // A tile of rows from `first` on: the same join, rows `first` further.
  JoinGroup from_row(int64_t first) const {
    JoinGroup j = *this;
    j.acc += first * kPanelWidth;
    if (j.sums != nullptr) j.sums += first * groups;
    return j;
  }
  void operator()(int64_t r, typename V::Reg (&partial)[NV], int64_t, float*) const {
    float* out = acc + r * kPanelWidth;
    for (int v = 0; v < NV; ++v) {
      auto a = g == 0 ? V::zero() : V::load(out + v * V::kLanes, V::kLanes);
      a = V::fmadd(scale[v], partial[v], a);
      if (sums != nullptr) a = V::fmadd(offset[v], V::broadcast(sums + r * groups + g), a);
      V::store(out + v * V::kLanes, a, V::kLanes);
    }
  }
};

// gemm.h's quantized GEMM by way of the F32 one: a panel's codes, as the
// numbers they stand for (`Codes`: code_panel or an ISA's own), into a
// per-thread F32 panel a group (or a depth block of one) at a time; the F32
// tiles over it (W: the ISA's F32 loader), each group's chain from zero,
// continued through its depth blocks in per-thread partial sums, and at its
// end joined (JoinGroup) to per-thread accumulators, which go to y once the
// panel's groups are done (y's rows are far apart: it is touched once).
template <typename V, typename W, auto Codes = code_panel>
void quantized_gemm(const float* x, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end, float* y,
                    int64_t ldy) {
  // Depth of a block of codes: 256 k of 32 floats (32 KiB) stay in L1.
  constexpr int64_t kCodeDepth = 256;
  constexpr size_t kRowBlockBytes = static_cast<size_t>(kRowBlock * kPanelWidth) * sizeof(float);
  thread_local AlignedBuffer codes(static_cast<size_t>(kCodeDepth * kPanelWidth) * sizeof(float));
  thread_local AlignedBuffer partial(kRowBlockBytes), acc(kRowBlockBytes);
  thread_local std::vector<float> sums;
  const int64_t k_total = w.cols, group = w.quant.group_size, groups = k_total / group;
  if (w.quant.has_offsets) {
    sums.resize(static_cast<size_t>(m * groups));
    for (int64_t r = 0; r < m; ++r) quantized_group_sums(x + r * k_total, k_total, group, sums.data() + r * groups);
  }
  for (int64_t r0 = 0; r0 < m; r0 += kRowBlock) {
    const int64_t rows = std::min(m, r0 + kRowBlock) - r0;
    const int64_t tiles = (rows + V::kTileRows - 1) / V::kTileRows;
    for (int64_t p = p_begin; p < p_end; ++p) {
      for (int64_t g = 0; g < groups; ++g) {
        const JoinGroup<V> join(w, p, g, w.quant.has_offsets ? sums.data() + r0 * groups : nullptr, groups,
                                acc.as<float>());
        for (int64_t k0 = g * group; k0 < (g + 1) * group; k0 += kCodeDepth) {
          const int64_t kc = std::min(kCodeDepth, (g + 1) * group - k0);
          const bool resume = k0 > g * group, last = k0 + kc == (g + 1) * group;
          Codes(w, p, k0, kc, codes.as<float>());
          for (int64_t t = 0, r = r0; t < tiles; ++t) {
            const int64_t height = rows / tiles + (t < rows % tiles ? 1 : 0);
            const float* xs = x + r * k_total + k0;
            float* partial_rows = partial.as<float>() + (r - r0) * kPanelWidth;
            if (last) {
              tile_any_rows<V, W>(height, xs, k_total, codes.as<float>(), static_cast<const float*>(nullptr), 0, kc,
                                  false, kPanelWidth, resume, partial_rows, kPanelWidth, join.from_row(r - r0));
            } else {
              tile_any_rows<V, W>(height, xs, k_total, codes.as<float>(), static_cast<const float*>(nullptr), 0, kc,
                                  false, kPanelWidth, resume, partial_rows, kPanelWidth);
            }
            r += height;
          }
        }
      }
      const int64_t cols = std::min(kPanelWidth, w.rows - p * kPanelWidth);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t v = 0; v < cols; v += V::kLanes) {
          V::store(y + (r0 + r) * ldy + p * kPanelWidth + v, V::load(acc.as<float>() + r * kPanelWidth + v, V::kLanes),
                   std::min(V::kLanes, cols - v));
        }
      }
    }
  }
}

}  // namespace vllm::kernels::cpu::blocks
