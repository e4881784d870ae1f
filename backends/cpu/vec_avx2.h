// AVX2 traits (8 binary32 lanes). Included only by kernels_avx2.cc, which
// is compiled with -mavx2 and without -mfma, so no fused multiply-add can
// be emitted at all. Every lane performs the scalar operation of
// docs/arithmetic.md.
#ifndef LOCKSTEP_BACKENDS_CPU_VEC_AVX2_H_
#define LOCKSTEP_BACKENDS_CPU_VEC_AVX2_H_

#include <immintrin.h>

#include "backends/cpu/vec_consts.h"

// Internal linkage: each ISA translation unit has its own copy, compiled
// with its own flags, so no inline function can be shared across them.
namespace lockstep::cpu {
namespace {

struct VecAvx2 {
  using reg = __m256;
  static constexpr int W = 8;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static __m256i lane_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  // Lanes [0, n) from p, the rest +0.0 (nothing beyond p + n is read).
  static reg load_partial(const float* p, int n) {
    return _mm256_maskload_ps(p, lane_mask(n));
  }
  static void store_partial(float* p, reg v, int n) {
    _mm256_maskstore_ps(p, lane_mask(n), v);
  }
  static reg set1(float x) { return _mm256_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  static float reduce_max(reg a) {
    __m128 m =
        _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  // -a: flips the sign bit, as C's unary minus.
  static reg neg_(reg a) { return _mm256_xor_ps(a, set1(-0.0f)); }
  static reg blend(reg a, reg b, reg mask) {
    return _mm256_blendv_ps(a, b, mask);
  }

  // §3.1 ls_exp32, lane by lane (see VecAvx512::exp).
  static reg exp(reg x) {
    using namespace exp32;
    const reg t = mul(x, set1(kInvLn2));
    const reg nf = sub(add(t, set1(kRounder)), set1(kRounder));
    const reg r = sub(sub(x, mul(nf, set1(kLn2Hi))), mul(nf, set1(kLn2Lo)));
    reg p = set1(kPoly[7]);
    for (int k = 6; k >= 0; --k) p = add(mul(p, r), set1(kPoly[k]));
    const __m256i n = _mm256_cvttps_epi32(nf);
    const reg s_mid = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
    const reg s_big = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127 - 1)), 23));
    const reg s_small = _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_add_epi32(n, _mm256_set1_epi32(127 + 25)), 23));
    reg y = mul(p, s_mid);
    const reg big =
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(n, _mm256_set1_epi32(127)));
    const reg small =
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(-126), n));
    y = blend(y, mul(mul(p, s_big), set1(2.0f)), big);
    y = blend(y, mul(mul(p, s_small), set1(0x1p-25f)), small);
    y = blend(y, zero(), _mm256_cmp_ps(x, set1(kUnderflow), _CMP_LT_OQ));
    y = blend(y, _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000)),
              _mm256_cmp_ps(x, set1(kOverflow), _CMP_GT_OQ));
    return y;
  }

  // §3.2 / §3.3 ls_gelu32, lane by lane.
  static reg gelu(reg x) {
    using namespace gelu32;
    const reg x3 = mul(mul(x, x), x);
    const reg u = mul(set1(kC), add(x, mul(set1(kA), x3)));
    const reg neg = _mm256_cmp_ps(u, zero(), _CMP_LT_OQ);
    const reg a = blend(u, neg_(u), neg);
    const reg e = exp(add(a, a));
    const reg t = sub(set1(1.0f), div(set1(2.0f), add(e, set1(1.0f))));
    return mul(mul(set1(0.5f), x), add(set1(1.0f), blend(t, neg_(t), neg)));
  }

  // §2.1 for K = 64 (every GPT-2 head), as VecAvx512::dot64 with 8 lanes:
  // two registers of block sums, the first for blocks 0-7 and the second
  // for blocks 8-15. A 4x4 transpose inside each 128-bit half puts, in
  // lane p, element i of block pi(p), pi = (0 2 4 6 1 3 5 7) (plus 8 in
  // the second register), so each lane adds its block's four products in
  // order from +0.0. The §2.1 tree in that lane order: s[b] + s[b+8] is
  // the two registers lane by lane; + 4 pairs lanes (0,2) (1,3) (4,6)
  // (5,7); + 2 pairs lanes (0,1) and (4,5); + 1 adds lane 4 to lane 0.
  static constexpr int kSplitRegs = 8;
  // split64: out[4h + i] lane p = v[4 * (8h + pi(p)) + i].
  static void split64(const float* v, reg* out) {
    for (int h = 0; h < 2; ++h) {
      const float* w = v + 32 * h;
      const reg r0 = load(w), r1 = load(w + 8), r2 = load(w + 16),
                r3 = load(w + 24);
      const reg t0 = _mm256_unpacklo_ps(r0, r1),
                t1 = _mm256_unpackhi_ps(r0, r1);
      const reg t2 = _mm256_unpacklo_ps(r2, r3),
                t3 = _mm256_unpackhi_ps(r2, r3);
      out[4 * h + 0] = _mm256_shuffle_ps(t0, t2, 0x44);
      out[4 * h + 1] = _mm256_shuffle_ps(t0, t2, 0xEE);
      out[4 * h + 2] = _mm256_shuffle_ps(t1, t3, 0x44);
      out[4 * h + 3] = _mm256_shuffle_ps(t1, t3, 0xEE);
    }
  }
  static float dot64(const reg* q_split, const float* k) {
    reg kk[8];
    split64(k, kk);
    reg lo = zero(), hi = zero();
    for (int i = 0; i < 4; ++i) {
      lo = add(lo, mul(q_split[i], kk[i]));
      hi = add(hi, mul(q_split[4 + i], kk[4 + i]));
    }
    const reg t = add(lo, hi);
    const reg u = add(t, _mm256_permute_ps(t, 0x4E));
    const reg w = add(u, _mm256_permute_ps(u, 0xB1));
    return _mm_cvtss_f32(
        _mm_add_ss(_mm256_castps256_ps128(w), _mm256_extractf128_ps(w, 1)));
  }
};

}  // namespace
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_VEC_AVX2_H_
