// docs/arithmetic.md §3 in binary32 on the device: exp (§3.1), tanh (§3.2)
// and the tanh GELU (§3.3), with §3.4's NaN rule (a NaN comes out as it
// went in). Written from the spec, operation for operation as
// core/ls_arith.c's ls_exp32 / ls_tanh32 / ls_gelu32; compiled with
// --fmad=false, so each * and + is one correctly rounded operation, and
// the division is IEEE (-prec-div=true). tests/cuda_backend_test.cc
// compares these with the core's, bit for bit, on a dense grid of inputs.
#ifndef LOCKSTEP_BACKENDS_CUDA_ARITH32_CUH_
#define LOCKSTEP_BACKENDS_CUDA_ARITH32_CUH_

namespace lockstep::backends::cuda {

// 2^n from its exponent bits; n in [-126, 127].
__device__ __forceinline__ float pow2_32(int n) {
  return __uint_as_float(static_cast<unsigned>(n + 127) << 23);
}

__device__ __forceinline__ float exp32(float x) {
  if (x != x) return x;  // §3.4
  if (x > 0x1.62e42ep+6f) return __uint_as_float(0x7f800000u);
  if (x < -0x1.9fe368p+6f) return 0.0f;
  const float t = __fmul_rn(x, 0x1.715476p+0f);
  const float nf = __fsub_rn(__fadd_rn(t, 0x1.8p23f), 0x1.8p23f);
  const float r = __fsub_rn(__fsub_rn(x, __fmul_rn(nf, 0x1.62e400p-1f)),
                            __fmul_rn(nf, 0x1.7f7d1cp-20f));
  // Horner from c[7]: p = p * r + c[k] for k = 6 .. 0.
  float p = 0x1.a01a02p-13f;
  p = __fadd_rn(__fmul_rn(p, r), 0x1.6c16c2p-10f);
  p = __fadd_rn(__fmul_rn(p, r), 0x1.111112p-7f);
  p = __fadd_rn(__fmul_rn(p, r), 0x1.555556p-5f);
  p = __fadd_rn(__fmul_rn(p, r), 0x1.555556p-3f);
  p = __fadd_rn(__fmul_rn(p, r), 0x1.000000p-1f);
  p = __fadd_rn(__fmul_rn(p, r), 0x1.000000p+0f);
  p = __fadd_rn(__fmul_rn(p, r), 0x1.000000p+0f);
  const int n = static_cast<int>(nf);
  if (n > 127) return __fmul_rn(__fmul_rn(p, pow2_32(n - 1)), 2.0f);
  if (n < -126) return __fmul_rn(__fmul_rn(p, pow2_32(n + 25)), 0x1p-25f);
  return __fmul_rn(p, pow2_32(n));
}

__device__ __forceinline__ float tanh32(float x) {
  if (x != x) return x;  // §3.4
  const float a = x < 0.0f ? -x : x;
  const float e = exp32(__fadd_rn(a, a));
  const float t = __fsub_rn(1.0f, __fdiv_rn(2.0f, __fadd_rn(e, 1.0f)));
  return x < 0.0f ? -t : t;
}

__device__ __forceinline__ float gelu32(float x) {
  if (x != x) return x;  // §3.4
  const float x3 = __fmul_rn(__fmul_rn(x, x), x);
  const float u =
      __fmul_rn(0x1.988454p-1f, __fadd_rn(x, __fmul_rn(0x1.6e4e26p-5f, x3)));
  return __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, tanh32(u)));
}

}  // namespace lockstep::backends::cuda

#endif  // LOCKSTEP_BACKENDS_CUDA_ARITH32_CUH_
