// The CUDA kernels of the GPT-2 forward (docs/arithmetic.md §6), each
// computing the spec's operations in the spec's order for every output:
// matrix products as 16 §2.1 block sums, each sequential in k from +0.0,
// combined by the halving tree, the bias last; LayerNorm (§2.3), softmax
// (§2.4), the weighted sum (§2.5) and GELU (§3.3). Parallelism comes only
// from independent outputs and from the 16 blocks of a dot product, never
// from re-associating a sum. Every + and * is __fadd_rn / __fmul_rn (and
// the file is compiled with --fmad=false as well), so no FMA can appear.
#ifndef LOCKSTEP_BACKENDS_CUDA_KERNELS_CUH_
#define LOCKSTEP_BACKENDS_CUDA_KERNELS_CUH_

#include <cstddef>

#include "backends/cuda/arith32.cuh"

// The kernels live in an inline namespace named by their variant, so that
// the exact kernels and the fast ones (LOCKSTEP_CUDA_FAST, below) can be
// linked into one program without their symbols meeting.
#ifdef LOCKSTEP_CUDA_FAST
#define LS_CUDA_VARIANT fast_kernels
#else
#define LS_CUDA_VARIANT exact_kernels
#endif

namespace lockstep::backends::cuda {
inline namespace LS_CUDA_VARIANT {

// acc + a * b. Exact (the default): the product rounded, then the sum
// (§1: no contraction). With LOCKSTEP_CUDA_FAST, the "cost of exactness"
// variant (backends/cuda/cuda_backend_fast.cu, docs/cuda.md): one fused
// multiply-add, rounded once, which the spec forbids. That variant is
// built only into the comparison benchmark and the test that shows it
// differs, never into the backend lockstep uses.
__device__ __forceinline__ float madd(float acc, float a, float b) {
#ifdef LOCKSTEP_CUDA_FAST
  return __fmaf_rn(a, b, acc);
#else
  return __fadd_rn(acc, __fmul_rn(a, b));
#endif
}

// §2.3: eps = 10^-5 rounded to binary32.
constexpr float kLnEps = 0x1.4f8b58p-17f;

// The device copy of a pass's positions and tokens: info[0] is the first
// position, info[1] the number of positions n, info[2] the distance in
// floats between the caches of a batch's sequences (0: one sequence),
// info[3 + t] token t. Kernels read positions from here rather than from
// their arguments, so that the decode step's launches can be captured once
// in a CUDA graph and replayed at any position. One sequence: row t is
// position info[0] + t. A batch (info[2] != 0): row t is sequence t, at
// position info[3 + n + t], its cache info[2] * t floats from the first.
struct Info {
  static constexpr int kFirst = 0, kCount = 1, kSeqStride = 2, kTokens = 3;
};

// Row t's position.
__device__ __forceinline__ int row_position(const int* info, int t) {
  return info[Info::kSeqStride] ? info[Info::kTokens + info[Info::kCount] + t]
                                : info[Info::kFirst] + t;
}

// Row t's cache, in floats from the first sequence's (0 for one sequence).
__device__ __forceinline__ size_t row_cache_offset(const int* info, int t) {
  return static_cast<size_t>(t) * static_cast<unsigned>(info[Info::kSeqStride]);
}

// §2.1's halving tree over 16 block sums held in registers: h = 8, 4, 2, 1,
// s[i] = s[i] + s[i + h] for i < h, written out (so the array stays in
// registers).
__device__ __forceinline__ float tree16(const float (&s)[16]) {
  const float t0 = __fadd_rn(s[0], s[8]), t1 = __fadd_rn(s[1], s[9]);
  const float t2 = __fadd_rn(s[2], s[10]), t3 = __fadd_rn(s[3], s[11]);
  const float t4 = __fadd_rn(s[4], s[12]), t5 = __fadd_rn(s[5], s[13]);
  const float t6 = __fadd_rn(s[6], s[14]), t7 = __fadd_rn(s[7], s[15]);
  const float u0 = __fadd_rn(t0, t4), u1 = __fadd_rn(t1, t5);
  const float u2 = __fadd_rn(t2, t6), u3 = __fadd_rn(t3, t7);
  return __fadd_rn(__fadd_rn(u0, u2), __fadd_rn(u1, u3));
}

// The same tree across the 16 lanes of a half warp (lane i holds s[i]):
// at each step lane i < h adds lane i + h's value, as s[i] = s[i] + s[i+h].
// Lanes >= h compute values nobody reads. The sum ends in lane 0 of the
// half warp. Every lane of the warp must call it.
__device__ __forceinline__ float tree16_lanes(float v) {
#pragma unroll
  for (int h = 8; h >= 1; h /= 2) {
    v = __fadd_rn(v, __shfl_down_sync(0xffffffffu, v, h, 16));
  }
  return v;
}

// Programmatic dependent launch (Hopper, docs/cuda.md): a kernel launched
// with cudaLaunchAttributeProgrammaticStreamSerialization may start while
// the kernel before it in the stream still runs. Each kernel here first
// lets its own successor start (pdl_launch_dependents), may load what no
// earlier kernel writes (the weights), then waits (pdl_wait) until every
// earlier kernel has finished and its writes are visible, before it reads
// or writes anything else. Launched without the attribute, the wait
// returns at once. Every kernel waits in every thread, so a kernel's
// completion still implies its predecessors'.
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// §6 embeddings for n positions (one block each): x = wte[token] +
// wpe[position]. Also clears the non-finite flag of the pass.
__global__ void embed_kernel(const float* __restrict__ w, size_t wpe_off, int C,
                             const int* __restrict__ info, float* x,
                             int* flag) {
  pdl_launch_dependents();
  pdl_wait();
  const int t = blockIdx.x;
  const int token = info[Info::kTokens + t];
  const int pos = row_position(info, t);
  const float* te = w + static_cast<size_t>(token) * C;
  const float* pe = w + wpe_off + static_cast<size_t>(pos) * C;
  float* xr = x + static_cast<size_t>(t) * C;
  for (int i = threadIdx.x; i < C; i += blockDim.x) {
    xr[i] = __fadd_rn(te[i], pe[i]);
  }
  if (t == 0 && threadIdx.x == 0) *flag = 0;
}

// §2.1's order for the sum of v[0..n) (LayerNorm's sums), or of v[k]*v[k]
// with `square`: computed by the first warp, the result in lane 0.
// Blocked (n a multiple of 16): lane b < 16 sums block b in k order from
// +0.0, then the tree across lanes; else lane 0 sums sequentially.
template <bool kSquare>
__device__ __forceinline__ float warp_ordered_sum(const float* v, int n) {
  const int lane = threadIdx.x & 31;
  float acc = 0.0f;
#ifdef LOCKSTEP_CUDA_FAST
  // The fast variant: 32 strided partial sums and a butterfly (not §2.1).
  for (int k = lane; k < n; k += 32) {
    acc = kSquare ? madd(acc, v[k], v[k]) : __fadd_rn(acc, v[k]);
  }
#pragma unroll
  for (int h = 16; h >= 1; h /= 2) {
    acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, h));
  }
  return acc;
#endif
  if (n % 16 == 0) {
    const int len = n / 16;
    if (lane < 16) {
      const float* p = v + lane * len;
      if (len == 48) {
        // GPT-2 124M (n = 768): unrolled, so that the loads run ahead of
        // the additions (the same additions in the same order).
#pragma unroll
        for (int k = 0; k < 48; ++k) {
          acc = __fadd_rn(acc, kSquare ? __fmul_rn(p[k], p[k]) : p[k]);
        }
      } else {
        for (int k = 0; k < len; ++k) {
          acc = __fadd_rn(acc, kSquare ? __fmul_rn(p[k], p[k]) : p[k]);
        }
      }
    }
    return tree16_lanes(acc);
  }
  if (lane == 0) {
    for (int k = 0; k < n; ++k) {
      acc = __fadd_rn(acc, kSquare ? __fmul_rn(v[k], v[k]) : v[k]);
    }
  }
  return acc;
}

// LayerNorm's gain and bias for this thread's first kLnPer elements (k =
// threadIdx.x + i * blockDim.x), loaded before pdl_wait: they are weights,
// so their loads overlap the previous kernel instead of following the
// LayerNorm's sums.
constexpr int kLnPer = 4;
struct LnPre {
  float g[kLnPer], b[kLnPer];
};
__device__ __forceinline__ void ln_preload(const float* __restrict__ g,
                                           const float* __restrict__ b, int C,
                                           LnPre& p) {
#pragma unroll
  for (int i = 0; i < kLnPer; ++i) {
    const int k = threadIdx.x + i * blockDim.x;
    p.g[i] = k < C ? __ldg(g + k) : 0.0f;
    p.b[i] = k < C ? __ldg(b + k) : 0.0f;
  }
}

// §2.3 LayerNorm of one row x[0..C) by the whole block (blockDim >= 32):
// x is staged in shared memory d[0..C) (one coalesced pass), the sums of
// §2.1's order are taken there by the first warp, and d ends holding
// y = (d * r) * g + b. The caller syncs before reading d.
__device__ __forceinline__ void layernorm_row(const float* x,
                                              const float* __restrict__ g,
                                              const float* __restrict__ b,
                                              int C, float* d,
                                              const LnPre& pre) {
  __shared__ float mean_s, r_s;
  const float n = static_cast<float>(C);
  for (int k = threadIdx.x; k < C; k += blockDim.x) d[k] = x[k];
  __syncthreads();
  if (threadIdx.x < 32) {
    const float sum = warp_ordered_sum<false>(d, C);
    if (threadIdx.x == 0) mean_s = __fdiv_rn(sum, n);
  }
  __syncthreads();
  const float mean = mean_s;
  for (int k = threadIdx.x; k < C; k += blockDim.x) {
    d[k] = __fsub_rn(d[k], mean);
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    const float ss = warp_ordered_sum<true>(d, C);
    if (threadIdx.x == 0) {
      const float var = __fdiv_rn(ss, n);
      r_s = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, kLnEps)));
    }
  }
  __syncthreads();
  const float r = r_s;
#pragma unroll
  for (int i = 0; i < kLnPer; ++i) {
    const int k = threadIdx.x + i * blockDim.x;
    if (k < C) {
      d[k] = __fadd_rn(__fmul_rn(__fmul_rn(d[k], r), pre.g[i]), pre.b[i]);
    }
  }
  for (int k = threadIdx.x + kLnPer * blockDim.x; k < C; k += blockDim.x) {
    d[k] = __fadd_rn(__fmul_rn(__fmul_rn(d[k], r), g[k]), b[k]);
  }
}

// §2.3 LayerNorm of n rows of C (one block per row; dynamic shared memory
// holds C floats).
__global__ void layernorm_kernel(const float* x, const float* __restrict__ g,
                                 const float* __restrict__ b, int C,
                                 float* __restrict__ y) {
  extern __shared__ float d[];
  pdl_launch_dependents();
  LnPre pre;
  ln_preload(g, b, C, pre);
  pdl_wait();
  layernorm_row(x + static_cast<size_t>(blockIdx.x) * C, g, b, C, d, pre);
  __syncthreads();
  float* yr = y + static_cast<size_t>(blockIdx.x) * C;
  for (int k = threadIdx.x; k < C; k += blockDim.x) yr[k] = d[k];
}

// §2.3 LayerNorm of n > 1 rows of C (C a multiple of 16; the default since
// 2026-12-02 evening, LOCKSTEP_CUDA_LN=1 keeps layernorm_kernel): one warp
// per row, kLnRows rows per block, no block
// barrier. The row is staged in the warp's shared memory, §2.1 block b (L
// = C / 16 floats; kL = L known at compile time, or 0) at b * (L + 1), so
// that lane b < 16 reads its block without bank conflicts; lane b sums
// block b in k order from +0.0, the tree across the lanes (both sums), and
// the same divisions, square root and y = (d * r) * g + b as
// layernorm_row. Dynamic shared memory: layernorm_rows_smem(C).
constexpr int kLnRows = 2;
inline size_t layernorm_rows_smem(int C) {
  return size_t(kLnRows) * 16 * size_t(C / 16 + 1) * sizeof(float);
}

template <int kL>
__global__ void __launch_bounds__(32 * kLnRows)
    layernorm_rows_kernel(const float* x, const float* __restrict__ g,
                          const float* __restrict__ b, int C, int n,
                          float* __restrict__ y) {
  extern __shared__ float lnsm[];
  pdl_launch_dependents();
  pdl_wait();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = blockIdx.x * kLnRows + warp;
  if (row >= n) return;  // the whole warp: no block barrier below
  const int L = kL ? kL : C / 16, P = L + 1;
  float* d = lnsm + warp * 16 * P;
  const float* xr = x + static_cast<size_t>(row) * C;
  // x is written by the kernels before: coherent loads.
  for (int k = lane; k < C; k += 32) d[(k / L) * P + k % L] = __ldcg(xr + k);
  __syncwarp();
  const float nf = static_cast<float>(C);
  const float* mine = d + (lane & 15) * P;
  float acc = 0.0f;
  if (lane < 16) {
#pragma unroll 16
    for (int k = 0; k < L; ++k) acc = __fadd_rn(acc, mine[k]);
  }
  acc = tree16_lanes(acc);
  const float mean = __fdiv_rn(__shfl_sync(0xffffffffu, acc, 0), nf);
  __syncwarp();
  for (int k = lane; k < C; k += 32) {
    float* e = d + (k / L) * P + k % L;
    *e = __fsub_rn(*e, mean);
  }
  __syncwarp();
  acc = 0.0f;
  if (lane < 16) {
#pragma unroll 16
    for (int k = 0; k < L; ++k) {
      acc = __fadd_rn(acc, __fmul_rn(mine[k], mine[k]));
    }
  }
  acc = tree16_lanes(acc);
  const float var = __fdiv_rn(__shfl_sync(0xffffffffu, acc, 0), nf);
  const float r = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(var, kLnEps)));
  float* yr = y + static_cast<size_t>(row) * C;
  for (int k = lane; k < C; k += 32) {
    yr[k] =
        __fadd_rn(__fmul_rn(__fmul_rn(d[(k / L) * P + k % L], r), g[k]), b[k]);
  }
}

// What a matrix product does with y = dot + bias for output (t, o).
enum Epilogue {
  kStore = 0,     // y[t][o] = v
  kGelu = 1,      // y[t][o] = gelu(v)
  kResidual = 2,  // y[t][o] = y[t][o] + v (the residual stream)
  kQkv = 3,       // y[t][o] = v, and the k | v part also to the cache row
};

// kv: this layer's slot in the (first sequence's) cache (cache + l * 2C),
// rows kv_row apart; row t at its position (row_position). N = 3C for kQkv.
template <int kEpi>
__device__ __forceinline__ void epilogue(float v, int t, int o, int N, float* y,
                                         float* kv, size_t kv_row,
                                         const int* info) {
  float* dst = y + static_cast<size_t>(t) * N + o;
  if (kEpi == kGelu) {
    *dst = gelu32(v);
  } else if (kEpi == kResidual) {
    *dst = __fadd_rn(*dst, v);
  } else {
    *dst = v;
  }
  if (kEpi == kQkv && kv) {
    const int C = N / 3;
    if (o >= C) {
      const size_t pos = static_cast<size_t>(row_position(info, t));
      kv[row_cache_offset(info, t) + pos * kv_row +
         static_cast<size_t>(o - C)] = v;
    }
  }
}

// epilogue with the residual stream's y[t][o] already loaded (resid; read
// early, after pdl_wait, rather than after the sum): for kResidual y[t][o]
// = resid + v, the same addition; the other epilogues ignore resid.
template <int kEpi>
__device__ __forceinline__ void epilogue_r(float v, int t, int o, int N,
                                           float* y, float* kv, size_t kv_row,
                                           const int* info, float resid) {
  if (kEpi == kResidual) {
    y[static_cast<size_t>(t) * N + o] = __fadd_rn(resid, v);
  } else {
    epilogue<kEpi>(v, t, o, N, y, kv, kv_row, info);
  }
}

// kN weights of column o from row k on (rows N apart) loaded first, all in
// flight, then added to acc in k order.
template <int kN>
__device__ __forceinline__ float add_rows(float acc, const float* xp,
                                          const float* __restrict__ wp, int k,
                                          int N) {
  float wv[kN];
#pragma unroll
  for (int u = 0; u < kN; ++u) {
    wv[u] = __ldg(wp + static_cast<size_t>(k + u) * N);
  }
#pragma unroll
  for (int u = 0; u < kN; ++u) {
    acc = madd(acc, xp[k + u], wv[u]);
  }
  return acc;
}

// §2.2 for one position (decode): y = x . W + b for input-major W [K][N].
// A block of 16 * kTo threads owns kTo consecutive outputs; thread
// (blk, o) sums §2.1 block blk of output o in k order (each warp reads
// rows of W coalesced, 48 rows in flight per thread), the 16 block sums
// meet in shared memory and the first kTo threads combine them in the
// tree, add the bias and apply the epilogue. K not a multiple of 16:
// thread (0, o) sums all of k. kLn: x is the residual stream and each
// block first computes LayerNorm(x; g, b) (§2.3, K = C) into shared
// memory (dynamic, K floats), the separate LayerNorm launch fused away.
template <int kTo, int kEpi, bool kLn>
__global__ void __launch_bounds__(16 * kTo)
    matvec_kernel(const float* x, const float* __restrict__ g,
                  const float* __restrict__ gb, const float* __restrict__ w,
                  const float* __restrict__ bias, int K, int N, float* y,
                  float* kv, size_t kv_row, const int* __restrict__ info) {
  extern __shared__ float xln[];
  __shared__ float part[16][kTo];
  const int ol = threadIdx.x % kTo;
  const int blk = threadIdx.x / kTo;
  const int o = blockIdx.x * kTo + ol;
  const int nb = (K % 16 == 0) ? 16 : 1;
  const int len = K / nb;
  const bool mine = o < N && blk < nb;
  pdl_launch_dependents();
  const float* wp = w + static_cast<size_t>(blk) * len * N + o;
  // The weights do not depend on x: the first 48 rows are loaded before
  // the LayerNorm, so that their latency overlaps it.
  constexpr int kPre = 48;
  float pre[kPre];
  const bool preloaded = mine && len >= kPre;
  if (preloaded) {
#pragma unroll
    for (int u = 0; u < kPre; ++u)
      pre[u] = __ldg(wp + static_cast<size_t>(u) * N);
  }
  // The bias and the LayerNorm's gain and bias are weights too.
  const bool finisher = blk == 0 && o < N;
  const float bo = finisher ? __ldg(bias + o) : 0.0f;
  LnPre lnp;
  if (kLn) ln_preload(g, gb, K, lnp);
  pdl_wait();
  // The residual stream's y[o], read now rather than after the sum.
  const float resid = kEpi == kResidual && finisher ? y[o] : 0.0f;
  const float* xs = x;
  if (kLn) {
    layernorm_row(x, g, gb, K, xln, lnp);
    __syncthreads();
    xs = xln;
  }
  float acc = 0.0f;
  if (mine) {
    const float* xp = xs + blk * len;
    int k = 0;
    if (preloaded) {
#pragma unroll
      for (int u = 0; u < kPre; ++u) {
        acc = madd(acc, xp[u], pre[u]);
      }
      k = kPre;
    }
    for (; k + 48 <= len; k += 48) acc = add_rows<48>(acc, xp, wp, k, N);
    for (; k + 16 <= len; k += 16) acc = add_rows<16>(acc, xp, wp, k, N);
    for (; k + 4 <= len; k += 4) acc = add_rows<4>(acc, xp, wp, k, N);
    for (; k < len; ++k) acc = add_rows<1>(acc, xp, wp, k, N);
  }
  part[blk][ol] = acc;
  __syncthreads();
  if (finisher) {
    float s;
    if (nb == 16) {
      float t[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) t[i] = part[i][ol];
      s = tree16(t);
    } else {
      s = part[0][ol];
    }
    epilogue_r<kEpi>(__fadd_rn(s, bo), 0, o, N, y, kv, kv_row, info, resid);
  }
}

// The decode product again (same operations, same order), with more
// loads in flight: x (or LayerNorm(x)) is staged in shared memory (dynamic,
// K floats), and each thread keeps two batches of 16 rows of W in
// registers, the next batch's loads issued before the current batch's
// additions. Chosen by LOCKSTEP_CUDA_MATVEC=2 (docs/cuda.md: measured
// slower than matvec_kernel on the H200).
template <int kTo, int kEpi, bool kLn>
__global__ void __launch_bounds__(16 * kTo)
    matvec2_kernel(const float* x, const float* __restrict__ g,
                   const float* __restrict__ gb, const float* __restrict__ w,
                   const float* __restrict__ bias, int K, int N, float* y,
                   float* kv, size_t kv_row, const int* __restrict__ info) {
  extern __shared__ float xsm[];
  __shared__ float part[16][kTo];
  pdl_launch_dependents();
  LnPre lnp;
  if (kLn) ln_preload(g, gb, K, lnp);
  pdl_wait();
  if (kLn) {
    layernorm_row(x, g, gb, K, xsm, lnp);
  } else {
    for (int k = threadIdx.x; k < K; k += blockDim.x) xsm[k] = x[k];
  }
  __syncthreads();
  const int ol = threadIdx.x % kTo;
  const int blk = threadIdx.x / kTo;
  const int o = blockIdx.x * kTo + ol;
  const int nb = (K % 16 == 0) ? 16 : 1;
  const int len = K / nb;
  float acc = 0.0f;
  if (o < N && blk < nb) {
    const float* wp = w + static_cast<size_t>(blk) * len * N + o;
    const float* xp = xsm + blk * len;
    const int main = len - len % 16;
    float cur[16], nxt[16];
    if (main > 0) {
#pragma unroll
      for (int u = 0; u < 16; ++u)
        cur[u] = __ldg(wp + static_cast<size_t>(u) * N);
    }
    for (int k = 0; k < main; k += 16) {
      if (k + 16 < main) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
          nxt[u] = __ldg(wp + static_cast<size_t>(k + 16 + u) * N);
        }
      }
#pragma unroll
      for (int u = 0; u < 16; ++u) {
        acc = madd(acc, xp[k + u], cur[u]);
      }
#pragma unroll
      for (int u = 0; u < 16; ++u) cur[u] = nxt[u];
    }
    for (int k = main; k < len; ++k) {
      acc = __fadd_rn(acc,
                      __fmul_rn(xp[k], __ldg(wp + static_cast<size_t>(k) * N)));
    }
  }
  part[blk][ol] = acc;
  __syncthreads();
  if (blk == 0 && o < N) {
    float s;
    if (nb == 16) {
      float t[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) t[i] = part[i][ol];
      s = tree16(t);
    } else {
      s = part[0][ol];
    }
    epilogue<kEpi>(__fadd_rn(s, bias[o]), 0, o, N, y, kv, kv_row, info);
  }
}

// The decode product split over the 16 §2.1 blocks (same operations, same
// order, more of the GPU): block (tile, b) of the grid owns 32 outputs and
// §2.1 block b of their sums. Its 256 threads stage rows of W (64 at a
// time, coalesced, 8 loads in flight each) in shared memory; thread o < 32
// adds its column's products in k order from +0.0. The 16 block sums go to
// `partial` [16][N]; the last of a tile's 16 blocks to finish (an atomic
// counter, reset for the next launch) combines them in the tree, adds the
// bias and applies the epilogue, so the result does not depend on which
// block finishes when. K not a multiple of 16: one block per tile sums all
// of k. kLn: each block first computes LayerNorm(x) (K = C) into shared
// memory. Dynamic shared memory: K floats with kLn, else K / 16 (or K).
// Chosen by LOCKSTEP_CUDA_MATVEC=3 (docs/cuda.md: on the H200 faster than
// matvec_kernel for the 3072 x 768 product, slower where the LayerNorm is
// fused, since each of its 384 to 1,536 blocks recomputes it).
constexpr int kV3Cols = 32, kV3Rows = 64, kV3Threads = 256;

template <int kEpi, bool kLn>
__global__ void __launch_bounds__(kV3Threads)
    matvec3_kernel(const float* x, const float* __restrict__ g,
                   const float* __restrict__ gb, const float* __restrict__ w,
                   const float* __restrict__ bias, int K, int N, float* y,
                   float* kv, size_t kv_row, const int* __restrict__ info,
                   float* partial, unsigned* counters) {
  extern __shared__ float xsm[];
  __shared__ float wsm[kV3Rows][kV3Cols];
  __shared__ bool last_s;
  const int nb = (K % 16 == 0) ? 16 : 1;
  const int len = K / nb;
  const int blk = blockIdx.y;
  const int k0 = blk * len;
  const int col0 = blockIdx.x * kV3Cols;
  const int o = col0 + threadIdx.x;  // for threads < 32
  // A round of kV3Rows rows of W into registers; the first is loaded
  // before the wait (the weights do not depend on earlier kernels), each
  // next one while the current round is summed.
  constexpr int kPer = kV3Rows * kV3Cols / kV3Threads;
  float tmp[kPer];
  auto load = [&](int r0) {
    const int cnt = min(kV3Rows, len - r0);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int idx = threadIdx.x + i * kV3Threads;
      const int r = idx / kV3Cols, c = idx % kV3Cols;
      tmp[i] = (r < cnt && col0 + c < N)
                   ? __ldg(w + static_cast<size_t>(k0 + r0 + r) * N + col0 + c)
                   : 0.0f;
    }
  };
  pdl_launch_dependents();
  if (len > 0) load(0);
  const bool finisher = threadIdx.x < kV3Cols && o < N;
  const float bo = finisher ? __ldg(bias + o) : 0.0f;
  LnPre lnp;
  if (kLn) ln_preload(g, gb, K, lnp);
  pdl_wait();
  // The residual stream's y[o] (used by the block that finishes).
  const float resid = kEpi == kResidual && finisher ? y[o] : 0.0f;
  const float* xb;
  if (kLn) {
    layernorm_row(x, g, gb, K, xsm, lnp);
    __syncthreads();
    xb = xsm + k0;
  } else {
    for (int k = threadIdx.x; k < len; k += blockDim.x) xsm[k] = x[k0 + k];
    __syncthreads();
    xb = xsm;
  }
  float acc = 0.0f;
  for (int r0 = 0; r0 < len; r0 += kV3Rows) {
    const int cnt = min(kV3Rows, len - r0);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int idx = threadIdx.x + i * kV3Threads;
      wsm[idx / kV3Cols][idx % kV3Cols] = tmp[i];
    }
    __syncthreads();
    if (r0 + kV3Rows < len) load(r0 + kV3Rows);
    if (threadIdx.x < kV3Cols) {
      for (int r = 0; r < cnt; ++r) {
        acc = madd(acc, xb[r0 + r], wsm[r][threadIdx.x]);
      }
    }
    __syncthreads();
  }
  if (threadIdx.x < kV3Cols && o < N)
    partial[static_cast<size_t>(blk) * N + o] = acc;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last_s = atomicAdd(&counters[blockIdx.x], 1u) == unsigned(nb - 1);
  }
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  if (threadIdx.x < kV3Cols && o < N) {
    float s;
    if (nb == 16) {
      float t[16];
#pragma unroll
      for (int i = 0; i < 16; ++i)
        t[i] = __ldcg(partial + static_cast<size_t>(i) * N + o);
      s = tree16(t);
    } else {
      s = __ldcg(partial + o);
    }
    epilogue_r<kEpi>(__fadd_rn(s, bo), 0, o, N, y, kv, kv_row, info, resid);
  }
  if (threadIdx.x == 0) counters[blockIdx.x] = 0;
}

// §2.2 for a batch's decode step: the n rows of X [n][K] are n independent
// sequences' positions, kR rows per block (grid.y: groups of kR rows).
// The layout and order of matvec_kernel: a block of 16 * kTo threads owns
// kTo outputs; thread (blk, o) sums §2.1 block blk of output o in k order
// from +0.0 for each of its kR rows, each weight loaded once for the kR
// rows (x read through the cache, four k at a time; 32 weights loaded
// before their additions). x is written by the kernel before, which may
// still run under programmatic launch: it is read with plain loads after
// pdl_wait (griddepcontrol.wait makes that kernel's writes visible to this
// grid), not through the read-only path (__ldg, for data no one writes
// while the kernel runs); __ldcg (L2 only) instead of plain loads made the
// batch-32 step 16% slower (2026-12-03). The 16 block sums
// meet in shared memory, the tree, the bias, the epilogue. So each row's
// outputs have the bits of a one-position step. K not a multiple of 16:
// thread (0, o) sums all of k.
template <int kTo, int kR, int kEpi>
__global__ void __launch_bounds__(16 * kTo)
    matvec_rows_kernel(const float* x, const float* __restrict__ w,
                       const float* __restrict__ bias, int n, int K, int N,
                       float* y, float* kv, size_t kv_row,
                       const int* __restrict__ info) {
  __shared__ float part[16][kR][kTo];
  pdl_launch_dependents();
  pdl_wait();
  const int ol = threadIdx.x % kTo;
  const int blk = threadIdx.x / kTo;
  const int o = blockIdx.x * kTo + ol;
  const int r0 = blockIdx.y * kR;
  const int rows = min(kR, n - r0);
  const int nb = (K % 16 == 0) ? 16 : 1;
  const int len = K / nb;
  float acc[kR];
#pragma unroll
  for (int r = 0; r < kR; ++r) acc[r] = 0.0f;
  if (o < N && blk < nb) {
    const float* wp = w + static_cast<size_t>(blk) * len * N + o;
    const float* xp = x + static_cast<size_t>(r0) * K + blk * len;
    int k = 0;
    if (len % 4 == 0 && K % 4 == 0) {
      // 32 weights in flight, then 8: a thread's chain of dependent loads
      // is what bounds these small grids (16 * N threads in all).
      for (; k + 32 <= len; k += 32) {
        float wv[32];
#pragma unroll
        for (int u = 0; u < 32; ++u)
          wv[u] = __ldg(wp + static_cast<size_t>(k + u) * N);
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (r < rows) {
            const float* xr = xp + static_cast<size_t>(r) * K + k;
#pragma unroll
            for (int q = 0; q < 8; ++q) {
              const float4 a = *reinterpret_cast<const float4*>(xr + 4 * q);
              acc[r] = madd(acc[r], a.x, wv[4 * q + 0]);
              acc[r] = madd(acc[r], a.y, wv[4 * q + 1]);
              acc[r] = madd(acc[r], a.z, wv[4 * q + 2]);
              acc[r] = madd(acc[r], a.w, wv[4 * q + 3]);
            }
          }
        }
      }
      for (; k + 8 <= len; k += 8) {
        float wv[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          wv[u] = __ldg(wp + static_cast<size_t>(k + u) * N);
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (r < rows) {
            const float4 a = *reinterpret_cast<const float4*>(
                xp + static_cast<size_t>(r) * K + k);
            const float4 b = *reinterpret_cast<const float4*>(
                xp + static_cast<size_t>(r) * K + k + 4);
            acc[r] = madd(acc[r], a.x, wv[0]);
            acc[r] = madd(acc[r], a.y, wv[1]);
            acc[r] = madd(acc[r], a.z, wv[2]);
            acc[r] = madd(acc[r], a.w, wv[3]);
            acc[r] = madd(acc[r], b.x, wv[4]);
            acc[r] = madd(acc[r], b.y, wv[5]);
            acc[r] = madd(acc[r], b.z, wv[6]);
            acc[r] = madd(acc[r], b.w, wv[7]);
          }
        }
      }
    }
    for (; k < len; ++k) {
      const float wk = __ldg(wp + static_cast<size_t>(k) * N);
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (r < rows) {
          acc[r] = madd(acc[r], xp[static_cast<size_t>(r) * K + k], wk);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kR; ++r) part[blk][r][ol] = acc[r];
  __syncthreads();
  // Thread (r, ol) of the first kR * kTo finishes output o of row r0 + r.
  const int fr = threadIdx.x / kTo;
  if (fr < rows && fr < kR && o < N) {
    float s;
    if (nb == 16) {
      float t[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) t[i] = part[i][fr][ol];
      s = tree16(t);
    } else {
      s = part[0][fr][ol];
    }
    epilogue<kEpi>(__fadd_rn(s, bias[o]), r0 + fr, o, N, y, kv, kv_row, info);
  }
}

// §2.2 for n positions (prefill, full pass): Y = X . W + b, X [n][K], W
// [K][N] input-major. A block computes a 64 x 64 tile of outputs, each
// thread 4 x 4, through shared-memory tiles of 16 k. Each output keeps its
// §2.1 order: the 16 k-blocks are summed one after another, each from
// +0.0 in k order, and visited in bit-reversed order (0, 8, 4, 12, 2, ...)
// so that the halving tree is a binary counter over them: after block
// p, pending partial sums are combined exactly as the tree pairs them
// (s0 + s8, then (s0 + s8) + (s4 + s12), ...), keeping 4 partials per
// output instead of 16. kBlocked false (K not a multiple of 16): one
// sequential sum over all of k.
constexpr int kTile = 64, kTk = 16, kPitch = kTile + 4;

template <int kEpi, bool kBlocked>
__global__ void __launch_bounds__(256)
    matmul_kernel(const float* x, const float* __restrict__ w,
                  const float* __restrict__ bias, int n, int K, int N, float* y,
                  float* kv, size_t kv_row, const int* __restrict__ info) {
  __shared__ __align__(16) float xs[kTk][kPitch];  // xs[kk][row]
  __shared__ __align__(16) float ws[kTk][kTile];   // ws[kk][col]
  pdl_launch_dependents();
  pdl_wait();
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  const int nb = kBlocked ? 16 : 1;
  const int len = K / nb;
  float acc[4][4], st0[4][4], st1[4][4], st2[4][4], st3[4][4];

  // Sums block `blk` (k in [blk * len, blk * len + len)) into acc, from
  // +0.0, in k order.
  auto block_sum = [&](int blk) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    }
    const int k0 = blk * len, k1 = k0 + len;
    // Tile loads: X 64 rows x 16 k (4 per thread, stored transposed), W 16
    // k x 64 columns (4 per thread, coalesced rows); the next tile's loads
    // are issued into registers before this tile's products.
    float xr[4], wr[4];
    auto load = [&](int kt) {
      const int kc = min(kTk, k1 - kt);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int idx = threadIdx.x + i * 256;
        const int kk = idx % kTk, r = idx / kTk;
        const int row = row0 + r;
        xr[i] = (kk < kc && row < n) ? x[static_cast<size_t>(row) * K + kt + kk]
                                     : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int idx = threadIdx.x + i * 256;
        const int c = idx % kTile, kk = idx / kTile;
        const int col = col0 + c;
        wr[i] = (kk < kc && col < N)
                    ? __ldg(w + static_cast<size_t>(kt + kk) * N + col)
                    : 0.0f;
      }
    };
    if (k0 < k1) load(k0);
    for (int kt = k0; kt < k1; kt += kTk) {
      const int kc = min(kTk, k1 - kt);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int idx = threadIdx.x + i * 256;
        xs[idx % kTk][idx / kTk] = xr[i];
        ws[idx / kTile][idx % kTile] = wr[i];
      }
      __syncthreads();
      if (kt + kTk < k1) load(kt + kTk);
      for (int kk = 0; kk < kc; ++kk) {
        const float4 a = *reinterpret_cast<const float4*>(&xs[kk][ty * 4]);
        const float4 b = *reinterpret_cast<const float4*>(&ws[kk][tx * 4]);
        const float av[4] = {a.x, a.y, a.z, a.w};
        const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            acc[i][j] = madd(acc[i][j], av[i], bv[j]);
          }
        }
      }
      __syncthreads();
    }
  };
  auto combine = [](float(&into)[4][4], const float(&left)[4][4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        into[i][j] = __fadd_rn(left[i][j], into[i][j]);
    }
  };
  auto copy = [](float(&to)[4][4], const float(&from)[4][4]) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) to[i][j] = from[i][j];
    }
  };

  if (kBlocked) {
    for (int p = 0; p < 16; ++p) {
      // Block bitrev4(p): leaves in the order the tree pairs them.
      const int blk =
          ((p & 1) << 3) | ((p & 2) << 1) | ((p & 4) >> 1) | ((p & 8) >> 3);
      block_sum(blk);
      if (!(p & 1)) {
        copy(st0, acc);
        continue;
      }
      combine(acc, st0);  // s[i] + s[i+8]
      if (!(p & 2)) {
        copy(st1, acc);
        continue;
      }
      combine(acc, st1);  // h = 4
      if (!(p & 4)) {
        copy(st2, acc);
        continue;
      }
      combine(acc, st2);  // h = 2
      if (!(p & 8)) {
        copy(st3, acc);
        continue;
      }
      combine(acc, st3);  // h = 1: acc is the finished sum
    }
  } else {
    block_sum(0);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty * 4 + i;
    if (row >= n) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx * 4 + j;
      if (col >= N) continue;
      epilogue<kEpi>(__fadd_rn(acc[i][j], bias[col]), row, col, N, y, kv,
                     kv_row, info);
    }
  }
}

// §2.2 for n positions again (prefill, full pass; LOCKSTEP_CUDA_MATMUL=1
// keeps matmul_kernel): the same 64 x 64 tiles, 4 x 4 outputs per thread,
// and for every output the same operations in the same order as
// matmul_kernel (the 16 §2.1 block sums in bit-reversed order, each from
// +0.0 in k order, combined as the halving tree pairs them, the bias
// last). What differs is where the work and the pending sums live:
//  - the pending partial sums of the binary counter are kept in shared
//    memory (dynamic: matmul2_smem), not in registers, so that two to four
//    blocks fit on a multiprocessor instead of one;
//  - the k tiles of all the block sums are one stream: the next tile's
//    loads (into registers) are issued before the current tile's products,
//    across block-sum boundaries, into a second shared-memory buffer (one
//    barrier per tile);
//  - split (gridDim.z = S of 1, 2 or 4; K a multiple of 16): block z of a
//    tile takes the visits p in [z * 16 / S, (z + 1) * 16 / S), which make
//    one node of the tree (S = 2: s0 + ... of the even §2.1 blocks, then
//    of the odd ones; S = 4: the four nodes of the h = 4 level), written
//    to `partial` [S][n][N]; the last of the S blocks to finish (a counter
//    per tile, reset for the next launch) combines the nodes as the tree
//    does (S = 2: P0 + P1; S = 4: (P0 + P1) + (P2 + P3)), adds the bias and
//    applies the epilogue. Which block finishes last does not change the
//    order.
inline size_t matmul2_smem(int split) {
  const int levels = split == 4 ? 2 : split == 2 ? 3 : 4;
  return size_t(levels) * 16 * 256 * sizeof(float);
}

template <int kEpi, bool kBlocked>
__global__ void __launch_bounds__(256, 3)
    matmul2_kernel(const float* x, const float* __restrict__ w,
                   const float* __restrict__ bias, int n, int K, int N,
                   float* y, float* kv, size_t kv_row,
                   const int* __restrict__ info, float* partial,
                   unsigned* counters) {
  __shared__ __align__(16) float xs[2][kTk][kPitch];  // xs[buf][kk][row]
  __shared__ __align__(16) float ws[2][kTk][kTile];   // ws[buf][kk][col]
  __shared__ bool last_s;
  extern __shared__ float4 stash[];  // [level][i][thread]: row i's 4 sums
  pdl_launch_dependents();
  pdl_wait();
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  const int S = kBlocked ? static_cast<int>(gridDim.z) : 1;
  const int z = kBlocked ? static_cast<int>(blockIdx.z) : 0;
  const int per = kBlocked ? 16 / S : 1;  // visits of this block
  const int p0 = z * per;
  const int len = kBlocked ? K / 16 : K;
  const int T = (len + kTk - 1) / kTk;  // k tiles per block sum
  const int total = per * T;
  float acc[4][4];

  // Tile tau of the stream: visit q = tau / T, §2.1 block bitrev4(p0 + q),
  // its (tau % T)-th tile of kTk k.
  auto tile_at = [&](int tau, int* kt, int* kc) {
    const int p = p0 + tau / T;
    const int blk = kBlocked ? ((p & 1) << 3) | ((p & 2) << 1) |
                                   ((p & 4) >> 1) | ((p & 8) >> 3)
                             : 0;
    *kt = blk * len + (tau % T) * kTk;
    *kc = min(kTk, blk * len + len - *kt);
  };
  float xr[4], wr[4];
  auto load = [&](int tau) {
    int kt, kc;
    tile_at(tau, &kt, &kc);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int idx = tid + i * 256;
      const int kk = idx % kTk, r = idx / kTk;
      const int row = row0 + r;
      xr[i] = (kk < kc && row < n) ? x[static_cast<size_t>(row) * K + kt + kk]
                                   : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int idx = tid + i * 256;
      const int c = idx % kTile, kk = idx / kTile;
      const int col = col0 + c;
      wr[i] = (kk < kc && col < N)
                  ? __ldg(w + static_cast<size_t>(kt + kk) * N + col)
                  : 0.0f;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int idx = tid + i * 256;
      xs[buf][idx % kTk][idx / kTk] = xr[i];
      ws[buf][idx / kTile][idx % kTile] = wr[i];
    }
  };
  auto step = [&](int buf, int kk) {
    const float4 a = *reinterpret_cast<const float4*>(&xs[buf][kk][ty * 4]);
    const float4 b = *reinterpret_cast<const float4*>(&ws[buf][kk][tx * 4]);
    const float av[4] = {a.x, a.y, a.z, a.w};
    const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = madd(acc[i][j], av[i], bv[j]);
    }
  };

  load(0);
  store(0);
  __syncthreads();
  for (int tau = 0; tau < total; ++tau) {
    const int buf = tau & 1;
    if (tau % T == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
      }
    }
    if (tau + 1 < total) load(tau + 1);
    int kt, kc;
    tile_at(tau, &kt, &kc);
    if (kc == kTk) {
#pragma unroll
      for (int kk = 0; kk < kTk; ++kk) step(buf, kk);
    } else {
      for (int kk = 0; kk < kc; ++kk) step(buf, kk);
    }
    if (tau + 1 < total) store(buf ^ 1);
    __syncthreads();
    if (tau % T == T - 1) {
      // Visit q's block sum is done: the binary counter over q combines it
      // with the pending sums while q's low bits are set (s[i] + s[i+h]:
      // the pending, earlier sum on the left), then leaves it pending.
      const int q = tau / T;
      int lvl = 0;
      while (q & (1 << lvl)) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 l = stash[(lvl * 4 + i) * 256 + tid];
          acc[i][0] = __fadd_rn(l.x, acc[i][0]);
          acc[i][1] = __fadd_rn(l.y, acc[i][1]);
          acc[i][2] = __fadd_rn(l.z, acc[i][2]);
          acc[i][3] = __fadd_rn(l.w, acc[i][3]);
        }
        ++lvl;
      }
      if (q != per - 1) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          stash[(lvl * 4 + i) * 256 + tid] =
              make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        }
      }
    }
  }
  if (S > 1) {
    // This block's tree node to partial; the last of the S combines.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + ty * 4 + i;
      if (row >= n) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = col0 + tx * 4 + j;
        if (col < N) {
          partial[(static_cast<size_t>(z) * n + row) * N + col] = acc[i][j];
        }
      }
    }
    __threadfence();
    __syncthreads();
    const unsigned tile = blockIdx.y * gridDim.x + blockIdx.x;
    if (tid == 0) last_s = atomicAdd(&counters[tile], 1u) == unsigned(S - 1);
    __syncthreads();
    if (!last_s) return;
    __threadfence();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + ty * 4 + i;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = col0 + tx * 4 + j;
        if (row >= n || col >= N) continue;
        const size_t at = static_cast<size_t>(row) * N + col;
        const size_t part = static_cast<size_t>(n) * N;
        if (S == 2) {
          acc[i][j] =
              __fadd_rn(__ldcg(partial + at), __ldcg(partial + part + at));
        } else {
          acc[i][j] = __fadd_rn(
              __fadd_rn(__ldcg(partial + at), __ldcg(partial + part + at)),
              __fadd_rn(__ldcg(partial + 2 * part + at),
                        __ldcg(partial + 3 * part + at)));
        }
      }
    }
    if (tid == 0) counters[tile] = 0;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty * 4 + i;
    if (row >= n) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx * 4 + j;
      if (col >= N) continue;
      epilogue<kEpi>(__fadd_rn(acc[i][j], bias[col]), row, col, N, y, kv,
                     kv_row, info);
    }
  }
}

// Positions of values staged in shared memory per round of the weighted
// sum, times the head width: 8192 floats (32 KB).
// The observed prefill (backends/cuda/cuda_backend.cu, set_observer): the
// attention kernels' kObs instantiations also write each query's scores
// and probabilities, as they stand in shared memory, to these device
// arrays [n][heads][pitch] (row t of the pass, head blockIdx.x; the first
// last_t + 1 floats of each); the unobserved instantiations (kObs false,
// the default) never read this. Set by the backend before an observed
// pass.
struct AttnObs {
  float* scores;
  float* probs;
  int pitch;
};
__device__ AttnObs attn_obs;

// Observed only: row t's first len floats of src (shared memory) to dst's
// row (t, head blockIdx.x), thread i taking elements i, i + blockDim.x, ...
__device__ __forceinline__ void attn_obs_row(float* dst, int t,
                                             const float* src, int len) {
  float* d = dst + (static_cast<size_t>(t) * gridDim.x + blockIdx.x) *
                       static_cast<size_t>(attn_obs.pitch);
  for (int j = threadIdx.x; j < len; j += blockDim.x) d[j] = src[j];
}

// Observed only: the rows of queries t0 .. t0 + nq - 1 (query q's first +
// q + 1 floats at src + q * src_pitch).
__device__ __forceinline__ void attn_obs_tile(float* dst, int t0, int nq,
                                              int first, const float* src,
                                              int src_pitch) {
  for (int q = 0; q < nq; ++q) {
    attn_obs_row(dst, t0 + q, src + static_cast<size_t>(q) * src_pitch,
                 first + q + 1);
  }
}

constexpr int kStageFloats = 8192;
constexpr int kAttnThreads = 256;

// Dynamic shared memory of attention_kernel: the query (D), one score per
// position (n_ctx) and, for D <= kStageFloats / 32, the staged values.
inline size_t attention_smem_floats(int D, int n_ctx) {
  return size_t(D) + size_t(n_ctx) +
         (D <= kStageFloats / 32 ? size_t(kStageFloats) : 0);
}

// §6 attention of query t (blockIdx.y) of the pass over positions
// 0 .. info[kFirst] + t, head blockIdx.x. Query from q|k|v row t; key j at
// keys + j * stride, value j at values + j * stride; output a[t][C].
// s[j] = dot(q, k_j) / sqrt(D) (§2.1, one thread per position), softmax
// (§2.4: the sum sequential in j by one thread), weighted sum (§2.5: each
// output component sequential in j). For the weighted sum the block stages
// rounds of values in shared memory, every thread loading its share at
// once (32 loads in flight each), and thread d adds them in j order.
// kPre (the one-position decode step): the loads that do not wait for
// anything else are issued together right after pdl_wait: the query, this
// thread's first key (D = 64) and its share of the first round of values;
// the successor kernel is let start only at the end (its waiting blocks
// would otherwise share the multiprocessors during a long attention).
template <bool kPre, bool kObs = false>
__global__ void __launch_bounds__(kAttnThreads)
    attention_kernel(const float* qkv, const float* keys, const float* values,
                     size_t stride, int C, int D, int n_ctx,
                     const int* __restrict__ info, float* __restrict__ out,
                     int early_below) {
  extern __shared__ float sm[];
  float* q = sm;
  float* sc = sm + D;
  float* vs = sm + D + n_ctx;
  __shared__ float red[kAttnThreads / 32];
  __shared__ float sum_s;
  if (!kPre) pdl_launch_dependents();
  pdl_wait();
  const int t = blockIdx.y;
  const int last = row_position(info, t);  // attends to 0 .. last
  // kPre: a short context (last < early_below, LOCKSTEP_CUDA_ATTN_EARLY)
  // lets the successor start now, so that it loads its weights while this
  // kernel runs; a long one only at the end.
  if (kPre && last < early_below) pdl_launch_dependents();
  // A batch: row t's own cache.
  keys += row_cache_offset(info, t);
  values += row_cache_offset(info, t);
  const size_t off = static_cast<size_t>(blockIdx.x) * D;
  const float* qrow = qkv + static_cast<size_t>(t) * 3 * C + off;
  // Rounds of values staged for the weighted sum (below): thread's share
  // of round j0 into registers.
  constexpr int kPerT = kStageFloats / kAttnThreads;
  const bool staged = D <= kStageFloats / 32;
  const int rows = staged ? kStageFloats / D : 1;  // positions per round
  float tmp[kPerT];
  auto stage_load = [&](int j0) {
    const int total_floats = min(rows, last + 1 - j0) * D;
#pragma unroll
    for (int u = 0; u < kPerT; ++u) {
      const int idx = threadIdx.x + u * kAttnThreads;
      tmp[u] = idx < total_floats
                   ? values[static_cast<size_t>(j0 + idx / D) * stride + off +
                            idx % D]
                   : 0.0f;
    }
  };
  float4 kpre[16];
  const bool have_k = kPre && D == 64 && int(threadIdx.x) <= last;
  if (have_k) {
    const float4* kp4 = reinterpret_cast<const float4*>(
        keys + static_cast<size_t>(threadIdx.x) * stride + off);
#pragma unroll
    for (int i = 0; i < 16; ++i) kpre[i] = kp4[i];
  }
  if (kPre && staged) stage_load(0);
  for (int d = threadIdx.x; d < D; d += blockDim.x) q[d] = qrow[d];
  __syncthreads();
  const float scale = __fsqrt_rn(static_cast<float>(D));
  for (int j = threadIdx.x; j <= last; j += blockDim.x) {
    const float* kp = keys + static_cast<size_t>(j) * stride + off;
    float dot;
    if (D == 64) {
      // GPT-2's heads: the key's 16 float4 loads in flight, then 16
      // blocks of 4 in k order and the tree.
      float4 kv[16];
      if (have_k && j == int(threadIdx.x)) {
#pragma unroll
        for (int i = 0; i < 16; ++i) kv[i] = kpre[i];
      } else {
#pragma unroll
        for (int i = 0; i < 16; ++i)
          kv[i] = reinterpret_cast<const float4*>(kp)[i];
      }
      float s[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        float acc = 0.0f;
        acc = madd(acc, q[4 * i + 0], kv[i].x);
        acc = madd(acc, q[4 * i + 1], kv[i].y);
        acc = madd(acc, q[4 * i + 2], kv[i].z);
        acc = madd(acc, q[4 * i + 3], kv[i].w);
        s[i] = acc;
      }
      dot = tree16(s);
    } else if (D % 16 == 0) {
      const int len = D / 16;
      float s[16];
#pragma unroll
      for (int b = 0; b < 16; ++b) {
        float acc = 0.0f;
        for (int u = 0; u < len; ++u) {
          acc = madd(acc, q[b * len + u], kp[b * len + u]);
        }
        s[b] = acc;
      }
      dot = tree16(s);
    } else {
      float acc = 0.0f;
      for (int u = 0; u < D; ++u) acc = madd(acc, q[u], kp[u]);
      dot = acc;
    }
    sc[j] = __fdiv_rn(dot, scale);
  }
  __syncthreads();
  // Observed: the scores (each thread the elements it rewrites below).
  if constexpr (kObs) attn_obs_row(attn_obs.scores, t, sc, last + 1);
  // §2.4 step 1: the maximum. Taken in parallel: the value equals the
  // sequential scan's except possibly the sign of a zero maximum, and
  // s - (+0) and s - (-0) differ only for s = -0, where exp gives 1 either
  // way, so every e[j] below is the same.
  float m = sc[0];
  for (int j = threadIdx.x; j <= last; j += blockDim.x)
    m = sc[j] > m ? sc[j] : m;
#pragma unroll
  for (int h = 16; h >= 1; h /= 2) {
    const float o = __shfl_down_sync(0xffffffffu, m, h);
    m = o > m ? o : m;
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    float mm = red[0];
    for (int i = 1; i < kAttnThreads / 32; ++i) mm = red[i] > mm ? red[i] : mm;
    red[0] = mm;
  }
  __syncthreads();
  m = red[0];
  for (int j = threadIdx.x; j <= last; j += blockDim.x) {
    sc[j] = exp32(__fsub_rn(sc[j], m));
  }
  __syncthreads();
#ifdef LOCKSTEP_CUDA_FAST
  // The fast variant: the sum split over the block (not §2.4's order).
  {
    float s = 0.0f;
    for (int j = threadIdx.x; j <= last; j += blockDim.x)
      s = __fadd_rn(s, sc[j]);
#pragma unroll
    for (int h = 16; h >= 1; h /= 2) {
      s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, h));
    }
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      float tot = 0.0f;
      for (int i = 0; i < kAttnThreads / 32; ++i) tot = __fadd_rn(tot, red[i]);
      sum_s = tot;
    }
  }
#else
  // §2.4 step 2's sum: sequential in j from +0.0 (the terms read eight
  // ahead of their additions).
  if (threadIdx.x == 0) {
    float s = 0.0f;
    int j = 0;
    for (; j + 8 <= last + 1; j += 8) {
      float e[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) e[u] = sc[j + u];
#pragma unroll
      for (int u = 0; u < 8; ++u) s = __fadd_rn(s, e[u]);
    }
    for (; j <= last; ++j) s = __fadd_rn(s, sc[j]);
    sum_s = s;
  }
#endif
  __syncthreads();
  const float total = sum_s;
  for (int j = threadIdx.x; j <= last; j += blockDim.x) {
    sc[j] = __fdiv_rn(sc[j], total);
  }
  __syncthreads();
  // Observed: the probabilities (only read from here on).
  if constexpr (kObs) attn_obs_row(attn_obs.probs, t, sc, last + 1);
  // §2.5: out[d] = +0.0, then + p[j] * v_j[d] for j in order.
  float* orow = out + static_cast<size_t>(t) * C + off;
  if (staged) {
    float a = 0.0f;  // thread d's sum (d < D)
    for (int j0 = 0; j0 <= last; j0 += rows) {
      const int cnt = min(rows, last + 1 - j0);
      const int total_floats = cnt * D;
      // Stage values j0 .. j0+cnt-1: up to 32 loads per thread in flight
      // (kPre: the first round's are in flight already).
      if (!(kPre && j0 == 0)) stage_load(j0);
#pragma unroll
      for (int u = 0; u < kStageFloats / kAttnThreads; ++u) {
        const int idx = threadIdx.x + u * kAttnThreads;
        if (idx < total_floats) vs[idx] = tmp[u];
      }
      __syncthreads();
      if (threadIdx.x < D) {
#pragma unroll 8
        for (int jj = 0; jj < cnt; ++jj) {
          a = madd(a, sc[j0 + jj], vs[jj * D + threadIdx.x]);
        }
      }
      __syncthreads();
    }
    if (kPre) pdl_launch_dependents();
    if (threadIdx.x < D) orow[threadIdx.x] = a;
    return;
  }
  if (kPre) pdl_launch_dependents();
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    const float* vp = values + off + d;
    float a = 0.0f;
    for (int j = 0; j <= last; ++j) {
      a = madd(a, sc[j], vp[static_cast<size_t>(j) * stride]);
    }
    orow[d] = a;
  }
}

// §6 attention for a pass over n > 1 positions of one sequence (prefill,
// full pass), kAttnQ consecutive queries t0 .. t0 + kAttnQ - 1 (blockIdx.y)
// of head blockIdx.x per block, D <= 64: every query's operations and
// their order are attention_kernel's, but the keys and values are staged
// in shared memory once for the block's queries instead of once per
// query. Per query t (attending to 0 .. last_t):
//  - s[j] = dot(q_t, k_j) / sqrt(D) (§2.1: 16 blocks of D / 16 in k order
//    and the tree; D not a multiple of 16: sequential), one thread per
//    (query, key), keys staged kAttnChunk at a time;
//  - the maximum m in parallel (as attention_kernel: equal to the
//    sequential scan's but for the sign of a zero maximum, which no
//    exp(s - m) can see), e[j] = exp(s[j] - m);
//  - §2.4's sum S sequential in j from +0.0 by one thread per query;
//    p[j] = e[j] / S;
//  - §2.5: out[d] = +0.0, then + p[j] * v_j[d] in j order, one thread per
//    (query, component), values staged kAttnChunk positions at a time.
// Dynamic shared memory: attention_pass_smem(n_ctx) bytes.
constexpr int kAttnQ = 16, kAttnChunk = 64, kAttnKPitch = 68;

inline size_t attention_pass_smem(int n_ctx) {
  return (size_t(kAttnQ) * 64 + size_t(kAttnQ) * size_t(n_ctx) +
          size_t(kAttnChunk) * kAttnKPitch) *
         sizeof(float);
}

template <bool kObs = false>
__global__ void __launch_bounds__(kAttnThreads)
    attention_pass_kernel(const float* qkv, const float* keys,
                          const float* values, size_t stride, int C, int D,
                          int n, int n_ctx, const int* __restrict__ info,
                          float* __restrict__ out) {
  extern __shared__ __align__(16) float apsm[];
  float* qs = apsm;                          // [kAttnQ][64]
  float* sc = qs + kAttnQ * 64;              // [kAttnQ][n_ctx]
  float* kvs = sc + size_t(kAttnQ) * n_ctx;  // [kAttnChunk][kAttnKPitch]
  __shared__ float inv_s[kAttnQ];
  pdl_launch_dependents();
  pdl_wait();
  const int tid = threadIdx.x;
  const int t0 = blockIdx.y * kAttnQ;
  const int nq = min(kAttnQ, n - t0);        // queries of this block
  const int first = row_position(info, t0);  // query q attends 0 .. first+q
  const int keys_n = first + nq;             // keys the block needs
  const size_t off = static_cast<size_t>(blockIdx.x) * D;
  for (int i = tid; i < kAttnQ * 64; i += kAttnThreads) {
    const int q = i / 64, d = i % 64;
    qs[i] = (q < nq && d < D)
                ? qkv[static_cast<size_t>(t0 + q) * 3 * C + off + d]
                : 0.0f;
  }
  const float scale = __fsqrt_rn(static_cast<float>(D));
  // A chunk of keys or values (positions j0 .. j0 + 63, components < D)
  // into registers, the next chunk's loads issued before the current
  // chunk is used; then into kvs with the given row pitch.
  constexpr int kPer = kAttnChunk * 64 / kAttnThreads;
  float pre[kPer];
  auto load_chunk = [&](const float* src, int j0) {
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int i = tid + u * kAttnThreads;
      const int r = i / 64, dd = i % 64;
      pre[u] = (j0 + r < keys_n && dd < D)
                   ? src[static_cast<size_t>(j0 + r) * stride + off + dd]
                   : 0.0f;
    }
  };
  auto store_chunk = [&](int pitch) {
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int i = tid + u * kAttnThreads;
      kvs[(i / 64) * pitch + i % 64] = pre[u];
    }
  };
  // Scores. Thread (jj = tid % 64, q = tid / 64 + 4 i) for i < 4.
  const int jj = tid % kAttnChunk, q0 = tid / kAttnChunk;
  load_chunk(keys, 0);
  for (int j0 = 0; j0 < keys_n; j0 += kAttnChunk) {
    const int cnt = min(kAttnChunk, keys_n - j0);
    __syncthreads();  // the previous chunk's keys are used (and qs written)
    store_chunk(kAttnKPitch);
    __syncthreads();
    if (j0 + kAttnChunk < keys_n) load_chunk(keys, j0 + kAttnChunk);
    const int j = j0 + jj;
    if (jj < cnt) {
      const float* kp = kvs + jj * kAttnKPitch;
#pragma unroll
      for (int i = 0; i < kAttnQ / 4; ++i) {
        const int q = q0 + 4 * i;
        if (q >= nq || j > first + q) continue;
        const float* qp = qs + q * 64;
        float dot;
        if (D == 64) {
          float s[16];
#pragma unroll
          for (int b = 0; b < 16; ++b) {
            const float4 kv4 = *reinterpret_cast<const float4*>(kp + 4 * b);
            const float4 qv4 = *reinterpret_cast<const float4*>(qp + 4 * b);
            float acc = 0.0f;
            acc = madd(acc, qv4.x, kv4.x);
            acc = madd(acc, qv4.y, kv4.y);
            acc = madd(acc, qv4.z, kv4.z);
            acc = madd(acc, qv4.w, kv4.w);
            s[b] = acc;
          }
          dot = tree16(s);
        } else if (D % 16 == 0) {
          const int len = D / 16;
          float s[16];
#pragma unroll
          for (int b = 0; b < 16; ++b) {
            float acc = 0.0f;
            for (int u = 0; u < len; ++u) {
              acc = madd(acc, qp[b * len + u], kp[b * len + u]);
            }
            s[b] = acc;
          }
          dot = tree16(s);
        } else {
          float acc = 0.0f;
          for (int u = 0; u < D; ++u) acc = madd(acc, qp[u], kp[u]);
          dot = acc;
        }
        sc[static_cast<size_t>(q) * n_ctx + j] = __fdiv_rn(dot, scale);
      }
    }
  }
  // The first chunk of values, in flight during the softmax.
  load_chunk(values, 0);
  __syncthreads();
  // Observed: the scores, before the threads below rewrite them.
  if constexpr (kObs) {
    attn_obs_tile(attn_obs.scores, t0, nq, first, sc, n_ctx);
    __syncthreads();
  }
  // The maximum and exp: 16 threads per query (a half warp).
  {
    const int q = tid / 16, l16 = tid % 16;
    float* row = sc + static_cast<size_t>(q) * n_ctx;
    const int last = first + q;
    float m = 0.0f;
    if (q < nq) {
      m = row[0];
      for (int j = l16; j <= last; j += 16) m = row[j] > m ? row[j] : m;
    }
#pragma unroll
    for (int h = 8; h >= 1; h /= 2) {
      const float o = __shfl_xor_sync(0xffffffffu, m, h, 16);
      m = o > m ? o : m;
    }
    if (q < nq) {
      for (int j = l16; j <= last; j += 16)
        row[j] = exp32(__fsub_rn(row[j], m));
    }
  }
  __syncthreads();
  // §2.4's sum, sequential in j from +0.0: thread q for query q (the
  // terms read eight ahead of their additions).
  if (tid < nq) {
    const float* row = sc + static_cast<size_t>(tid) * n_ctx;
    const int cnt = first + tid + 1;
    float s = 0.0f;
    int j = 0;
    for (; j + 8 <= cnt; j += 8) {
      float e[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) e[u] = row[j + u];
#pragma unroll
      for (int u = 0; u < 8; ++u) s = __fadd_rn(s, e[u]);
    }
    for (; j < cnt; ++j) s = __fadd_rn(s, row[j]);
    inv_s[tid] = s;
  }
  __syncthreads();
  {
    const int q = tid / 16, l16 = tid % 16;
    if (q < nq) {
      float* row = sc + static_cast<size_t>(q) * n_ctx;
      const float total = inv_s[q];
      for (int j = l16; j <= first + q; j += 16)
        row[j] = __fdiv_rn(row[j], total);
    }
  }
  // Observed: the probabilities (only read from here on).
  if constexpr (kObs) {
    __syncthreads();
    attn_obs_tile(attn_obs.probs, t0, nq, first, sc, n_ctx);
  }
  // §2.5: thread (d = tid % 64, q = tid / 64 + 4 i), four queries' sums.
  const int d = tid % 64;
  float a[kAttnQ / 4];
#pragma unroll
  for (int i = 0; i < kAttnQ / 4; ++i) a[i] = 0.0f;
  for (int j0 = 0; j0 < keys_n; j0 += kAttnChunk) {
    const int cnt = min(kAttnChunk, keys_n - j0);
    __syncthreads();  // p is written; the previous chunk's values are used
    store_chunk(64);
    __syncthreads();
    if (j0 + kAttnChunk < keys_n) load_chunk(values, j0 + kAttnChunk);
    if (d < D) {
      // Positions of this chunk that each of the four queries attends to
      // (the four sums interleaved, each in j order).
      int lim[kAttnQ / 4];
      int most = 0;
#pragma unroll
      for (int i = 0; i < kAttnQ / 4; ++i) {
        const int q = q0 + 4 * i;
        lim[i] = q < nq ? min(cnt, first + q + 1 - j0) : 0;
        most = max(most, lim[i]);
      }
      const float* p = sc + static_cast<size_t>(q0) * n_ctx + j0;
      for (int r = 0; r < most; ++r) {
        const float v = kvs[r * 64 + d];
#pragma unroll
        for (int i = 0; i < kAttnQ / 4; ++i) {
          if (r < lim[i]) {
            a[i] = madd(a[i], p[static_cast<size_t>(4 * i) * n_ctx + r], v);
          }
        }
      }
    }
  }
  if (d < D) {
#pragma unroll
    for (int i = 0; i < kAttnQ / 4; ++i) {
      const int q = q0 + 4 * i;
      if (q < nq) out[static_cast<size_t>(t0 + q) * C + off + d] = a[i];
    }
  }
}

// §6 attention for a pass over n > 1 positions of one sequence again
// (prefill, full pass; the default for D = 64 since 2026-12-02 evening,
// LOCKSTEP_CUDA_ATTN=2 keeps attention_pass_kernel): every query's
// operations and their order are attention_kernel's. kAp2Q = 32
// consecutive queries of head blockIdx.x per block, the tiles visited
// heaviest first (tile gridDim.y - 1 - blockIdx.y attends to the most
// keys), keys and values staged 64 positions at a time in shared memory
// (the next chunk's loads in flight), and each thread owning several
// outputs (register tiles), so that shared-memory loads are shared by
// several products:
//  - scores: warp w takes queries 4w .. 4w + 3, lane l keys l and l + 32 of
//    the chunk: 8 dot products per thread, each §2.1's 16 blocks of 4 in k
//    order from +0.0, the blocks visited in bit-reversed order (0, 8, 4,
//    12, ...) and combined as they come exactly as the halving tree pairs
//    them (Tree16Counter), then the division by sqrt(D);
//  - the maximum and exp by 8 threads per query; §2.4's sum sequential in j
//    from +0.0 by one thread per query; p[j] = e[j] / S by 8 threads per
//    query;
//  - §2.5: lane l of warp w: queries 4w + 2 (l / 16) and the next one,
//    components 4 (l % 16) .. + 3: 8 sums, each out[d] = +0.0 then + p[j] *
//    v_j[d] in j order.
// Dynamic shared memory: attention_pass2_smem(keys_max), keys_max the
// largest number of keys a query of the pass attends to (first + n).
// kQ (32 or 16, LOCKSTEP_CUDA_ATTN_Q) queries per block, 8 * kQ threads.
constexpr int kAp2Chunk = 64, kAp2KPitch = 68;

// The scores' row pitch: a multiple of 4 (float4 rows) that is 4 mod 16, so
// that rows two apart fall in different banks.
inline int attention_pass2_pitch(int keys_max) {
  return (keys_max + 15) / 16 * 16 + 4;
}
inline size_t attention_pass2_smem(int kQ, int keys_max) {
  return (size_t(kQ) * 64 + size_t(kAp2Chunk) * kAp2KPitch +
          size_t(kQ) * size_t(attention_pass2_pitch(keys_max))) *
         sizeof(float);
}

// §2.1's halving tree over 16 block sums that arrive in bit-reversed order
// of their blocks (visit p holds block rev4(p): 0, 8, 4, 12, 2, 10, 6, 14,
// 1, 9, ...): each pair, quad and octet is combined as soon as it is
// complete, which is exactly tree16's pairing (s[i] + s[i + 8], then
// + the h = 4 partner, ...), with 4 pending values instead of 16. feed(p,
// s) with p known at compile time (unrolled loops).
struct Tree16Counter {
  float p0, p1, p2, p3, result;
  __device__ __forceinline__ void feed(int p, float s) {
    if (p % 2 == 0) {
      p0 = s;
      return;
    }
    float t = __fadd_rn(p0, s);  // s[i] + s[i + 8]
    if (p % 4 == 1) {
      p1 = t;
      return;
    }
    t = __fadd_rn(p1, t);  // t[i] + t[i + 4]
    if (p % 8 == 3) {
      p2 = t;
      return;
    }
    t = __fadd_rn(p2, t);  // u[i] + u[i + 2]
    if (p == 7) {
      p3 = t;
      return;
    }
    result = __fadd_rn(p3, t);  // w[0] + w[1]
  }
};

__device__ __forceinline__ constexpr int rev4(int p) {
  return ((p & 1) << 3) | ((p & 2) << 1) | ((p & 4) >> 1) | ((p & 8) >> 3);
}

// A score's division by sqrt(64) = 8 (§6) for D = 64, as the product by
// 0.125: both are the correctly rounded value of the same real number x *
// 2^-3 (0.125 is exact), so the bits are the division's for every x,
// subnormal results and infinities included (and a NaN stays a NaN); one
// instruction instead of the division's sequence.
__device__ __forceinline__ float score_div8(float x) {
  return __fmul_rn(x, 0.125f);
}

// §2.1 block of 4: +0.0, then + q[k] * k[k] in k order.
__device__ __forceinline__ float dot4_block(float4 q, float4 k) {
  float acc = 0.0f;
  acc = madd(acc, q.x, k.x);
  acc = madd(acc, q.y, k.y);
  acc = madd(acc, q.z, k.z);
  acc = madd(acc, q.w, k.w);
  return acc;
}

template <int kAp2Q, bool kObs = false>
__global__ void __launch_bounds__(8 * kAp2Q, 64 / kAp2Q)
    attention_pass2_kernel(const float* qkv, const float* keys,
                           const float* values, size_t stride, int C, int n,
                           int pitch, const int* __restrict__ info,
                           float* __restrict__ out) {
  extern __shared__ __align__(16) float ap2sm[];
  float* qs = ap2sm;                         // [kAp2Q][64]
  float* kvs = qs + kAp2Q * 64;              // [kAp2Chunk][kAp2KPitch or 64]
  float* sc = kvs + kAp2Chunk * kAp2KPitch;  // [kAp2Q][pitch]
  __shared__ float total_s[kAp2Q];
  constexpr int kThreads = 8 * kAp2Q, kPerT = 1024 / kThreads;
  pdl_launch_dependents();
  pdl_wait();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int tile = int(gridDim.y) - 1 - int(blockIdx.y);  // heaviest first
  const int t0 = tile * kAp2Q;
  const int nq = min(kAp2Q, n - t0);         // queries of this block
  const int first = row_position(info, t0);  // query q attends 0 .. first+q
  const int keys_n = first + nq;             // keys the block needs
  const size_t off = static_cast<size_t>(blockIdx.x) * 64;
  const float4 zero4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  // q|k|v, the keys and values are written by the kernels before:
  // coherent loads (L2), not the read-only path.
  for (int i = tid; i < kAp2Q * 16; i += kThreads) {
    const int q = i / 16, c4 = i % 16;
    reinterpret_cast<float4*>(qs)[i] =
        q < nq ? __ldcg(reinterpret_cast<const float4*>(
                     qkv + static_cast<size_t>(t0 + q) * 3 * C + off + 4 * c4))
               : zero4;
  }
  // A chunk of 64 keys or values into registers (1024 / kThreads float4
  // per thread), the next chunk's loads issued before the current chunk is
  // used.
  float4 pre[kPerT];
  auto load_chunk = [&](const float* src, int j0) {
#pragma unroll
    for (int u = 0; u < kPerT; ++u) {
      const int i = tid + u * kThreads, r = i / 16, c4 = i % 16;
      pre[u] =
          j0 + r < keys_n
              ? __ldcg(reinterpret_cast<const float4*>(
                    src + static_cast<size_t>(j0 + r) * stride + off + 4 * c4))
              : zero4;
    }
  };
  auto store_chunk = [&](int kpitch) {
#pragma unroll
    for (int u = 0; u < kPerT; ++u) {
      const int i = tid + u * kThreads, r = i / 16, c4 = i % 16;
      *reinterpret_cast<float4*>(kvs + r * kpitch + 4 * c4) = pre[u];
    }
  };
  const int qb = 4 * warp;
  load_chunk(keys, 0);
  for (int j0 = 0; j0 < keys_n; j0 += kAp2Chunk) {
    __syncthreads();  // the previous chunk's keys are used (and qs written)
    store_chunk(kAp2KPitch);
    __syncthreads();
    if (j0 + kAp2Chunk < keys_n) load_chunk(keys, j0 + kAp2Chunk);
    // Any of this thread's 8 scores needed (key j0 + lane is its lowest)?
    if (qb < nq && j0 + lane <= first + qb + 3) {
      Tree16Counter tr[4][2];
      const float* kp0 = kvs + lane * kAp2KPitch;
      const float* kp1 = kvs + (lane + 32) * kAp2KPitch;
#pragma unroll
      for (int p = 0; p < 16; ++p) {
        const int b = rev4(p);
        const float4 k0 = *reinterpret_cast<const float4*>(kp0 + 4 * b);
        const float4 k1 = *reinterpret_cast<const float4*>(kp1 + 4 * b);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 qv =
              *reinterpret_cast<const float4*>(qs + (qb + i) * 64 + 4 * b);
          tr[i][0].feed(p, dot4_block(qv, k0));
          tr[i][1].feed(p, dot4_block(qv, k1));
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int q = qb + i;
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int j = j0 + lane + 32 * u;
          if (q < nq && j <= first + q) {
            sc[q * pitch + j] = score_div8(tr[i][u].result);
          }
        }
      }
    }
  }
  // The first chunk of values, in flight during the softmax.
  load_chunk(values, 0);
  __syncthreads();
  // Observed: the scores, before the threads below rewrite them.
  if constexpr (kObs) {
    attn_obs_tile(attn_obs.scores, t0, nq, first, sc, pitch);
    __syncthreads();
  }
  // The maximum and exp: 8 threads per query.
  const int qs8 = qb + (lane >> 3), l8 = lane & 7;
  {
    float* row = sc + qs8 * pitch;
    const int last = first + qs8;
    float m = 0.0f;
    if (qs8 < nq) {
      m = row[0];
      for (int j = l8; j <= last; j += 8) m = row[j] > m ? row[j] : m;
    }
#pragma unroll
    for (int h = 4; h >= 1; h /= 2) {
      const float o = __shfl_xor_sync(0xffffffffu, m, h, 8);
      m = o > m ? o : m;
    }
    if (qs8 < nq) {
      for (int j = l8; j <= last; j += 8) row[j] = exp32(__fsub_rn(row[j], m));
    }
  }
  __syncthreads();
  // §2.4's sum, sequential in j from +0.0: thread q for query q (terms read
  // eight ahead of their additions).
  if (tid < nq) {
    const float* row = sc + tid * pitch;
    const int cnt = first + tid + 1;
    float s = 0.0f;
    int j = 0;
    for (; j + 8 <= cnt; j += 8) {
      const float4 a = *reinterpret_cast<const float4*>(row + j);
      const float4 b = *reinterpret_cast<const float4*>(row + j + 4);
      s = __fadd_rn(s, a.x);
      s = __fadd_rn(s, a.y);
      s = __fadd_rn(s, a.z);
      s = __fadd_rn(s, a.w);
      s = __fadd_rn(s, b.x);
      s = __fadd_rn(s, b.y);
      s = __fadd_rn(s, b.z);
      s = __fadd_rn(s, b.w);
    }
    for (; j < cnt; ++j) s = __fadd_rn(s, row[j]);
    total_s[tid] = s;
  }
  __syncthreads();
  if (qs8 < nq) {
    float* row = sc + qs8 * pitch;
    const float total = total_s[qs8];
    for (int j = l8; j <= first + qs8; j += 8)
      row[j] = __fdiv_rn(row[j], total);
  }
  // Observed: the probabilities (only read from here on).
  if constexpr (kObs) {
    __syncthreads();
    attn_obs_tile(attn_obs.probs, t0, nq, first, sc, pitch);
  }
  // §2.5.
  const int qa = qb + 2 * (lane >> 4), dd = 4 * (lane & 15);
  const int lim0 = qa < nq ? first + qa + 1 : 0;  // keys of query qa
  const int lim1 = qa + 1 < nq ? first + qa + 2 : 0;
  float a0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, a1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int j0 = 0; j0 < keys_n; j0 += kAp2Chunk) {
    __syncthreads();  // p is written; the previous chunk's values are used
    store_chunk(64);
    __syncthreads();
    if (j0 + kAp2Chunk < keys_n) load_chunk(values, j0 + kAp2Chunk);
    const int e0 = min(kAp2Chunk, lim0 - j0), e1 = min(kAp2Chunk, lim1 - j0);
    const int both = max(0, min(e0, e1)), most = max(e0, e1);
    const float* pa = sc + qa * pitch + j0;
    const float* pb = pa + pitch;
    int r = 0;
    for (; r + 4 <= both; r += 4) {
      const float4 x0 = *reinterpret_cast<const float4*>(pa + r);
      const float4 x1 = *reinterpret_cast<const float4*>(pb + r);
      const float w0[4] = {x0.x, x0.y, x0.z, x0.w};
      const float w1[4] = {x1.x, x1.y, x1.z, x1.w};
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float4 v =
            *reinterpret_cast<const float4*>(kvs + (r + u) * 64 + dd);
        a0[0] = madd(a0[0], w0[u], v.x);
        a0[1] = madd(a0[1], w0[u], v.y);
        a0[2] = madd(a0[2], w0[u], v.z);
        a0[3] = madd(a0[3], w0[u], v.w);
        a1[0] = madd(a1[0], w1[u], v.x);
        a1[1] = madd(a1[1], w1[u], v.y);
        a1[2] = madd(a1[2], w1[u], v.z);
        a1[3] = madd(a1[3], w1[u], v.w);
      }
    }
    for (; r < most; ++r) {
      const float4 v = *reinterpret_cast<const float4*>(kvs + r * 64 + dd);
      if (r < e0) {
        const float w = pa[r];
        a0[0] = madd(a0[0], w, v.x);
        a0[1] = madd(a0[1], w, v.y);
        a0[2] = madd(a0[2], w, v.z);
        a0[3] = madd(a0[3], w, v.w);
      }
      if (r < e1) {
        const float w = pb[r];
        a1[0] = madd(a1[0], w, v.x);
        a1[1] = madd(a1[1], w, v.y);
        a1[2] = madd(a1[2], w, v.z);
        a1[3] = madd(a1[3], w, v.w);
      }
    }
  }
  if (qa < nq) {
    *reinterpret_cast<float4*>(out + static_cast<size_t>(t0 + qa) * C + off +
                               dd) = make_float4(a0[0], a0[1], a0[2], a0[3]);
  }
  if (qa + 1 < nq) {
    *reinterpret_cast<float4*>(out + static_cast<size_t>(t0 + qa + 1) * C +
                               off + dd) =
        make_float4(a1[0], a1[1], a1[2], a1[3]);
  }
}

// cp.async (sm_80 and later): 16 bytes from global memory (L2, coherent)
// into shared memory without passing through registers; groups committed
// and waited for.
__device__ __forceinline__ void cp_async16(float* smem, const float* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem)
               : "memory");
#else
  *reinterpret_cast<float4*>(smem) = *reinterpret_cast<const float4*>(gmem);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Waits until at most kPending of this thread's committed groups are in
// flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
#endif
}

// cp.async of 16 bytes that fills the destination with zeros instead when
// !valid (src-size 0: nothing is read from gmem, which must still be a
// valid address).
__device__ __forceinline__ void cp_async16_zfill(float* smem, const float* gmem,
                                                 bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s),
               "l"(gmem), "r"(bytes)
               : "memory");
#else
  *reinterpret_cast<float4*>(smem) =
      valid ? *reinterpret_cast<const float4*>(gmem)
            : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#endif
}

// §2.2 for n positions, the default since 2026-12-03 (LOCKSTEP_CUDA_MATMUL=2
// keeps matmul2_kernel, 1 matmul_kernel): matmul2_kernel's tiles (64 x 64
// outputs, 4 x 4 a thread), split (gridDim.z), binary counter over the
// bit-reversed §2.1 blocks with its pending sums in shared memory (`stash`,
// matmul2_smem bytes), and the same operations in the same order for every
// output: each of the 16 block sums from +0.0 in k order, combined as the
// halving tree pairs them, the split's nodes combined by the last block,
// the bias last. What differs is only how the operands reach the
// multiply-adds, to spend fewer instructions on anything else (every FMUL
// and FADD is an issued instruction here; nothing else may take its slot):
//  - the tiles are copied from global memory to shared memory by cp.async,
//    16 bytes a thread for each of X and W (matmul2: 8 scalar loads into
//    registers, 8 scalar stores, their address arithmetic), double
//    buffered, one barrier per tile of 16 k; rows past n and columns past N
//    are filled with zeros (their outputs are never stored);
//  - X's tile is kept row-major (xs[row][k], pitch 20 so that the two rows
//    a warp reads lie in different banks) and read 4 k at a time: one
//    16-byte load gives a row's next 4 k, so per 4 k a thread issues 4
//    loads of X and 4 of W for 128 FP instructions, as matmul2 does;
//  - the stream of tiles advances by counters (matmul2 divides the tile
//    index by the tiles per block sum twice per tile);
//  - the first tile of W (never written by a kernel) is requested before
//    pdl_wait, so that it overlaps the previous kernel's end.
// Preconditions (the host checks them, else matmul2_kernel): K a multiple
// of 256 (each block sum whole tiles of 16), N a multiple of 4, x and w
// 16-byte aligned.
constexpr int kM3Pitch = 20;

template <int kEpi>
__global__ void __launch_bounds__(256, 3)
    matmul3_kernel(const float* x, const float* __restrict__ w,
                   const float* __restrict__ bias, int n, int K, int N,
                   float* y, float* kv, size_t kv_row, const int* info,
                   float* partial, unsigned* counters) {
  __shared__ __align__(16) float xs[2][kTile][kM3Pitch];  // xs[buf][row][kk]
  __shared__ __align__(16) float ws[2][kTk][kTile];       // ws[buf][kk][col]
  __shared__ bool last_s;
  extern __shared__ float4 stash[];  // [level][i][thread]: row i's 4 sums
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  const int S = static_cast<int>(gridDim.z);
  const int z = static_cast<int>(blockIdx.z);
  const int per = 16 / S;  // visits of this block
  const int p0 = z * per;
  const int len = K / 16;
  const int T = len / kTk;  // k tiles per block sum
  const int total = per * T;
  float acc[4][4];

  // This thread's 16 bytes of each tile: X row xr, k xk .. xk + 3; W row
  // wk of the tile, columns wc .. wc + 3. Out-of-range sources point at
  // the matrix's first element (read nothing: zero fill).
  const int xr = tid / 4, xk = (tid % 4) * 4;
  const int wk = tid / 16, wc = (tid % 16) * 4;
  const bool x_ok = row0 + xr < n, w_ok = col0 + wc < N;
  const float* xsrc = x_ok ? x + static_cast<size_t>(row0 + xr) * K + xk : x;
  const float* wsrc = w_ok ? w + static_cast<size_t>(wk) * N + col0 + wc : w;
  // k of tile t of visit q: §2.1 block bitrev4(p0 + q).
  auto kt_of = [&](int q, int t) {
    const int p = p0 + q;
    const int blk =
        ((p & 1) << 3) | ((p & 2) << 1) | ((p & 4) >> 1) | ((p & 8) >> 3);
    return blk * len + t * kTk;
  };
  auto copy_w = [&](int buf, int kt) {
    cp_async16_zfill(&ws[buf][wk][wc],
                     w_ok ? wsrc + static_cast<size_t>(kt) * N : w, w_ok);
  };
  auto copy_x = [&](int buf, int kt) {
    cp_async16_zfill(&xs[buf][xr][xk], x_ok ? xsrc + kt : x, x_ok);
  };

  pdl_launch_dependents();
  {
    const int kt = kt_of(0, 0);
    copy_w(0, kt);
    pdl_wait();
    copy_x(0, kt);
    cp_async_commit();
  }
  int q = 0, t = 0;  // the current tile: visit q, its tile t
  for (int tau = 0; tau < total; ++tau) {
    const int buf = tau & 1;
    // This thread's copies of tile tau are done; after the barrier every
    // thread's are, and every thread has finished tile tau - 1, whose
    // buffer the next copies overwrite.
    cp_async_wait<0>();
    __syncthreads();
    if (tau + 1 < total) {
      const int nt = t + 1 == T ? 0 : t + 1;
      const int kt = kt_of(nt == 0 ? q + 1 : q, nt);
      copy_w(buf ^ 1, kt);
      copy_x(buf ^ 1, kt);
      cp_async_commit();
    }
    if (t == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
      }
    }
#pragma unroll
    for (int k4 = 0; k4 < kTk; k4 += 4) {
      float4 a[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = *reinterpret_cast<const float4*>(&xs[buf][ty * 4 + i][k4]);
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const float4 b =
            *reinterpret_cast<const float4*>(&ws[buf][k4 + kk][tx * 4]);
        const float bv[4] = {b.x, b.y, b.z, b.w};
        float av[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          av[i] = kk == 0   ? a[i].x
                  : kk == 1 ? a[i].y
                  : kk == 2 ? a[i].z
                            : a[i].w;
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            acc[i][j] = madd(acc[i][j], av[i], bv[j]);
          }
        }
      }
    }
    if (t == T - 1) {
      // Visit q's block sum is done: matmul2_kernel's binary counter (the
      // pending, earlier sum on the left), then left pending.
      int lvl = 0;
      while (q & (1 << lvl)) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 l = stash[(lvl * 4 + i) * 256 + tid];
          acc[i][0] = __fadd_rn(l.x, acc[i][0]);
          acc[i][1] = __fadd_rn(l.y, acc[i][1]);
          acc[i][2] = __fadd_rn(l.z, acc[i][2]);
          acc[i][3] = __fadd_rn(l.w, acc[i][3]);
        }
        ++lvl;
      }
      if (q != per - 1) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          stash[(lvl * 4 + i) * 256 + tid] =
              make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        }
      }
      t = 0;
      ++q;
    } else {
      ++t;
    }
  }
  if (S > 1) {
    // This block's tree node to partial; the last of the S combines
    // (matmul2_kernel's code).
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + ty * 4 + i;
      if (row >= n) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = col0 + tx * 4 + j;
        if (col < N) {
          partial[(static_cast<size_t>(z) * n + row) * N + col] = acc[i][j];
        }
      }
    }
    __threadfence();
    __syncthreads();
    const unsigned tile = blockIdx.y * gridDim.x + blockIdx.x;
    if (tid == 0) last_s = atomicAdd(&counters[tile], 1u) == unsigned(S - 1);
    __syncthreads();
    if (!last_s) return;
    __threadfence();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + ty * 4 + i;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = col0 + tx * 4 + j;
        if (row >= n || col >= N) continue;
        const size_t at = static_cast<size_t>(row) * N + col;
        const size_t part = static_cast<size_t>(n) * N;
        if (S == 2) {
          acc[i][j] =
              __fadd_rn(__ldcg(partial + at), __ldcg(partial + part + at));
        } else {
          acc[i][j] = __fadd_rn(
              __fadd_rn(__ldcg(partial + at), __ldcg(partial + part + at)),
              __fadd_rn(__ldcg(partial + 2 * part + at),
                        __ldcg(partial + 3 * part + at)));
        }
      }
    }
    if (tid == 0) counters[tile] = 0;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty * 4 + i;
    if (row >= n) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx * 4 + j;
      if (col >= N) continue;
      epilogue<kEpi>(__fadd_rn(acc[i][j], bias[col]), row, col, N, y, kv,
                     kv_row, info);
    }
  }
}

// §6 attention of the one-position decode step (one sequence, D = 64; the
// default since 2026-12-02 evening, LOCKSTEP_CUDA_ATTN_STEP=1 keeps
// attention_kernel<true>): head blockIdx.x, the query at position last =
// info[kFirst] attending to 0 .. last. attention_kernel's operations in its
// order, with fewer registers (so that its blocks fit beside the q|k|v
// product's and start while it runs) and fewer phases:
//  - the values of the first two rounds of 64 positions are copied into
//    shared memory (cp.async) right after the wait, each later round as
//    soon as its buffer is free;
//  - s[j] = dot(q, k_j) / sqrt(D) (§2.1: 16 blocks of 4 in k order from
//    +0.0, the tree) by thread j (and j + 256, ...);
//  - the maximum (each thread from s[0] over its j, a butterfly, then the
//    8 warps' in order: equal to the sequential scan's but for the sign of
//    a zero maximum, which no exp(s - m) can see), e[j] = exp(s[j] - m);
//  - §2.4's sum S sequential in j from +0.0, computed by every thread (the
//    same additions in the same order: no broadcast needed), p[j] = e[j] /
//    S into a second array;
//  - §2.5: thread d < 64: out[d] = +0.0, then + p[j] * v_j[d] in j order.
// Dynamic shared memory: attention_step_smem(n_ctx) bytes. early_below:
// below that position the successor is let start at once (it then loads
// its weights while this kernel runs), else at the end.
constexpr int kAsThreads = 256, kAsRound = 64;

inline size_t attention_step_smem(int n_ctx) {
  const size_t nc = (size_t(n_ctx) + 3) / 4 * 4;
  return (2 * nc + 64 + 2 * size_t(kAsRound) * 64) * sizeof(float);
}

template <bool kObs = false>
__global__ void __launch_bounds__(kAsThreads)
    attention_step_kernel(const float* qkv, const float* keys,
                          const float* values, size_t stride, int n_ctx,
                          const int* __restrict__ info, float* out,
                          int early_below) {
  extern __shared__ __align__(16) float assm[];
  const size_t nc = (size_t(n_ctx) + 3) / 4 * 4;
  float* sc = assm;     // scores, then e[j]
  float* pr = sc + nc;  // p[j]
  float* qs = pr + nc;  // the query
  float* vs = qs + 64;  // two rounds of values [2][kAsRound][64]
  __shared__ float red[kAsThreads / 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // info is written before the step's first kernel (not by a kernel).
  const int last = info[Info::kFirst];  // attends to 0 .. last
  const bool early = last < early_below;
  if (early) pdl_launch_dependents();
  pdl_wait();
  const size_t off = static_cast<size_t>(blockIdx.x) * 64;
  auto stage = [&](int r) {  // round r: positions r * kAsRound ...
    const int j0 = r * kAsRound;
    if (j0 <= last) {
      const int cnt = min(kAsRound, last + 1 - j0);
      float* dst = vs + (r & 1) * kAsRound * 64;
      for (int i = tid; i < cnt * 16; i += kAsThreads) {
        const int rr = i >> 4, c4 = i & 15;
        cp_async16(
            dst + rr * 64 + 4 * c4,
            values + static_cast<size_t>(j0 + rr) * stride + off + 4 * c4);
      }
    }
    cp_async_commit();  // possibly empty: one group per round
  };
  stage(0);
  stage(1);
  // The first key's loads before the query's barrier.
  float4 kv[16];
  auto load_key = [&](int j) {
    const float4* kp4 = reinterpret_cast<const float4*>(
        keys + static_cast<size_t>(j) * stride + off);
#pragma unroll
    for (int i = 0; i < 16; ++i) kv[i] = __ldcg(kp4 + i);
  };
  if (tid <= last) load_key(tid);
  if (tid < 16) {
    reinterpret_cast<float4*>(qs)[tid] =
        __ldcg(reinterpret_cast<const float4*>(qkv + off) + tid);
  }
  __syncthreads();
  for (int j = tid; j <= last; j += kAsThreads) {
    if (j != tid) load_key(j);
    float s[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      s[i] = dot4_block(reinterpret_cast<const float4*>(qs)[i], kv[i]);
    }
    sc[j] = score_div8(tree16(s));
  }
  __syncthreads();
  // Observed: the scores (each thread the elements it rewrites below).
  if constexpr (kObs) attn_obs_row(attn_obs.scores, 0, sc, last + 1);
  float m = sc[0];
  for (int j = tid; j <= last; j += kAsThreads) m = sc[j] > m ? sc[j] : m;
#pragma unroll
  for (int h = 16; h >= 1; h /= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, m, h);
    m = o > m ? o : m;
  }
  if (lane == 0) red[warp] = m;
  __syncthreads();
  m = red[0];
#pragma unroll
  for (int w = 1; w < kAsThreads / 32; ++w) m = red[w] > m ? red[w] : m;
  for (int j = tid; j <= last; j += kAsThreads) {
    sc[j] = exp32(__fsub_rn(sc[j], m));
  }
  __syncthreads();
  // §2.4's sum by every thread (broadcast reads, eight terms ahead).
  float S = 0.0f;
  {
    int j = 0;
    for (; j + 8 <= last + 1; j += 8) {
      const float4 a = *reinterpret_cast<const float4*>(sc + j);
      const float4 b = *reinterpret_cast<const float4*>(sc + j + 4);
      S = __fadd_rn(S, a.x);
      S = __fadd_rn(S, a.y);
      S = __fadd_rn(S, a.z);
      S = __fadd_rn(S, a.w);
      S = __fadd_rn(S, b.x);
      S = __fadd_rn(S, b.y);
      S = __fadd_rn(S, b.z);
      S = __fadd_rn(S, b.w);
    }
    for (; j <= last; ++j) S = __fadd_rn(S, sc[j]);
  }
  for (int j = tid; j <= last; j += kAsThreads) pr[j] = __fdiv_rn(sc[j], S);
  // Observed: the probabilities (each thread the elements it wrote).
  if constexpr (kObs) attn_obs_row(attn_obs.probs, 0, pr, last + 1);
  // §2.5, round by round.
  float a = 0.0f;
  for (int r = 0; r * kAsRound <= last; ++r) {
    cp_async_wait<1>();  // round r has arrived (r + 1 may be in flight)
    __syncthreads();     // ... for every thread; and p is written
    const int j0 = r * kAsRound, cnt = min(kAsRound, last + 1 - j0);
    if (tid < 64) {
      const float* vb = vs + (r & 1) * kAsRound * 64 + tid;
      const float* pp = pr + j0;
#pragma unroll 8
      for (int jj = 0; jj < cnt; ++jj) a = madd(a, pp[jj], vb[jj * 64]);
    }
    __syncthreads();  // the buffer is free
    stage(r + 2);
  }
  cp_async_wait<0>();
  if (!early) pdl_launch_dependents();
  if (tid < 64) out[off + tid] = a;
}

// §6 output: logits[v] = dot(h, wte[v]) (§2.1, no bias) for one position;
// sets *flag when one is not finite. 256 threads: 16 vocabulary rows, each
// summed by the 16 lanes of a half warp (lane b: block b, in k order), the
// tree across the lanes. C not a multiple of 16: lane 0 of the half warp
// sums the row sequentially.
__global__ void __launch_bounds__(256)
    logits_kernel(const float* h, const float* __restrict__ wte, int C, int V,
                  float* __restrict__ logits, int* flag) {
  const int r = threadIdx.x / 16, b = threadIdx.x % 16;
  const int v = blockIdx.x * 16 + r;
  pdl_launch_dependents();
  // GPT-2's widths (C = 768): each lane's 12 float4 of wte loaded before
  // the wait (the weights do not depend on earlier kernels).
  const bool pre = C % 16 == 0 && C / 16 == 48 && v < V;
  float4 wv[12];
  if (pre) {
    const float4* wp4 = reinterpret_cast<const float4*>(
        wte + static_cast<size_t>(v) * C + b * 48);
#pragma unroll
    for (int i = 0; i < 12; ++i) wv[i] = __ldg(wp4 + i);
  }
  pdl_wait();
  float s = 0.0f;
  if (C % 16 == 0) {
    const int len = C / 16;
    if (v < V) {
      const float* wp = wte + static_cast<size_t>(v) * C + b * len;
      const float* hp = h + b * len;
      if (pre) {
#pragma unroll
        for (int i = 0; i < 12; ++i) {
          const float4 hv = reinterpret_cast<const float4*>(hp)[i];
          s = madd(s, hv.x, wv[i].x);
          s = madd(s, hv.y, wv[i].y);
          s = madd(s, hv.z, wv[i].z);
          s = madd(s, hv.w, wv[i].w);
        }
      } else if (len % 4 == 0) {
        for (int k = 0; k < len; k += 4) {
          const float4 w4 = __ldg(reinterpret_cast<const float4*>(wp + k));
          const float4 hv = *reinterpret_cast<const float4*>(hp + k);
          s = madd(s, hv.x, w4.x);
          s = madd(s, hv.y, w4.y);
          s = madd(s, hv.z, w4.z);
          s = madd(s, hv.w, w4.w);
        }
      } else {
        for (int k = 0; k < len; ++k) {
          s = madd(s, hp[k], __ldg(wp + k));
        }
      }
    }
    s = tree16_lanes(s);
  } else if (v < V && b == 0) {
    const float* wp = wte + static_cast<size_t>(v) * C;
    for (int k = 0; k < C; ++k) s = madd(s, h[k], __ldg(wp + k));
  }
  if (b == 0 && v < V) {
    logits[v] = s;
    if (!(__fsub_rn(s, s) == 0.0f)) *flag = 1;
  }
}

// The logits again (logits_kernel's operations in its order: 16 lanes of a
// half warp the 16 §2.1 blocks of a vocabulary row, lane b summing block b
// in k order from +0.0, the tree across the lanes), for C = 16 * kLen with
// whole loads: a warp reads its two rows of wte as 6 * kLen / 48 float4 per
// lane, 512 contiguous bytes per load instruction (logits_kernel's lanes
// read 192-byte runs, so each instruction touches half sectors), before the
// wait, then passes them through shared memory (per warp, block b's kLen
// floats at b * (kLen + 4), so that the lanes' float4 reads fall in
// different banks) to the lane that sums them. 128 threads: 8 rows.
// LOCKSTEP_CUDA_LOGITS=1 keeps logits_kernel.
template <int kLen>
__global__ void __launch_bounds__(128)
    logits2_kernel(const float* h, const float* __restrict__ wte, int V,
                   float* __restrict__ logits, int* flag) {
  constexpr int C = 16 * kLen, kPitch = kLen + 4, kRow = 16 * kPitch;
  constexpr int kPer = C / 4 / 32;  // float4 per lane per row
  static_assert(kLen % 4 == 0 && (kPitch / 4) % 2 == 1 && C % 128 == 0,
                "logits2_kernel: kLen");
  __shared__ __align__(16) float buf[4][2 * kRow];
  __shared__ __align__(16) float hs[kRow];  // h, block b at b * kPitch
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int v0 = blockIdx.x * 8 + 2 * warp;  // this warp's rows v0, v0 + 1
  pdl_launch_dependents();
  float4 wv[2][kPer];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const float4* wp4 =
        reinterpret_cast<const float4*>(wte + static_cast<size_t>(v0 + rr) * C);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      wv[rr][i] = v0 + rr < V ? __ldg(wp4 + i * 32 + lane)
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
  float* wb = buf[warp];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int m = i * 32 + lane;  // float4 m of the row: k = 4m .. 4m + 3
      const int blk = m / (kLen / 4), pos = 4 * (m % (kLen / 4));
      *reinterpret_cast<float4*>(wb + rr * kRow + blk * kPitch + pos) =
          wv[rr][i];
    }
  }
  pdl_wait();
  // h is written by the kernel before (ln_f), which may still have been
  // running when this one started: loaded once per block with coherent
  // loads (L2), not through the read-only or L1 path (which may hold lines
  // from before), into shared memory in the weights' layout.
  for (int m = threadIdx.x; m < C / 4; m += 128) {
    *reinterpret_cast<float4*>(hs + (m / (kLen / 4)) * kPitch +
                               4 * (m % (kLen / 4))) =
        __ldcg(reinterpret_cast<const float4*>(h) + m);
  }
  __syncthreads();
  const int rr = lane / 16, b = lane % 16;
  const int v = v0 + rr;
  const float* hp = hs + b * kPitch;
  const float* wr = wb + rr * kRow + b * kPitch;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kLen / 4; ++i) {
    const float4 hv = *reinterpret_cast<const float4*>(hp + 4 * i);
    const float4 w4 = *reinterpret_cast<const float4*>(wr + 4 * i);
    s = madd(s, hv.x, w4.x);
    s = madd(s, hv.y, w4.y);
    s = madd(s, hv.z, w4.z);
    s = madd(s, hv.w, w4.w);
  }
  s = tree16_lanes(s);
  if (b == 0 && v < V) {
    logits[v] = s;
    if (!(__fsub_rn(s, s) == 0.0f)) *flag = 1;
  }
}

// The logits of n rows of h [n][C] (a batch's decode step): logits_kernel's
// layout and order (16 vocabulary rows per block, the 16 lanes of a half
// warp the 16 §2.1 blocks, the tree across lanes), each lane's weights
// loaded once and used for every row; row r's logits at logits + r * V,
// flags[r] set when one of them is not finite. C a multiple of 64 (lanes
// of 4k floats); logits_kernel covers the rest, one row at a time.
__global__ void __launch_bounds__(256)
    logits_rows_kernel(const float* h, const float* __restrict__ wte, int n,
                       int C, int V, float* __restrict__ logits, int* flags) {
  const int r = threadIdx.x / 16, b = threadIdx.x % 16;
  const int v = blockIdx.x * 16 + r;
  const int len = C / 16;
  constexpr int kMax = 25;  // float4 per lane: n_embd up to 1,600
  float4 wv[kMax];
  pdl_launch_dependents();
  const int q = len / 4;
  if (v < V) {
    const float* wp = wte + static_cast<size_t>(v) * C + b * len;
#pragma unroll
    for (int i = 0; i < kMax; ++i) {
      if (i < q) wv[i] = __ldg(reinterpret_cast<const float4*>(wp) + i);
    }
  }
  pdl_wait();
  for (int row = 0; row < n; ++row) {
    float s = 0.0f;
    if (v < V) {
      const float* hp = h + static_cast<size_t>(row) * C + b * len;
#pragma unroll
      for (int i = 0; i < kMax; ++i) {
        if (i < q) {
          const float4 hv = reinterpret_cast<const float4*>(hp)[i];
          s = madd(s, hv.x, wv[i].x);
          s = madd(s, hv.y, wv[i].y);
          s = madd(s, hv.z, wv[i].z);
          s = madd(s, hv.w, wv[i].w);
        }
      }
    }
    s = tree16_lanes(s);
    if (b == 0 && v < V) {
      logits[static_cast<size_t>(row) * V + v] = s;
      if (!(__fsub_rn(s, s) == 0.0f)) flags[row] = 1;
    }
  }
}

// §3 element-wise, for the tests: op 0 exp, 1 tanh, 2 gelu.
__global__ void elementwise_kernel(const float* in, float* out, size_t n,
                                   int op) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  out[i] = op == 0 ? exp32(in[i]) : op == 1 ? tanh32(in[i]) : gelu32(in[i]);
}

// The machine's non-FMA binary32 rate: 8 independent chains of a multiply
// and an add per thread (2 flops each), as the products above do them.
__global__ void nonfma_peak_kernel(float* out, int iters, float a, float b) {
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = threadIdx.x * 1e-3f + i;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = __fadd_rn(__fmul_rn(v[i], a), b);
  }
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s = __fadd_rn(s, v[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

}  // namespace LS_CUDA_VARIANT
}  // namespace lockstep::backends::cuda

#endif  // LOCKSTEP_BACKENDS_CUDA_KERNELS_CUH_
