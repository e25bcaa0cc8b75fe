// Compiled with -mavx512f; reached only through the dispatch table.  The
// quantized GEMM of gemm.h for decode's few rows: codes are read straight
// from the packed panels, turned into the numbers they stand for in
// registers and fed to each output's group chain in k order; at each group's
// end the chain joins the output's accumulator with the group's scale (and
// offset), as gemm.h defines.  Several panels at a time keep enough
// independent chains in flight while the codes stream from memory.
#include <immintrin.h>

// GCC 12 takes the _mm512_undefined_* sources of its own conversion
// intrinsics (vpmovsxbd, vcvtdq2ps) for definite uninitialised uses once
// they are inlined into the step-parameter loads; they are not ours.
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <algorithm>
#include <vector>

#include "kernels/cpu/avx512/avx512_vec.h"
#include "kernels/cpu/avx512/block_params_avx512.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/quant_params_dispatch.h"

namespace vllm::kernels::cpu {
namespace {

// Where group g's parameters are within a panel's: its own (`group`) and,
// for kSteps, its super-block's bases (`bases`).  Computed once per group
// for all panels, as offsets.
struct GroupAt {
  int64_t group = 0, bases = 0;
};
GroupAt group_at(const QuantFormat& f, int64_t base_bytes, int64_t g) {
  GroupAt at{base_bytes + g * f.group_param_bytes(), 0};
  if (f.params == QuantParams::kSteps) at.bases = f.bases_offset(g);
  return at;
}

// Parameter set `set` (0: scales, 1: offsets) of a group of the panel whose
// parameters start at `panel`, as two vectors (columns 0-15, 16-31).
template <QuantParams kParams>
inline __attribute__((always_inline)) void load_params(const uint8_t* panel, GroupAt at, int set, __m512 out[2]) {
  for (int64_t half = 0; half < 2; ++half)
    out[half] = load_group_params<kParams>(panel + at.group, panel + at.bases, set, half);
}

// One pair of k of a panel as FP32 codes: out[0], out[1] columns 0-15 and
// 16-31 at k; out[2], out[3] the same at k + 1.  `table` maps a nibble to
// its code (permutexvar reads only the low 4 bits of each lane's index).
template <QuantCodes kCodes>
void load_codes(const uint8_t* pair, __m512 table, __m512 out[4]) {
  if constexpr (kCodes == QuantCodes::kInt4) {
    // Two 16-byte loads, each widened straight from memory (one 32-byte
    // load cost an extra shuffle to reach its upper half).
    const __m512i low_columns = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pair)));
    const __m512i high_columns = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pair + 16)));
    out[0] = _mm512_permutexvar_ps(low_columns, table);
    out[1] = _mm512_permutexvar_ps(high_columns, table);
    out[2] = _mm512_permutexvar_ps(_mm512_srli_epi32(low_columns, 4), table);
    out[3] = _mm512_permutexvar_ps(_mm512_srli_epi32(high_columns, 4), table);
  } else if constexpr (kCodes == QuantCodes::kFp8) {
    for (int v = 0; v < 4; ++v) out[v] = Avx512::load_e4m3(pair + 16 * v, Avx512::kLanes);
  } else {
    for (int v = 0; v < 4; ++v) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair + 16 * v));
      out[v] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
    }
  }
}

// R rows against panels [p0, p0 + P); `sums`: row r's xsum of group g at
// r * groups + g (with offsets).
template <QuantCodes kCodes, QuantParams kParams, bool kOffsets, int R, int P>
void row_panels(const float* x, int64_t ldx, const PackedMatrix& w, __m512 table, const float* sums, int64_t p0,
                float* y, int64_t ldy) {
  const QuantFormat& f = w.quant;
  const int64_t k_total = w.cols, group = f.group_size, groups = k_total / group;
  constexpr int64_t kPairBytes = kCodes == QuantCodes::kInt4 ? kPanelWidth : 2 * kPanelWidth;
  constexpr int64_t kPrefetchBytes = 1024;
  const uint8_t* codes[P];
  const uint8_t* params[P];
  for (int i = 0; i < P; ++i) {
    codes[i] = w.data.as<uint8_t>() + (p0 + i) * f.panel_code_bytes(k_total);
    params[i] = w.group_params.as<uint8_t>() + (p0 + i) * f.panel_param_bytes(k_total);
  }
  __m512 acc[R][P][2];
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < P; ++i) acc[r][i][0] = acc[r][i][1] = _mm512_setzero_ps();
  }
  const int64_t base_bytes = f.panel_base_bytes(k_total);
  for (int64_t k0 = 0, g = 0; k0 < k_total; k0 += group, ++g) {
    __m512 partial[R][P][2];
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < P; ++i) partial[r][i][0] = partial[r][i][1] = _mm512_setzero_ps();
    }
    for (int64_t k = k0; k < k0 + group; k += 2) {
      __m512 xk[R][2];
      for (int r = 0; r < R; ++r) {
        xk[r][0] = _mm512_set1_ps(x[r * ldx + k]);
        xk[r][1] = _mm512_set1_ps(x[r * ldx + k + 1]);
      }
      for (int i = 0; i < P; ++i) {
        // A line 1 KiB ahead of each panel's codes: decode waits on their
        // loads, and this measured a few percent faster than the hardware
        // prefetchers alone (2 KiB no better).
        if (k / 2 * kPairBytes % 64 == 0) _mm_prefetch(codes[i] + k / 2 * kPairBytes + kPrefetchBytes, _MM_HINT_T0);
        __m512 cv[4];
        load_codes<kCodes>(codes[i] + k / 2 * kPairBytes, table, cv);
        for (int r = 0; r < R; ++r) {
          for (int v = 0; v < 4; ++v) partial[r][i][v % 2] = _mm512_fmadd_ps(xk[r][v / 2], cv[v], partial[r][i][v % 2]);
        }
      }
    }
    // The join, with the group's parameters loaded only now (registers).
    const GroupAt at = group_at(f, base_bytes, g);
    for (int i = 0; i < P; ++i) {
      __m512 scale[2], offset[2];
      load_params<kParams>(params[i], at, 0, scale);
      if constexpr (kOffsets) load_params<kParams>(params[i], at, 1, offset);
      for (int r = 0; r < R; ++r) {
        for (int h = 0; h < 2; ++h) {
          acc[r][i][h] = _mm512_fmadd_ps(scale[h], partial[r][i][h], acc[r][i][h]);
          if constexpr (kOffsets)
            acc[r][i][h] = _mm512_fmadd_ps(offset[h], _mm512_set1_ps(sums[r * groups + g]), acc[r][i][h]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < P; ++i) {
      const int64_t first = (p0 + i) * kPanelWidth;
      for (int v = 0; v < 2; ++v) {
        const int64_t count = std::clamp<int64_t>(w.rows - first - 16 * v, 0, 16);
        _mm512_mask_storeu_ps(y + r * ldy + first + 16 * v, static_cast<__mmask16>((1u << count) - 1u), acc[r][i][v]);
      }
    }
  }
}

// Panels [p_begin, p_end), P at a time while they last, then fewer.
template <QuantCodes kCodes, QuantParams kParams, bool kOffsets, int R, int P>
void over_panels(const float* x, int64_t ldx, const PackedMatrix& w, __m512 table, const float* sums, int64_t p_begin,
                 int64_t p_end, float* y, int64_t ldy) {
  int64_t p = p_begin;
  for (; p + P <= p_end; p += P) row_panels<kCodes, kParams, kOffsets, R, P>(x, ldx, w, table, sums, p, y, ldy);
  if constexpr (P > 1) {
    if (p < p_end) over_panels<kCodes, kParams, kOffsets, R, P - 1>(x, ldx, w, table, sums, p, p_end, y, ldy);
  }
}

template <QuantCodes kCodes, QuantParams kParams, bool kOffsets>
void few_rows(const float* x, int64_t m, const PackedMatrix& w, __m512 table, int64_t p_begin, int64_t p_end, float* y,
              int64_t ldy) {
  const int64_t k_total = w.cols, groups = k_total / w.quant.group_size;
  thread_local std::vector<float> sums;
  if constexpr (kOffsets) {
    sums.resize(static_cast<size_t>(m * groups));
    for (int64_t r = 0; r < m; ++r)
      quantized_group_sums(x + r * k_total, k_total, w.quant.group_size, sums.data() + r * groups);
  }
  // Four panels for one row (decode), two for two rows, one for three
  // (registers: each row and panel holds its accumulators and its group's
  // partial sums).
  switch (m) {
    case 1:
      return over_panels<kCodes, kParams, kOffsets, 1, 4>(x, k_total, w, table, sums.data(), p_begin, p_end, y, ldy);
    case 2:
      return over_panels<kCodes, kParams, kOffsets, 2, 2>(x, k_total, w, table, sums.data(), p_begin, p_end, y, ldy);
    default:
      return over_panels<kCodes, kParams, kOffsets, 3, 1>(x, k_total, w, table, sums.data(), p_begin, p_end, y, ldy);
  }
}

template <QuantCodes kCodes>
void code_pairs(const PackedMatrix& w, __m512 table, int64_t p, int64_t k0, int64_t kc, float* out) {
  constexpr int64_t kPairBytes = kCodes == QuantCodes::kInt4 ? kPanelWidth : 2 * kPanelWidth;
  const uint8_t* codes = w.data.as<uint8_t>() + p * w.quant.panel_code_bytes(w.cols);
  for (int64_t k = k0; k < k0 + kc; k += 2) {
    __m512 cv[4];
    load_codes<kCodes>(codes + k / 2 * kPairBytes, table, cv);
    for (int v = 0; v < 4; ++v) _mm512_store_ps(out + (k - k0 + v / 2) * kPanelWidth + 16 * (v % 2), cv[v]);
  }
}

// The nibble-to-code table of a 4-bit matrix (unused for 8-bit codes).
__m512 int4_table(const PackedMatrix& w) {
  const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.quant.int4_codes.data()));
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes));
}

// fn.template operator()<kCodes, kParams, kOffsets>() for w's format.
template <typename Fn>
void for_format(const PackedMatrix& w, Fn&& fn) {
  const QuantFormat& f = w.quant;
  auto with_params = [&]<QuantCodes kCodes, QuantParams kParams>() {
    return f.has_offsets ? fn.template operator()<kCodes, kParams, true>()
                         : fn.template operator()<kCodes, kParams, false>();
  };
  auto with_codes = [&]<QuantCodes kCodes>() {
    for_quant_params(f.params, [&]<QuantParams kParams>() { with_params.template operator()<kCodes, kParams>(); });
  };
  if (f.codes == QuantCodes::kInt8) return with_codes.template operator()<QuantCodes::kInt8>();
  if (f.codes == QuantCodes::kFp8) return with_params.template operator()<QuantCodes::kFp8, QuantParams::kF32>();
  with_codes.template operator()<QuantCodes::kInt4>();
}

}  // namespace

void avx512_code_panel(const PackedMatrix& w, int64_t p, int64_t k0, int64_t kc, float* out) {
  const __m512 table = int4_table(w);
  switch (w.quant.codes) {
    case QuantCodes::kInt8:
      return code_pairs<QuantCodes::kInt8>(w, table, p, k0, kc, out);
    case QuantCodes::kFp8:
      return code_pairs<QuantCodes::kFp8>(w, table, p, k0, kc, out);
    default:
      return code_pairs<QuantCodes::kInt4>(w, table, p, k0, kc, out);
  }
}

void avx512_quantized_few_rows(const float* x, int64_t m, const PackedMatrix& w, int64_t p_begin, int64_t p_end,
                               float* y, int64_t ldy) {
  if (m <= 0) return;
  const __m512 table = int4_table(w);
  for_format(w, [&]<QuantCodes kCodes, QuantParams kParams, bool kOffsets>() {
    few_rows<kCodes, kParams, kOffsets>(x, m, w, table, p_begin, p_end, y, ldy);
  });
}

}  // namespace vllm::kernels::cpu
