// AVX-512 traits (16 binary32 lanes). Included only by kernels_avx512.cc,
// which is compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq. Every
// lane performs the scalar operation of docs/arithmetic.md: mul and add
// are separate instructions (no FMA intrinsic anywhere; the build's
// -ffp-contract=off keeps the compiler from fusing them).
#ifndef LOCKSTEP_BACKENDS_CPU_VEC_AVX512_H_
#define LOCKSTEP_BACKENDS_CPU_VEC_AVX512_H_

#include <immintrin.h>

#include "backends/cpu/vec_consts.h"

// Internal linkage: each ISA translation unit has its own copy, compiled
// with its own flags, so no inline function can be shared across them.
namespace lockstep::cpu {
namespace {

struct VecAvx512 {
  using reg = __m512;
  static constexpr int W = 16;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  // Lanes [0, n) from p, the rest +0.0 (nothing beyond p + n is read).
  static reg load_partial(const float* p, int n) {
    return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1u), p);
  }
  static void store_partial(float* p, reg v, int n) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << n) - 1u), v);
  }
  static reg set1(float x) { return _mm512_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  static float reduce_max(reg a) { return _mm512_reduce_max_ps(a); }
  // -a: flips the sign bit, as C's unary minus.
  static reg neg_(reg a) { return _mm512_xor_ps(a, set1(-0.0f)); }

  // §3.1 ls_exp32, lane by lane: the same operations, the three scaling
  // cases and the two range cases selected by masks.
  static reg exp(reg x) {
    using namespace exp32;
    const reg t = mul(x, set1(kInvLn2));
    const reg nf = sub(add(t, set1(kRounder)), set1(kRounder));
    const reg r = sub(sub(x, mul(nf, set1(kLn2Hi))), mul(nf, set1(kLn2Lo)));
    reg p = set1(kPoly[7]);
    for (int k = 6; k >= 0; --k) p = add(mul(p, r), set1(kPoly[k]));
    const __m512i n = _mm512_cvttps_epi32(nf);
    const __m512i bias = _mm512_set1_epi32(127);
    // 2^m from exponent bits, as ls_pow2_32: (m + 127) << 23.
    const reg s_mid =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, bias), 23));
    const reg s_big = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127 - 1)), 23));
    const reg s_small = _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_add_epi32(n, _mm512_set1_epi32(127 + 25)), 23));
    reg y = mul(p, s_mid);
    const __mmask16 big = _mm512_cmpgt_epi32_mask(n, _mm512_set1_epi32(127));
    const __mmask16 small = _mm512_cmplt_epi32_mask(n, _mm512_set1_epi32(-126));
    y = _mm512_mask_blend_ps(big, y, mul(mul(p, s_big), set1(2.0f)));
    y = _mm512_mask_blend_ps(small, y, mul(mul(p, s_small), set1(0x1p-25f)));
    const __mmask16 over = _mm512_cmp_ps_mask(x, set1(kOverflow), _CMP_GT_OQ);
    const __mmask16 under = _mm512_cmp_ps_mask(x, set1(kUnderflow), _CMP_LT_OQ);
    y = _mm512_mask_blend_ps(under, y, zero());
    y = _mm512_mask_blend_ps(
        over, y, _mm512_castsi512_ps(_mm512_set1_epi32(0x7f800000)));
    return y;
  }

  // §3.2 / §3.3 ls_gelu32, lane by lane.
  static reg gelu(reg x) {
    using namespace gelu32;
    const reg x3 = mul(mul(x, x), x);
    const reg u = mul(set1(kC), add(x, mul(set1(kA), x3)));
    const __mmask16 neg = _mm512_cmp_ps_mask(u, zero(), _CMP_LT_OQ);
    const reg a = _mm512_mask_blend_ps(neg, u, neg_(u));
    const reg e = exp(add(a, a));
    const reg t = sub(set1(1.0f), div(set1(2.0f), add(e, set1(1.0f))));
    const reg th = _mm512_mask_blend_ps(neg, t, neg_(t));
    return mul(mul(set1(0.5f), x), add(set1(1.0f), th));
  }

  // §2.1 for K = 64 (every GPT-2 head): lane b of the accumulator is block
  // b (elements 4b .. 4b+3), so the four products of a block are added in
  // order from +0.0 and the halving tree is a horizontal reduction.
  // split64: out[i] lane b = v[4b + i].
  static void split64(const float* v, reg* out) {
    const reg a0 = load(v), a1 = load(v + 16), a2 = load(v + 32),
              a3 = load(v + 48);
    for (int i = 0; i < 4; ++i) {
      const __m512i idx = _mm512_setr_epi32(
          i, 4 + i, 8 + i, 12 + i, 16 + i, 20 + i, 24 + i, 28 + i, i, 4 + i,
          8 + i, 12 + i, 16 + i, 20 + i, 24 + i, 28 + i);
      const reg lo = _mm512_permutex2var_ps(a0, idx, a1);
      const reg hi = _mm512_permutex2var_ps(a2, idx, a3);
      out[i] = _mm512_shuffle_f32x4(lo, hi, 0x44);
    }
  }
  static float dot64(const reg* q_split, const float* k) {
    reg kk[4];
    split64(k, kk);
    reg s = zero();
    for (int i = 0; i < 4; ++i) s = add(s, mul(q_split[i], kk[i]));
    // s[i] + s[i+8], then + 4, + 2, + 1.
    const __m256 t =
        _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
    const __m128 u =
        _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    const __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 1)));
  }
};

}  // namespace
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_VEC_AVX512_H_
