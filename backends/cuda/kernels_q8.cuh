// The CUDA kernels of grouped int8 GPT-2 (docs/arithmetic.md §7): the
// embedding lookup that dequantizes (§7.4), the quantization of a
// position's projection input (§7.2, LayerNorm fused in front where the
// input is one) and the int8 product (§7.3) on the §7.6 panel layout as
// stored in the file. Everything else (attention, LayerNorm, GELU, the
// residual stream, the cache) is the binary32 kernels of kernels.cuh.
//
// Exactness: the group sums are exact 32-bit integer sums (__dp4a on the
// words of four consecutive k of one output that §7.6 stores), so their
// order is free; the floating-point part of every output is computed as
// §7.3 says, by one thread: t[g] = float(isum) * (sx[g] * sw[o][g]), then
// acc = +0.0, acc + t[0], acc + t[1], ... in g order, then + bias. Division
// is __fdiv_rn, rounding to the nearest integer ties-to-even is
// __float2int_rn after the clamp (§7.2 step 5), bfloat16 scales widen by a
// 16-bit shift (§7.1).
#ifndef LOCKSTEP_BACKENDS_CUDA_KERNELS_Q8_CUH_
#define LOCKSTEP_BACKENDS_CUDA_KERNELS_Q8_CUH_

#include <cstddef>
#include <cstdint>

#include "backends/cuda/kernels.cuh"

namespace lockstep::backends::cuda {
inline namespace LS_CUDA_VARIANT {

constexpr int kQ8Group = 64;  // §7.0
constexpr int kQ8Panel = 64;  // §7.6
// Output columns of one block of the int8 product (half a panel: one lane
// per column).
constexpr int kQ8Cols = 32;

// §7.1: the binary32 whose bits are b << 16.
__device__ __forceinline__ float widen_bf16(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// §7.6: where panel `p`'s group g block starts, for a matrix M [K, N]
// (bytes from the matrix's start), and its width pw.
__device__ __forceinline__ size_t q8_block_at(int K, int N, int c0, int g,
                                              int* pw) {
  const int G = K / kQ8Group;
  *pw = min(kQ8Panel, N - c0);
  return static_cast<size_t>(c0) * static_cast<size_t>(K + 2 * G) +
         static_cast<size_t>(g) * static_cast<size_t>(kQ8Group + 2) *
             static_cast<size_t>(*pw);
}

// §7.4: the embeddings of n positions (one block each): x[i] =
// float(qte[tok][i]) * ste[tok][g] + float(qpe[pos][i]) * spe[pos][g],
// g = i / 64: two exact products and one sum. te: wte^T [C, V] at the
// weights' start; pe: wpe^T [C, n_ctx]. Clears the non-finite flag.
__global__ void embed_q8_kernel(const uint8_t* __restrict__ te,
                                const uint8_t* __restrict__ pe, int C, int V,
                                int T, const int* __restrict__ info, float* x,
                                int* flag) {
  pdl_launch_dependents();
  pdl_wait();
  const int t = blockIdx.x;
  const int token = info[Info::kTokens + t];
  const int pos = row_position(info, t);
  float* xr = x + static_cast<size_t>(t) * C;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    const int g = i / kQ8Group, kk = i % kQ8Group;
    int pwt, pwp;
    const int ct = token / kQ8Panel * kQ8Panel, cp = pos / kQ8Panel * kQ8Panel;
    const size_t bt = q8_block_at(C, V, ct, g, &pwt);
    const size_t bp = q8_block_at(C, T, cp, g, &pwp);
    const int jt = token - ct, jp = pos - cp;
    const float qt = static_cast<float>(static_cast<int8_t>(
        te[bt + static_cast<size_t>(((kk / 4) * pwt + jt) * 4 + kk % 4)]));
    const float qp = static_cast<float>(static_cast<int8_t>(
        pe[bp + static_cast<size_t>(((kk / 4) * pwp + jp) * 4 + kk % 4)]));
    const uint8_t* st = te + bt + kQ8Group * pwt + 2 * jt;
    const uint8_t* sp = pe + bp + kQ8Group * pwp + 2 * jp;
    const float s_t = widen_bf16(static_cast<uint16_t>(st[0] | st[1] << 8));
    const float s_p = widen_bf16(static_cast<uint16_t>(sp[0] | sp[1] << 8));
    xr[i] = __fadd_rn(__fmul_rn(qt, s_t), __fmul_rn(qp, s_p));
  }
  if (t == 0 && threadIdx.x == 0) *flag = 0;
}

// §7.2 for one position's input d[0..K) (in shared memory) by the whole
// block: each warp quantizes whole groups of 64: finite check, m = the
// largest magnitude (a maximum: any order gives the same value for finite
// inputs), s = m / 127, q = RNE(clamp(v / s)). q[0..K) and s[0..K/64) may
// be shared or global memory. Returns nonzero in the threads that saw a
// value that is not finite (then q and s are meaningless, and the product
// writes NaN in every output of the position, §7.2 step 1).
__device__ __forceinline__ int quantize_groups(const float* d, int K, int8_t* q,
                                               float* s) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  const int G = K / kQ8Group;
  int any_bad = 0;
  for (int grp = warp; grp < G; grp += warps) {
    const float v0 = d[grp * kQ8Group + lane];
    const float v1 = d[grp * kQ8Group + 32 + lane];
    any_bad |= !(__fsub_rn(v0, v0) == 0.0f) || !(__fsub_rn(v1, v1) == 0.0f);
    const float a0 = fabsf(v0), a1 = fabsf(v1);
    float m = a0 > a1 ? a0 : a1;
#pragma unroll
    for (int h = 16; h >= 1; h /= 2) {
      const float o = __shfl_xor_sync(0xffffffffu, m, h);
      m = o > m ? o : m;
    }
    const float sg = __fdiv_rn(m, 127.0f);
    int q0 = 0, q1 = 0;
    if (sg != 0.0f) {
      float r0 = __fdiv_rn(v0, sg), r1 = __fdiv_rn(v1, sg);
      r0 = r0 > 127.0f ? 127.0f : r0;
      r0 = r0 < -127.0f ? -127.0f : r0;
      r1 = r1 > 127.0f ? 127.0f : r1;
      r1 = r1 < -127.0f ? -127.0f : r1;
      q0 = __float2int_rn(r0);
      q1 = __float2int_rn(r1);
    }
    q[grp * kQ8Group + lane] = static_cast<int8_t>(q0);
    q[grp * kQ8Group + 32 + lane] = static_cast<int8_t>(q1);
    if (lane == 0) s[grp] = sg;
  }
  return any_bad;
}

// §7.2 for the n positions of x [n][K] (one block per position, 256
// threads): with kLn the input is LayerNorm(x; g, b) (§2.3, K = C),
// computed into shared memory first, then quantize_groups. Writes qx
// [n][K] (int8), sx [n][K / 64] and bad[t] = 1 when some input of position
// t is not finite. Dynamic shared memory: K floats.
template <bool kLn>
__global__ void __launch_bounds__(256)
    quantize_q8_kernel(const float* x, const float* __restrict__ g,
                       const float* __restrict__ gb, int K,
                       int8_t* __restrict__ qx, float* __restrict__ sx,
                       int* __restrict__ bad) {
  extern __shared__ float d[];
  __shared__ int bad_s;
  pdl_launch_dependents();
  LnPre lnp;
  if (kLn) ln_preload(g, gb, K, lnp);
  pdl_wait();
  const int t = blockIdx.x;
  const float* xr = x + static_cast<size_t>(t) * K;
  if (threadIdx.x == 0) bad_s = 0;
  if (kLn) {
    layernorm_row(xr, g, gb, K, d, lnp);  // syncs after bad_s's store
  } else {
    for (int k = threadIdx.x; k < K; k += blockDim.x) d[k] = xr[k];
  }
  __syncthreads();
  const int G = K / kQ8Group;
  if (quantize_groups(d, K, qx + static_cast<size_t>(t) * K,
                      sx + static_cast<size_t>(t) * G)) {
    bad_s = 1;  // every writer stores the same value
  }
  __syncthreads();
  if (threadIdx.x == 0) bad[t] = bad_s;
}

// Four int8 of row-word `idx` (a 32-bit word of four consecutive k of one
// output, §7.6) of a block at `blk`. Panels of even width keep every word
// 4-byte aligned; a last panel of odd width does not, and is read bytewise.
__device__ __forceinline__ int q8_word(const uint8_t* __restrict__ blk, int idx,
                                       bool aligned) {
  if (aligned) {
    return __ldg(reinterpret_cast<const int*>(blk) + idx);
  }
  const uint8_t* p = blk + 4 * idx;
  return static_cast<int>(
      static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
      static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24);
}

// What the int8 product does with an output beyond kernels.cuh's
// epilogues: the head's logits (stored; a non-finite one sets *flag).
constexpr int kLogitsQ8 = 4;

// The default quiet NaN, which the reference writes in every output of a
// position whose input is not finite (§7.2 step 1).
__device__ __forceinline__ float q8_nan() {
  return __uint_as_float(0x7FC00000u);
}

// §7.3 for positions [blockIdx.y * kP, + kP) of n and 32 output columns
// (blockIdx.x: half of a §7.6 panel, one lane per column) of M [K, N],
// y = x . M + bias (bias null: the head). Warp w computes, for groups g =
// w, w + warps, ..., the exact integer sums of its 32 columns with __dp4a
// (16 words of the column's group against the 16 words of the input's,
// staged in shared memory) for each of the kP positions, and t[g] =
// float(isum) * (sx[g] * sw[o][g]) into shared memory. Then warp p (p <
// kP) adds position p's t[0..G) of its lane's column in g order from +0.0,
// adds the bias and applies the epilogue. Dynamic shared memory:
// q8_matmul_smem(kP, K).
__host__ __device__ constexpr size_t q8_matmul_smem(int kP, int K) {
  return static_cast<size_t>(kP) * static_cast<size_t>(K) +               // qx
         static_cast<size_t>(kP) * static_cast<size_t>(K / 64) * 4 +      // sx
         static_cast<size_t>(kP) * static_cast<size_t>(K / 64) * 32 * 4;  // t
}

template <int kP, int kEpi>
__global__ void __launch_bounds__(512)
    q8_matmul_kernel(const int8_t* qx, const float* sx, const int* bad,
                     const uint8_t* __restrict__ m,
                     const float* __restrict__ bias, int n, int K, int N,
                     float* y, float* kv, size_t kv_row,
                     const int* __restrict__ info, int* flag) {
  extern __shared__ __align__(16) unsigned char q8sm[];
  const int G = K / kQ8Group;
  int* xw = reinterpret_cast<int*>(q8sm);                        // [kP][K / 4]
  float* sxs = reinterpret_cast<float*>(q8sm + size_t(kP) * K);  // [kP][G]
  float* tg = sxs + kP * G;                                      // [kP][G][32]
  pdl_launch_dependents();
  pdl_wait();
  const int t0 = blockIdx.y * kP;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  // Stage the kP positions' int8 inputs (as words) and scales.
  for (int i = threadIdx.x; i < kP * (K / 4); i += blockDim.x) {
    const int p = i / (K / 4), wi = i % (K / 4);
    xw[i] = t0 + p < n ? reinterpret_cast<const int*>(
                             qx + static_cast<size_t>(t0 + p) * K)[wi]
                       : 0;
  }
  for (int i = threadIdx.x; i < kP * G; i += blockDim.x) {
    const int p = i / G;
    sxs[i] = t0 + p < n ? sx[static_cast<size_t>(t0 + p) * G + i % G] : 0.0f;
  }
  __syncthreads();
  const int col0 = blockIdx.x * kQ8Cols;
  const int c0 = col0 / kQ8Panel * kQ8Panel;
  const int j = col0 - c0 + lane;  // column within the panel
  const int o = col0 + lane;
  const bool active = o < N;
  int pw = 0;
  (void)q8_block_at(K, N, c0, 0, &pw);
  const bool aligned = (pw % 2) == 0;
  if (active) {
    for (int grp = warp; grp < G; grp += warps) {
      int pwg;
      const uint8_t* blk = m + q8_block_at(K, N, c0, grp, &pwg);
      int wv[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) wv[i] = q8_word(blk, i * pw + j, aligned);
      const uint8_t* sp = blk + kQ8Group * pw + 2 * j;
      const float sw =
          widen_bf16(__ldg(reinterpret_cast<const unsigned short*>(sp)));
#pragma unroll
      for (int p = 0; p < kP; ++p) {
        const int4* xp =
            reinterpret_cast<const int4*>(xw + p * (K / 4) + grp * 16);
        int isum = 0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int4 xv = xp[i];
          isum = __dp4a(wv[4 * i + 0], xv.x, isum);
          isum = __dp4a(wv[4 * i + 1], xv.y, isum);
          isum = __dp4a(wv[4 * i + 2], xv.z, isum);
          isum = __dp4a(wv[4 * i + 3], xv.w, isum);
        }
        // §7.3 step 2: the scales' product, then times the exact sum.
        tg[(p * G + grp) * 32 + lane] =
            __fmul_rn(__int2float_rn(isum), __fmul_rn(sxs[p * G + grp], sw));
      }
    }
  }
  __syncthreads();
  if (warp >= kP || !active) return;
  const int t = t0 + warp;
  if (t >= n) return;
  float v;
  if (bad[t]) {
    v = q8_nan();
  } else {
    // §7.3 steps 3-4: in g order from +0.0, the bias last.
    float acc = 0.0f;
    const float* tp = tg + static_cast<size_t>(warp) * G * 32 + lane;
    for (int grp = 0; grp < G; ++grp) acc = __fadd_rn(acc, tp[grp * 32]);
    v = bias ? __fadd_rn(acc, bias[o]) : acc;
  }
  if (kEpi == kLogitsQ8) {
    y[static_cast<size_t>(t) * N + o] = v;
    if (!(__fsub_rn(v, v) == 0.0f)) *flag = 1;
  } else {
    epilogue<kEpi>(v, t, o, N, y, kv, kv_row, info);
  }
}

// The decode product (one position) with the quantization fused in front
// (same operations, same order as quantize_q8_kernel then
// q8_matmul_kernel<1>): every block quantizes the input itself into shared
// memory (kLn: LayerNorm(x; g, b) first, §2.3), so a projection is one
// launch. The weights do not depend on the input: each warp loads the
// words and scales of its first kPre groups before the LayerNorm and the
// quantization, so that their latency overlaps. 32 columns per block (one
// lane each), a warp per group (up to 16 warps). Dynamic shared memory:
// q8_fused_smem(K).
constexpr int kQ8Pre = 4;

__host__ __device__ constexpr size_t q8_fused_smem(int K) {
  return static_cast<size_t>(K) * 4 +           // x or LN(x)
         static_cast<size_t>(K) +               // qx
         static_cast<size_t>(K / 64) * 4 +      // sx
         static_cast<size_t>(K / 64) * 32 * 4;  // t
}

template <int kEpi, bool kLn>
__global__ void __launch_bounds__(512)
    q8_fused_kernel(const float* x, const float* __restrict__ g,
                    const float* __restrict__ gb, const uint8_t* __restrict__ m,
                    const float* __restrict__ bias, int K, int N, float* y,
                    float* kv, size_t kv_row, const int* __restrict__ info,
                    int* flag) {
  extern __shared__ __align__(16) unsigned char q8fs[];
  __shared__ int bad_s;
  const int G = K / kQ8Group;
  float* d = reinterpret_cast<float*>(q8fs);                     // [K]
  int8_t* qs = reinterpret_cast<int8_t*>(q8fs + size_t(K) * 4);  // [K]
  float* sxs = reinterpret_cast<float*>(q8fs + size_t(K) * 5);   // [G]
  float* tg = sxs + G;                                           // [G][32]
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  const int col0 = blockIdx.x * kQ8Cols;
  const int c0 = col0 / kQ8Panel * kQ8Panel;
  const int j = col0 - c0 + lane;
  const int o = col0 + lane;
  const bool active = o < N;
  const int pw = min(kQ8Panel, N - c0);
  const bool aligned = (pw % 2) == 0;
  pdl_launch_dependents();
  // The first kPre groups' weights, in flight during the quantization
  // (and, launched as a dependent, during the previous kernel's end).
  int wpre[kQ8Pre][16];
  float spre[kQ8Pre];
#pragma unroll
  for (int r = 0; r < kQ8Pre; ++r) {
    const int grp = warp + r * warps;
    if (active && grp < G) {
      int pwg;
      const uint8_t* blk = m + q8_block_at(K, N, c0, grp, &pwg);
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        wpre[r][i] = q8_word(blk, i * pw + j, aligned);
      }
      spre[r] = widen_bf16(__ldg(reinterpret_cast<const unsigned short*>(
          blk + kQ8Group * pw + 2 * j)));
    }
  }
  const float bo = bias && active && warp == 0 ? __ldg(bias + o) : 0.0f;
  LnPre lnp;
  if (kLn) ln_preload(g, gb, K, lnp);
  pdl_wait();
  const float resid = kEpi == kResidual && active && warp == 0 ? y[o] : 0.0f;
  if (threadIdx.x == 0) bad_s = 0;
  if (kLn) {
    layernorm_row(x, g, gb, K, d, lnp);
  } else {
    for (int k = threadIdx.x; k < K; k += blockDim.x) d[k] = x[k];
  }
  __syncthreads();
  if (quantize_groups(d, K, qs, sxs)) bad_s = 1;
  __syncthreads();
  const int* xw = reinterpret_cast<const int*>(qs);
  auto group_term = [&](int grp, const int(&wv)[16], float sw) {
    const int4* xp = reinterpret_cast<const int4*>(xw + grp * 16);
    int isum = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int4 xv = xp[i];
      isum = __dp4a(wv[4 * i + 0], xv.x, isum);
      isum = __dp4a(wv[4 * i + 1], xv.y, isum);
      isum = __dp4a(wv[4 * i + 2], xv.z, isum);
      isum = __dp4a(wv[4 * i + 3], xv.w, isum);
    }
    // §7.3 step 2: the scales' product, then times the exact sum.
    tg[grp * 32 + lane] =
        __fmul_rn(__int2float_rn(isum), __fmul_rn(sxs[grp], sw));
  };
  if (active) {
#pragma unroll
    for (int r = 0; r < kQ8Pre; ++r) {
      const int grp = warp + r * warps;
      if (grp < G) group_term(grp, wpre[r], spre[r]);
    }
    for (int grp = warp + kQ8Pre * warps; grp < G; grp += warps) {
      int pwg;
      const uint8_t* blk = m + q8_block_at(K, N, c0, grp, &pwg);
      int wv[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) wv[i] = q8_word(blk, i * pw + j, aligned);
      group_term(grp, wv,
                 widen_bf16(__ldg(reinterpret_cast<const unsigned short*>(
                     blk + kQ8Group * pw + 2 * j))));
    }
  }
  __syncthreads();
  if (warp != 0 || !active) return;
  float v;
  if (bad_s) {
    v = q8_nan();
  } else {
    // §7.3 steps 3-4: in g order from +0.0, the bias last.
    float acc = 0.0f;
    for (int grp = 0; grp < G; ++grp) acc = __fadd_rn(acc, tg[grp * 32 + lane]);
    v = bias ? __fadd_rn(acc, bo) : acc;
  }
  if (kEpi == kLogitsQ8) {
    y[o] = v;
    if (!(__fsub_rn(v, v) == 0.0f)) *flag = 1;
  } else {
    epilogue_r<kEpi>(v, 0, o, N, y, kv, kv_row, info, resid);
  }
}

}  // namespace LS_CUDA_VARIANT
}  // namespace lockstep::backends::cuda

#endif  // LOCKSTEP_BACKENDS_CUDA_KERNELS_Q8_CUH_
