// Compiled with -mavx512f -mavx512bf16; reached only through the dispatch
// table.  BF16 weights fed to vdpbf16ps two k at a time, with the
// activations rounded to BF16: on CPUs whose dot-product unit runs at twice
// the FP32 FMA rate (AMD Zen 4) this is twice the arithmetic of widening.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_vec.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_blocks.h"

namespace vllm::kernels::cpu {
namespace {

// One step = k and k + 1 of a panel, read from the packed BF16 layout (two
// 64-byte k steps, columns c and c + 16 sharing a 32-bit lane) and
// interleaved so that each 32-bit lane holds one column's (k, k + 1) pair.
// The interleave permutes the columns within 128-bit lanes; to_columns and
// from_columns undo and redo that permutation on the accumulators.
struct BF16PairWeights {
  static constexpr int64_t kStepK = 2;
  using XElem = uint32_t;  // bf16(x[k]) | bf16(x[k + 1]) << 16, k even
  using WReg = __m512bh;

  static void convert(const float* x, int64_t k_total, uint32_t* out) {
    for (int64_t k = 0; k < k_total; k += 32) {
      const int64_t count = std::min<int64_t>(32, k_total - k);
      const __m512 lo = Avx512::load(x + k, std::min<int64_t>(16, count));
      const __m512 hi = count > 16 ? Avx512::load(x + k + 16, count - 16) : _mm512_setzero_ps();
      const __m512i pairs = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
      _mm512_mask_storeu_epi32(out + k / 2, Avx512::mask((count + 1) / 2), pairs);
    }
  }
  static __m512bh broadcast(const uint32_t* x) {
    return reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(*x)));
  }
  static void interleave(__m512i even, __m512i odd, __m512bh out[2]) {
    out[0] = reinterpret_cast<__m512bh>(_mm512_unpacklo_epi16(even, odd));
    out[1] = reinterpret_cast<__m512bh>(_mm512_unpackhi_epi16(even, odd));
  }
  static void load(const uint16_t* step, __m512bh out[2]) {
    interleave(_mm512_load_si512(step), _mm512_load_si512(step + kPanelWidth), out);
  }
  static void load_last(const uint16_t* step, __m512bh out[2]) {
    interleave(_mm512_load_si512(step), _mm512_setzero_si512(), out);
  }
  static __m512 madd(__m512bh x, __m512bh w, __m512 acc) { return _mm512_dpbf16_ps(acc, x, w); }
  // After interleave, 128-bit lane L of out[0] holds columns 4L, 4L+16,
  // 4L+1, 4L+17 and of out[1] columns 4L+2, 4L+18, 4L+3, 4L+19.
  static void to_columns(__m512 (&acc)[2]) {
    const __m512 a = acc[0], b = acc[1];
    acc[0] = _mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // columns 0-15
    acc[1] = _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));  // columns 16-31
  }
  static void from_columns(__m512 (&acc)[2]) {
    const __m512 low = acc[0], high = acc[1];
    acc[0] = _mm512_unpacklo_ps(low, high);
    acc[1] = _mm512_unpackhi_ps(low, high);
  }
};

}  // namespace

PackedGemmFn avx512_bf16_pair_gemm() { return blocks::packed_gemm<Avx512, BF16PairWeights, uint16_t>; }

}  // namespace vllm::kernels::cpu
