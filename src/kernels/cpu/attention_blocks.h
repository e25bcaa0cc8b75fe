// The attention of attention.h, written once for any vector ISA.  An ISA
// file defines a traits struct V and instantiates attend_row<V, T> for the
// KV cache's element type T (float, uint16_t BF16 or uint8_t FP8 E4M3):
//   V::Reg, V::kLanes, V::zero(), V::set1(float), V::load(const float*, count),
//   V::load_bf16(const uint16_t*, count) (widened exactly),
//   V::load_bf16_words(const uint16_t*, count, high): count 32-bit words, the
//   low (or high) BF16 of each widened,
//   V::load_e4m3(const uint8_t*, count) (widened exactly, e4m3_widening.h),
//   V::store(float*, Reg, count) (count <= kLanes lanes), V::add, V::sub,
//   V::mul, V::fmadd(a, b, c) = a * b + c, V::max, V::round (to nearest
//   even) and V::pow2(Reg n) = 2^n for integral n in [-126, 127];
//   V::kAttentionHeads, how many heads of a group share each key and value
//   load (as many as the registers hold; it changes no head's arithmetic).
#pragma once

#include <algorithm>
#include <limits>
#include <numeric>
#include <type_traits>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/vec_math.h"

namespace vllm::kernels::cpu::blocks {

// How each KV element type is read (attention.h, kernels.h have the layouts).
template <typename T>
struct KVLayout;

// F32 and FP8 caches: keys [head_dim][block_size], values in order, one
// element each (kernels.h); widen reads `count` consecutive ones as float32.
template <typename T, typename V>
typename V::Reg widen(const T* p, int64_t count) {
  if constexpr (std::is_same_v<T, float>) {
    return V::load(p, count);
  } else {
    return V::load_e4m3(p, count);
  }
}

template <typename T>
struct ElementLayout {
  static const T* key_column(const T* slice, int32_t j) { return slice + j; }
  // Dimension d of `count` consecutive keys from key_column.
  template <typename V>
  static typename V::Reg key_dim(const T* column, int32_t d, int32_t block_size, int64_t count) {
    return widen<T, V>(column + static_cast<int64_t>(d) * block_size, count);
  }
  // Dimensions d and d + 1.
  template <typename V>
  static void key_dims(const T* column, int32_t d, int32_t block_size, int64_t count, typename V::Reg& even,
                       typename V::Reg& odd) {
    even = key_dim<V>(column, d, block_size, count);
    odd = key_dim<V>(column, d + 1, block_size, count);
  }
  // Where a value row's vector of dimensions from `dim` is, and how to read it.
  struct ValueSpot {
    int64_t offset;
  };
  static ValueSpot value_spot(int32_t dim, int32_t) { return {dim}; }
  template <typename V>
  static typename V::Reg load_value(const T* row, const ValueSpot& spot, int64_t count) {
    return widen<T, V>(row + spot.offset, count);
  }
};

template <>
struct KVLayout<float> : ElementLayout<float> {};
template <>
struct KVLayout<uint8_t> : ElementLayout<uint8_t> {};

template <>
struct KVLayout<uint16_t> {
  static const uint16_t* key_column(const uint16_t* slice, int32_t j) { return slice + 2 * j; }
  template <typename V>
  static void key_dims(const uint16_t* column, int32_t d, int32_t block_size, int64_t count, typename V::Reg& even,
                       typename V::Reg& odd) {
    const uint16_t* words = column + static_cast<int64_t>(d / 2) * block_size * 2;
    even = V::load_bf16_words(words, count, false);
    odd = V::load_bf16_words(words, count, true);
  }
  enum class Kind { kInOrder, kLowWords, kHighWords };
  struct ValueSpot {
    int64_t offset;
    Kind kind;
  };
  // The word that holds dimension `dim` (attention.h's bf16_value_offset), and its half.
  static ValueSpot value_spot(int32_t dim, int32_t head_dim) {
    if (bf16_value_in_order(dim, head_dim)) return {dim, Kind::kInOrder};
    const int64_t element = bf16_value_offset(dim, head_dim);
    return {element - element % 2, element % 2 == 1 ? Kind::kHighWords : Kind::kLowWords};
  }
  template <typename V>
  static typename V::Reg load_value(const uint16_t* row, const ValueSpot& spot, int64_t count) {
    if (spot.kind == Kind::kInOrder) return V::load_bf16(row + spot.offset, count);
    return V::load_bf16_words(row + spot.offset, count, spot.kind == Kind::kHighWords);
  }
};

template <typename T>
struct RowGeometry {
  const AttentionRowArgs& a;
  int32_t chunk;  // keys per vector step: gcd(block_size, lanes), so a step never leaves its block

  const T* keys_at(int32_t pos) const {
    const T* slice =
        static_cast<const T*>(a.key_cache) + a.block_table[pos / a.block_size] * a.block_stride + a.head_offset;
    return KVLayout<T>::key_column(slice, pos % a.block_size);
  }
  const T* value_row(int32_t pos) const {
    return static_cast<const T*>(a.value_cache) + a.block_table[pos / a.block_size] * a.block_stride + a.head_offset +
           static_cast<int64_t>(pos % a.block_size) * a.head_dim;
  }
};

// Scores of NH heads' queries (q[h]) against NC consecutive chunks of keys
// starting at `pos`, into out[h]: per head and lane, an FMA chain over the
// even dimensions and one over the odd ones, summed, times the scale.  The
// heads share each key load.
template <typename V, int NH, int NC, typename T>
void score_chunks(const RowGeometry<T>& geo, const float* const* q, int32_t pos, float* const* out) {
  const AttentionRowArgs& a = geo.a;
  typename V::Reg even[NH][NC], odd[NH][NC];
  const T* keys[NC];
  for (int c = 0; c < NC; ++c) keys[c] = geo.keys_at(pos + c * geo.chunk);
  for (int h = 0; h < NH; ++h) {
    for (int c = 0; c < NC; ++c) even[h][c] = odd[h][c] = V::zero();
  }
  // Pairs of dimensions (a BF16 cache stores them in one word; head_dim is
  // even there); an odd head_dim's last dimension goes alone.
  const int32_t paired = a.head_dim / 2 * 2;
  for (int32_t d = 0; d < paired; d += 2) {
    typename V::Reg ke[NC], ko[NC];
    for (int c = 0; c < NC; ++c) KVLayout<T>::template key_dims<V>(keys[c], d, a.block_size, geo.chunk, ke[c], ko[c]);
    for (int h = 0; h < NH; ++h) {
      const typename V::Reg qe = V::set1(q[h][d]);
      for (int c = 0; c < NC; ++c) even[h][c] = V::fmadd(qe, ke[c], even[h][c]);
    }
    for (int h = 0; h < NH; ++h) {
      const typename V::Reg qo = V::set1(q[h][d + 1]);
      for (int c = 0; c < NC; ++c) odd[h][c] = V::fmadd(qo, ko[c], odd[h][c]);
    }
  }
  if constexpr (!std::is_same_v<T, uint16_t>) {
    if (paired < a.head_dim) {
      for (int h = 0; h < NH; ++h) {
        const typename V::Reg qe = V::set1(q[h][paired]);
        for (int c = 0; c < NC; ++c) {
          even[h][c] =
              V::fmadd(qe, KVLayout<T>::template key_dim<V>(keys[c], paired, a.block_size, geo.chunk), even[h][c]);
        }
      }
    }
  }
  const typename V::Reg scale = V::set1(a.scale);
  for (int h = 0; h < NH; ++h) {
    for (int c = 0; c < NC; ++c) {
      V::store(out[h] + c * geo.chunk, V::mul(V::add(even[h][c], odd[h][c]), scale), geo.chunk);
    }
  }
}

// For NG heads at once (sharing each value load): acc_g[dims] = acc_g * corr_g
// + sum over keys [lo, hi) of p_g[key] * value[key], in key order per lane;
// NV vectors of dimensions from `dim`.
// Interleaved: the NV vectors lie in whole 32-dimension blocks of a BF16
// value row, so which half of its words each reads is known at compile time.
template <typename V, int NG, int NV, typename T, bool Interleaved = false>
void accumulate_values(const RowGeometry<T>& geo, const float* const* p, const float* corr, int32_t tile, int32_t lo,
                       int32_t hi, float* const* acc, int32_t dim) {
  typename V::Reg o[NG][NV];
  int64_t count[NV];
  for (int v = 0; v < NV; ++v) count[v] = std::clamp<int64_t>(geo.a.head_dim - dim - v * V::kLanes, 0, V::kLanes);
  for (int g = 0; g < NG; ++g) {
    for (int v = 0; v < NV; ++v) o[g][v] = V::mul(V::load(acc[g] + dim + v * V::kLanes, count[v]), V::set1(corr[g]));
  }
  typename KVLayout<T>::ValueSpot spots[NV];
  for (int v = 0; v < NV; ++v) {
    spots[v] = KVLayout<T>::value_spot(dim + static_cast<int32_t>(v * V::kLanes), geo.a.head_dim);
  }
  for (int32_t pos = lo; pos < hi; ++pos) {
    const T* row = geo.value_row(pos);
    typename V::Reg values[NV];
    if constexpr (Interleaved) {
      // dim is a multiple of 32 here, so which half vector v reads is known at compile time.
      for (int v = 0; v < NV; ++v) {
        values[v] = V::load_bf16_words(row + spots[v].offset, V::kLanes, v * V::kLanes % 32 >= 16);
      }
    } else {
      for (int v = 0; v < NV; ++v) values[v] = KVLayout<T>::template load_value<V>(row, spots[v], count[v]);
    }
    for (int g = 0; g < NG; ++g) {
      const typename V::Reg weight = V::set1(p[g][pos - tile]);
      for (int v = 0; v < NV; ++v) o[g][v] = V::fmadd(weight, values[v], o[g][v]);
    }
  }
  for (int g = 0; g < NG; ++g) {
    for (int v = 0; v < NV; ++v) V::store(acc[g] + dim + v * V::kLanes, o[g][v], count[v]);
  }
}

template <typename V, int NG, typename T>
void accumulate_values_all_dims(const RowGeometry<T>& geo, const float* const* p, const float* corr, int32_t tile,
                                int32_t lo, int32_t hi, float* const* acc) {
  int32_t dim = 0;
  constexpr int32_t kGroup = 4 * V::kLanes;
  for (; dim + kGroup <= geo.a.head_dim; dim += kGroup) {
    if constexpr (std::is_same_v<T, uint16_t> && kGroup % 32 == 0) {
      if (dim + kGroup <= geo.a.head_dim / 32 * 32) {
        accumulate_values<V, NG, 4, T, true>(geo, p, corr, tile, lo, hi, acc, dim);
        continue;
      }
    }
    accumulate_values<V, NG, 4>(geo, p, corr, tile, lo, hi, acc, dim);
  }
  for (; dim < geo.a.head_dim; dim += V::kLanes) accumulate_values<V, NG, 1>(geo, p, corr, tile, lo, hi, acc, dim);
}

// f.template operator()<N>(g) for heads [g, g + N) covering [0, count): groups
// of M while they last, then one smaller group (a template argument, so that
// each group's registers are sized at compile time).
template <int M, typename F>
void for_head_groups(int32_t count, const F& f) {
  int32_t g = 0;
  for (; g + M <= count; g += M) f.template operator()<M>(g);
  if constexpr (M > 1) {
    if (g < count) for_head_groups<M - 1>(count - g, [&]<int N>(int32_t h) { f.template operator()<N>(g + h); });
  }
}

// Sum of s[lo, hi) as kSumParts interleaved partial sums (part k adds
// s[lo + k], s[lo + k + kSumParts], ... in order), then the parts added
// pairwise in a fixed tree: one order on every ISA, whether a vector holds
// 16, 8 or 1 of the parts, without one long chain of dependent additions.
// A lane past hi adds +0, which leaves a part (a sum of exponentials, never
// -0) as it is.
inline constexpr int kSumParts = 16;
template <typename V>
float sum_range(const float* s, int32_t lo, int32_t hi) {
  constexpr int kRegs = kSumParts / V::kLanes;
  typename V::Reg part[kRegs];
  for (int r = 0; r < kRegs; ++r) part[r] = V::zero();
  for (int32_t j = lo; j < hi; j += kSumParts) {
    for (int r = 0; r < kRegs; ++r) {
      const int64_t count = std::clamp<int64_t>(hi - j - r * V::kLanes, 0, V::kLanes);
      part[r] = V::add(part[r], V::load(s + j + r * V::kLanes, count));
    }
  }
  float parts[kSumParts];
  for (int r = 0; r < kRegs; ++r) V::store(parts + r * V::kLanes, part[r], V::kLanes);
  for (int width = kSumParts / 2; width >= 1; width /= 2) {
    for (int k = 0; k < width; ++k) parts[k] += parts[k + width];
  }
  return parts[0];
}

// Max of s[lo, hi) (-inf when empty), a vector of lanes at a time: the same
// value on every ISA, since max is exact in any order and a NaN score never
// replaces a number (V::max(score, m) keeps m, as std::max(m, score) does).
template <typename V>
float max_range(const float* s, int32_t lo, int32_t hi) {
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  typename V::Reg m = V::set1(kNone);
  int32_t j = lo;
  for (; j + V::kLanes <= hi; j += V::kLanes) m = V::max(V::load(s + j, V::kLanes), m);
  float lanes[V::kLanes];
  V::store(lanes, m, V::kLanes);
  float result = kNone;
  for (const float x : lanes) result = std::max(result, x);
  for (; j < hi; ++j) result = std::max(result, s[j]);
  return result;
}

// Members m = r * group + g: head g of row r.
template <typename V, typename T>
void attend_row(const AttentionRowArgs& a) {
  const RowGeometry<T> geo{a, std::gcd(a.block_size, static_cast<int32_t>(V::kLanes))};
  const int32_t group = a.group, hd = a.head_dim;
  const int32_t members = a.rows * group;
  const auto member_offset = [&](int32_t m) {
    return (m / group) * a.row_stride + static_cast<int64_t>(m % group) * hd;
  };
  const auto member_last_key = [&](int32_t m) { return a.last_key + m / group; };
  const int32_t last_key = a.last_key + a.rows - 1;                // of the last row
  float* scores = a.scratch;                                       // [members, kKeyTile]
  float* acc = scores + static_cast<int64_t>(members) * kKeyTile;  // [members, head_dim]
  float* run_max = acc + static_cast<int64_t>(members) * hd;       // [members]
  float* denom = run_max + members;                                // [members]
  float* corr = denom + members;  // [members]: a tile's rescaling of each member's running sums
  std::fill(acc, acc + static_cast<int64_t>(members) * hd, 0.0f);
  std::fill(run_max, run_max + members, -std::numeric_limits<float>::infinity());
  std::fill(denom, denom + members, 0.0f);

  for (int32_t tile = a.first_key - a.first_key % kKeyTile; tile <= last_key; tile += kKeyTile) {
    const int32_t lo = std::max(tile, a.first_key), hi = std::min(tile + kKeyTile, last_key + 1);
    const int32_t start = lo - (lo - tile) % geo.chunk;  // chunk-aligned within the tile
    const int32_t end = hi + (geo.chunk - (hi - tile) % geo.chunk) % geo.chunk;
    // Scores, V::kAttentionHeads members at a time sharing the key loads.
    for_head_groups<V::kAttentionHeads>(members, [&]<int N>(int32_t m0) {
      const float* q[N];
      float* s[N];
      for (int h = 0; h < N; ++h) {
        q[h] = a.q + member_offset(m0 + h);
        s[h] = scores + static_cast<int64_t>(m0 + h) * kKeyTile + (start - tile);
      }
      for (int32_t pos = start; pos < end;) {
        if (pos + 2 * geo.chunk <= end) {
          score_chunks<V, N, 2>(geo, q, pos, s);
          for (int h = 0; h < N; ++h) s[h] += 2 * geo.chunk;
          pos += 2 * geo.chunk;
        } else {
          score_chunks<V, N, 1>(geo, q, pos, s);
          for (int h = 0; h < N; ++h) s[h] += geo.chunk;
          pos += geo.chunk;
        }
      }
    });
    // The online softmax update of each member over its own keys of the
    // tile (soft-capped first, in scalar code every ISA shares: the same
    // bits everywhere); its keys past them weigh zero.
    for (int32_t m = 0; m < members; ++m) {
      float* s = scores + static_cast<int64_t>(m) * kKeyTile;
      const int32_t own_hi = std::min(hi, member_last_key(m) + 1);
      if (own_hi <= lo) {  // none of the tile's keys is this member's
        corr[m] = 1.0f;
        std::fill(s + (lo - tile), s + (hi - tile), 0.0f);
        continue;
      }
      if (a.softcap > 0) {
        for (int32_t j = lo; j < own_hi; ++j) s[j - tile] = a.softcap * std::tanh(s[j - tile] / a.softcap);
      }
      const float tile_max = max_range<V>(s, lo - tile, own_hi - tile);
      const float new_max = std::max(run_max[m], tile_max);
      corr[m] = run_max[m] == -std::numeric_limits<float>::infinity() ? 0.0f : exp_poly(run_max[m] - new_max);
      for (int32_t pos = start; pos < end; pos += geo.chunk) {
        float* sp = s + (pos - tile);
        V::store(sp, exp_lanes<V>(V::sub(V::load(sp, geo.chunk), V::set1(new_max))), geo.chunk);
      }
      std::fill(s + (own_hi - tile), s + (hi - tile), 0.0f);
      denom[m] = denom[m] * corr[m] + sum_range<V>(s, lo - tile, own_hi - tile);
      run_max[m] = new_max;
    }
    // Values, V::kAttentionHeads members at a time sharing the value loads.
    for_head_groups<V::kAttentionHeads>(members, [&]<int N>(int32_t m0) {
      const float* p[N];
      float* acc_m[N];
      for (int h = 0; h < N; ++h) {
        p[h] = scores + static_cast<int64_t>(m0 + h) * kKeyTile;
        acc_m[h] = acc + static_cast<int64_t>(m0 + h) * hd;
      }
      accumulate_values_all_dims<V, N>(geo, p, corr + m0, tile, lo, hi, acc_m);
    });
  }
  for (int32_t m = 0; m < members; ++m) {
    float* out = a.out + member_offset(m);
    for (int32_t d = 0; d < hd; ++d) out[d] = acc[m * hd + d] / denom[m] * a.value_scale;
  }
}

}  // namespace vllm::kernels::cpu::blocks
