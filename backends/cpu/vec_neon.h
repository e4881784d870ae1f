// NEON traits (AArch64 Advanced SIMD, 4 binary32 lanes). Included only by
// kernels_neon.cc, which is compiled for AArch64 targets alone. Every lane
// performs the scalar operation of docs/arithmetic.md: multiplies and adds
// are separate instructions (vmulq_f32, vaddq_f32; never vfmaq_f32 or
// vmlaq_f32, which some compilers lower to a fused fmla), and the build's
// -ffp-contract=off keeps the compiler from fusing them; the test
// backends_no_fma greps the object code for fmla/fmls/fmadd/fmsub/fnmadd/
// fnmsub. AArch64 vector arithmetic is IEEE 754 binary32 with
// round-to-nearest-even; Linux starts every thread with flush-to-zero off
// (FPCR.FZ = 0), so subnormals are kept as on x86-64.
#ifndef LOCKSTEP_BACKENDS_CPU_VEC_NEON_H_
#define LOCKSTEP_BACKENDS_CPU_VEC_NEON_H_

#include <arm_neon.h>

#include <cstdint>

#include "backends/cpu/vec_consts.h"

// Internal linkage: each ISA translation unit has its own copy, compiled
// with its own flags, so no inline function can be shared across them.
namespace lockstep::cpu {
namespace {

struct VecNeon {
  using reg = float32x4_t;
  using mask = uint32x4_t;
  static constexpr int W = 4;
  static reg zero() { return vdupq_n_f32(0.0f); }
  static reg load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, reg v) { vst1q_f32(p, v); }
  // Lanes [0, n) from p, the rest +0.0 (nothing beyond p + n is read).
  static reg load_partial(const float* p, int n) {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < n; ++i) t[i] = p[i];
    return vld1q_f32(t);
  }
  static void store_partial(float* p, reg v, int n) {
    float t[4];
    vst1q_f32(t, v);
    for (int i = 0; i < n; ++i) p[i] = t[i];
  }
  static reg set1(float x) { return vdupq_n_f32(x); }
  static reg add(reg a, reg b) { return vaddq_f32(a, b); }
  static reg sub(reg a, reg b) { return vsubq_f32(a, b); }
  static reg mul(reg a, reg b) { return vmulq_f32(a, b); }
  static reg div(reg a, reg b) { return vdivq_f32(a, b); }
  // b > a ? b : a lane by lane, as the generic traits (only the value of
  // the softmax maximum is used; kernels_impl.h softmax).
  static reg max(reg a, reg b) { return vbslq_f32(vcgtq_f32(b, a), b, a); }
  static float reduce_max(reg a) {
    float m = vgetq_lane_f32(a, 0);
    const float a1 = vgetq_lane_f32(a, 1), a2 = vgetq_lane_f32(a, 2),
                a3 = vgetq_lane_f32(a, 3);
    m = a1 > m ? a1 : m;
    m = a2 > m ? a2 : m;
    m = a3 > m ? a3 : m;
    return m;
  }
  // -a: flips the sign bit, as C's unary minus (fneg).
  static reg neg_(reg a) { return vnegq_f32(a); }
  // mask ? b : a, lane by lane.
  static reg blend(reg a, reg b, mask m) { return vbslq_f32(m, b, a); }

  // §3.1 ls_exp32, lane by lane: the same operations, the three scaling
  // cases and the two range cases selected by masks (as VecAvx2::exp).
  // n = (int)nf is fcvtzs, truncation toward zero like C's conversion;
  // nf is an integer in binary32 here, so it converts exactly.
  static reg exp(reg x) {
    using namespace exp32;
    const reg t = mul(x, set1(kInvLn2));
    const reg nf = sub(add(t, set1(kRounder)), set1(kRounder));
    const reg r = sub(sub(x, mul(nf, set1(kLn2Hi))), mul(nf, set1(kLn2Lo)));
    reg p = set1(kPoly[7]);
    for (int k = 6; k >= 0; --k) p = add(mul(p, r), set1(kPoly[k]));
    const int32x4_t n = vcvtq_s32_f32(nf);
    // 2^m from exponent bits, as ls_pow2_32: (m + 127) << 23.
    const reg s_mid =
        vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23));
    const reg s_big = vreinterpretq_f32_s32(
        vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127 - 1)), 23));
    const reg s_small = vreinterpretq_f32_s32(
        vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127 + 25)), 23));
    reg y = mul(p, s_mid);
    const mask big = vcgtq_s32(n, vdupq_n_s32(127));
    const mask small = vcltq_s32(n, vdupq_n_s32(-126));
    y = blend(y, mul(mul(p, s_big), set1(2.0f)), big);
    y = blend(y, mul(mul(p, s_small), set1(0x1p-25f)), small);
    y = blend(y, zero(), vcltq_f32(x, set1(kUnderflow)));
    y = blend(y, vreinterpretq_f32_u32(vdupq_n_u32(0x7f800000u)),
              vcgtq_f32(x, set1(kOverflow)));
    return y;
  }

  // §3.2 / §3.3 ls_gelu32, lane by lane.
  static reg gelu(reg x) {
    using namespace gelu32;
    const reg x3 = mul(mul(x, x), x);
    const reg u = mul(set1(kC), add(x, mul(set1(kA), x3)));
    const mask neg = vcltq_f32(u, zero());
    const reg a = blend(u, neg_(u), neg);
    const reg e = exp(add(a, a));
    const reg t = sub(set1(1.0f), div(set1(2.0f), add(e, set1(1.0f))));
    return mul(mul(set1(0.5f), x), add(set1(1.0f), blend(t, neg_(t), neg)));
  }

  // §2.1 for K = 64 (every GPT-2 head). vld4q_f32 de-interleaves 16
  // floats by 4, so for chunk c (elements 16c .. 16c+15) val[i] lane b
  // holds element 16c + 4b + i: lane b of chunk c's accumulator is block
  // 4c + b, and its four products are added in order from +0.0. The §2.1
  // tree: s[i] + s[i+8] is chunk 0 + chunk 2 and chunk 1 + chunk 3, + 4 is
  // their sum, + 2 the low half + the high half, + 1 the two lanes left.
  //
  // The kernels hold a query's "split" form in 4 registers per head
  // (kernels_impl.h attend), which is 16 floats: too few for 64 on NEON,
  // so split64 keeps the query's address in the first register and dot64
  // de-interleaves the query with the key (the query's 256 bytes stay in
  // L1 across positions).
  static void split64(const float* v, reg* out) {
    const uint64_t a = uint64_t(reinterpret_cast<uintptr_t>(v));
    out[0] = vreinterpretq_f32_u64(vdupq_n_u64(a));
    out[1] = out[2] = out[3] = zero();
  }
  static float dot64(const reg* q_split, const float* k) {
    const float* q = reinterpret_cast<const float*>(
        uintptr_t(vgetq_lane_u64(vreinterpretq_u64_f32(q_split[0]), 0)));
    reg s[4];
    for (int c = 0; c < 4; ++c) {
      const float32x4x4_t qq = vld4q_f32(q + 16 * c);
      const float32x4x4_t kk = vld4q_f32(k + 16 * c);
      reg acc = zero();
      acc = add(acc, mul(qq.val[0], kk.val[0]));
      acc = add(acc, mul(qq.val[1], kk.val[1]));
      acc = add(acc, mul(qq.val[2], kk.val[2]));
      acc = add(acc, mul(qq.val[3], kk.val[3]));
      s[c] = acc;
    }
    const reg u = add(add(s[0], s[2]), add(s[1], s[3]));
    const float32x2_t v = vadd_f32(vget_low_f32(u), vget_high_f32(u));
    return vget_lane_f32(v, 0) + vget_lane_f32(v, 1);
  }
};

}  // namespace
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_VEC_NEON_H_
