// The CPU kernels as templates over a vector-traits class V (vec_*.h).
// Included by exactly one translation unit per ISA, after that ISA's traits;
// everything here has internal linkage.
//
// The rule every kernel follows (docs/arithmetic.md §1.7): a SIMD lane holds
// one output element (or one §2.1 block of one output) and performs that
// element's scalar operations in the spec's order. Vector width, tile
// shape, thread split and loop order over *different* outputs are free; the
// order of the terms of one sum is not.
#ifndef LOCKSTEP_BACKENDS_CPU_KERNELS_IMPL_H_
#define LOCKSTEP_BACKENDS_CPU_KERNELS_IMPL_H_

#include <cstddef>
#include <cstdint>

#include "backends/cpu/vec_scalar.h"
#include "ls_ops32.h"

namespace lockstep::cpu {
namespace {

// ---------------------------------------------------------------------------
// §2.2 matrix products, register-tiled.
//
// One tile: NP positions x NV vectors of outputs (NV * V::W columns). For
// §2.1 block b (k in [b*L, b*L + L)), every accumulator starts at +0.0 and
// adds x[p][k] * W[k][o] for k in increasing order: one broadcast of x[p][k]
// times one contiguous slice of row k of W, so lane o of acc[p][v] is
// exactly output o's block sum. The 16 block sums are kept in `part` and
// combined by the §2.1 halving tree; the bias is added last.
//
// w points at column o of row 0 (row stride ldw = n_out); x at position 0
// (row stride xs); y at position 0, column o (row stride ys).
template <class V, int NV, int NP>
void matmul_tile(const float* x, size_t xs, const float* w, size_t ldw,
                 int nblk, int L, const float* bias, float* y, size_t ys) {
  using reg = typename V::reg;
  constexpr int W = V::W;
  reg part[16][NP][NV];
  for (int b = 0; b < nblk; ++b) {
    reg acc[NP][NV];
#pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 32
      for (int v = 0; v < NV; ++v) acc[p][v] = V::zero();
    }
    const float* wk = w + size_t(b) * size_t(L) * ldw;
    const float* xk = x + size_t(b) * size_t(L);
    for (int k = 0; k < L; ++k, wk += ldw) {
      reg wv[NV];
#pragma GCC unroll 32
      for (int v = 0; v < NV; ++v) wv[v] = V::load(wk + v * W);
#pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) {
        const reg xb = V::set1(xk[size_t(p) * xs + size_t(k)]);
#pragma GCC unroll 32
        for (int v = 0; v < NV; ++v) {
          acc[p][v] = V::add(acc[p][v], V::mul(xb, wv[v]));
        }
      }
    }
#pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 32
      for (int v = 0; v < NV; ++v) part[b][p][v] = acc[p][v];
    }
  }
  if (nblk == 16) {
    for (int h = 8; h >= 1; h /= 2) {
      for (int i = 0; i < h; ++i) {
        for (int p = 0; p < NP; ++p) {
          for (int v = 0; v < NV; ++v) {
            part[i][p][v] = V::add(part[i][p][v], part[i + h][p][v]);
          }
        }
      }
    }
  }
  for (int p = 0; p < NP; ++p) {
    for (int v = 0; v < NV; ++v) {
      reg s = part[0][p][v];
      if (bias) s = V::add(s, V::load(bias + v * W));
      V::store(y + size_t(p) * ys + size_t(v * W), s);
    }
  }
}

// All n positions of one column tile: NP positions at a time, then the rest.
template <class V, int NV, int NP>
void matmul_columns(const float* x, size_t xs, int n, const float* w,
                    size_t ldw, int nblk, int L, const float* bias, float* y,
                    size_t ys) {
  int t = 0;
  for (; t + NP <= n; t += NP) {
    matmul_tile<V, NV, NP>(x + size_t(t) * xs, xs, w, ldw, nblk, L, bias,
                           y + size_t(t) * ys, ys);
  }
  const float* xt = x + size_t(t) * xs;
  float* yt = y + size_t(t) * ys;
  switch (n - t) {
#define LOCKSTEP_REST(R)                                            \
  case R:                                                           \
    if constexpr (R < NP) {                                         \
      matmul_tile<V, NV, R>(xt, xs, w, ldw, nblk, L, bias, yt, ys); \
    }                                                               \
    break;
    LOCKSTEP_REST(1)
    LOCKSTEP_REST(2)
    LOCKSTEP_REST(3)
    LOCKSTEP_REST(4)
    LOCKSTEP_REST(5)
    LOCKSTEP_REST(6)
    LOCKSTEP_REST(7)
#undef LOCKSTEP_REST
    default:
      break;
  }
}

// Columns [o0, o1) of W: tiles of NV vectors, then of NV / 2, then single
// vectors, then single columns as scalar code (the same operations, one
// lane).
template <class V, int NV, int NP>
void matmul_range(const float* x, size_t xs, int n, const float* w,
                  const float* bias, int n_in, int n_out, int o0, int o1,
                  float* y, size_t ys) {
  constexpr int W = V::W, TW = NV * W;
  const int nblk = (n_in > 0 && n_in % 16 == 0) ? 16 : 1;
  const int L = n_in / nblk;
  const size_t ldw = size_t(n_out);
  int o = o0;
  for (; o + TW <= o1; o += TW) {
    matmul_columns<V, NV, NP>(x, xs, n, w + o, ldw, nblk, L,
                              bias ? bias + o : nullptr, y + o, ys);
  }
  if constexpr (NV >= 4) {
    for (; o + TW / 2 <= o1; o += TW / 2) {
      matmul_columns<V, NV / 2, NP>(x, xs, n, w + o, ldw, nblk, L,
                                    bias ? bias + o : nullptr, y + o, ys);
    }
  }
  for (; o + W <= o1; o += W) {
    matmul_columns<V, 1, NP>(x, xs, n, w + o, ldw, nblk, L,
                             bias ? bias + o : nullptr, y + o, ys);
  }
  for (; o < o1; ++o) {
    matmul_columns<VecScalar, 1, NP>(x, xs, n, w + o, ldw, nblk, L,
                                     bias ? bias + o : nullptr, y + o, ys);
  }
}

// One position against two 64-column panels p0, p1 (each [n_in, 64],
// rows contiguous): 128 outputs, y[0..64) from p0 and y[64..128) from p1,
// in one tile of 2 * (64 / W) vectors, so that two linear streams feed
// 8 AVX-512 accumulators (the per-lane arithmetic is matmul_tile's). For
// narrower vectors, one panel at a time.
//
// Page touch-ahead: every 4 KB of each stream, one prefetch 8 KB ahead.
// The hardware prefetchers stop at 4 KB page boundaries, so without it
// every new page starts with a demand miss (and, on a virtual machine, a
// costly nested page walk). A streaming read on the development VM: 26
// GB/s plain, 37 GB/s with this touch-ahead (docs/benchmarks.md); decode
// with one thread gained about 4%. Prefetches past the end of a panel are
// harmless (no fault, no effect on results).
template <class V, int NVH, int NPAN>
void matvec_pair_tile(const float* x, const float* p0, const float* p1,
                      int nblk, int L, const float* bias, float* y) {
  using reg = typename V::reg;
  constexpr int W = V::W, PW = NVH * W, NA = NPAN * NVH;
  reg part[16][NA];
  for (int b = 0; b < nblk; ++b) {
    reg acc[NA];
#pragma GCC unroll 32
    for (int v = 0; v < NA; ++v) acc[v] = V::zero();
    const size_t r0 = size_t(b) * size_t(L);
    const float* w0 = p0 + r0 * PW;
    const float* w1 = NPAN == 2 ? p1 + r0 * PW : w0;
    const float* xk = x + r0;
    for (int k = 0; k < L; ++k, w0 += PW, w1 += PW) {
      if ((k & 15) == 0) {  // every 4 KB of each stream (PW = 64)
        __builtin_prefetch(w0 + 32 * PW, 0, 2);
        if constexpr (NPAN == 2) __builtin_prefetch(w1 + 32 * PW, 0, 2);
      }
      const reg xb = V::set1(xk[k]);
#pragma GCC unroll 32
      for (int v = 0; v < NVH; ++v) {
        acc[v] = V::add(acc[v], V::mul(xb, V::load(w0 + v * W)));
        if constexpr (NPAN == 2) {
          acc[NVH + v] = V::add(acc[NVH + v], V::mul(xb, V::load(w1 + v * W)));
        }
      }
    }
#pragma GCC unroll 32
    for (int v = 0; v < NA; ++v) part[b][v] = acc[v];
  }
  if (nblk == 16) {
    for (int h = 8; h >= 1; h /= 2) {
      for (int i = 0; i < h; ++i) {
        for (int v = 0; v < NA; ++v) {
          part[i][v] = V::add(part[i][v], part[i + h][v]);
        }
      }
    }
  }
  for (int v = 0; v < NA; ++v) {
    reg s = part[0][v];
    if (bias) s = V::add(s, V::load(bias + v * W));
    V::store(y + v * W, s);
  }
}

template <class V>
void matvec_pair(const float* x, const float* p0, const float* p1,
                 const float* bias, int n_in, float* y) {
  const int nblk = (n_in > 0 && n_in % 16 == 0) ? 16 : 1;
  const int L = n_in / nblk;
  if constexpr (64 / V::W <= 4) {
    if (p1) {
      matvec_pair_tile<V, 64 / V::W, 2>(x, p0, p1, nblk, L, bias, y);
    } else {
      matvec_pair_tile<V, 64 / V::W, 1>(x, p0, nullptr, nblk, L, bias, y);
    }
  } else {
    matmul_range<V, 8, 1>(x, 0, 1, p0, bias, n_in, 64, 0, 64, y, 0);
    if (p1) {
      matmul_range<V, 8, 1>(x, 0, 1, p1, bias ? bias + 64 : nullptr, n_in, 64,
                            0, 64, y + 64, 0);
    }
  }
}

// Split K (decode with more members than panels): the §2.1 block sums of
// blocks [b0, b1) of one position against one 64-column panel p ([n_in,
// 64], rows contiguous, n_in a multiple of 16): part[(b - b0) * 64 + j] =
// block b's sum for output j, from +0.0 with k in increasing order, as
// matvec_pair_tile computes it (the same per-lane operations and page
// touch-ahead). The caller combines the 16 blocks of each output by the
// §2.1 tree and then adds the bias, exactly as the unsplit kernel does.
template <class V>
void matvec_blocks(const float* x, const float* p, int n_in, int b0, int b1,
                   float* part) {
  using reg = typename V::reg;
  constexpr int W = V::W, PW = 64;
  static_assert(PW % W == 0, "a panel is whole vectors");
  constexpr int NA = PW / W;
  const int L = n_in / 16;
  for (int b = b0; b < b1; ++b) {
    const size_t r0 = size_t(b) * size_t(L);
    const float* w0 = p + r0 * PW;
    const float* xk = x + r0;
    if constexpr (NA <= 8) {
      reg acc[NA];
#pragma GCC unroll 32
      for (int v = 0; v < NA; ++v) acc[v] = V::zero();
      for (int k = 0; k < L; ++k, w0 += PW) {
        if ((k & 15) == 0) __builtin_prefetch(w0 + 32 * PW, 0, 2);
        const reg xb = V::set1(xk[k]);
#pragma GCC unroll 32
        for (int v = 0; v < NA; ++v) {
          acc[v] = V::add(acc[v], V::mul(xb, V::load(w0 + v * W)));
        }
      }
      float* out = part + size_t(b - b0) * PW;
#pragma GCC unroll 32
      for (int v = 0; v < NA; ++v) V::store(out + v * W, acc[v]);
    } else {
      // Narrow vectors: 8 at a time across the panel's columns.
      float* out = part + size_t(b - b0) * PW;
      for (int c = 0; c < PW; c += 8 * W) {
        reg acc[8];
#pragma GCC unroll 8
        for (int v = 0; v < 8; ++v) acc[v] = V::zero();
        const float* wk = w0 + c;
        for (int k = 0; k < L; ++k, wk += PW) {
          const reg xb = V::set1(xk[k]);
#pragma GCC unroll 8
          for (int v = 0; v < 8; ++v) {
            acc[v] = V::add(acc[v], V::mul(xb, V::load(wk + v * W)));
          }
        }
#pragma GCC unroll 8
        for (int v = 0; v < 8; ++v) V::store(out + c + v * W, acc[v]);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Element-wise §3 functions, W elements at a time.
template <class V>
void gelu(float* v, int n) {
  constexpr int W = V::W;
  int i = 0;
  for (; i + W <= n; i += W) V::store(v + i, V::gelu(V::load(v + i)));
  for (; i < n; ++i) v[i] = VecScalar::gelu(v[i]);
}

template <class V>
void exp_n(const float* x, float* y, int n) {
  constexpr int W = V::W;
  int i = 0;
  for (; i + W <= n; i += W) V::store(y + i, V::exp(V::load(x + i)));
  for (; i < n; ++i) y[i] = VecScalar::exp(x[i]);
}

// ---------------------------------------------------------------------------
// §2.4 softmax of s[0..n) in place, in three parts: softmax_exp (the
// maximum, then e[j] = exp(s[j] - m) in place), the sum (sequential from
// +0.0), softmax_div (p[j] = e[j] / sum).
template <class V>
void softmax_exp(float* s, int n) {
  using reg = typename V::reg;
  constexpr int W = V::W;
  // The maximum: only its value matters (s[j] - m, and exp(+-0) = 1, do
  // not see the sign of a zero maximum), so lanes may find it in any
  // order. Then e[j] = exp(s[j] - m) lane by lane.
  float m = s[0];
  int j = 0;
  if (n >= W) {
    reg mv = V::load(s);
    for (j = W; j + W <= n; j += W) mv = V::max(mv, V::load(s + j));
    const float vm = V::reduce_max(mv);
    m = vm > m ? vm : m;
  }
  for (; j < n; ++j) m = s[j] > m ? s[j] : m;
  const reg mv = V::set1(m);
  for (j = 0; j + W <= n; j += W) {
    V::store(s + j, V::exp(V::sub(V::load(s + j), mv)));
  }
  for (; j < n; ++j) s[j] = VecScalar::exp(s[j] - m);
}

template <class V>
void softmax_div(float* s, int n, float sum) {
  using reg = typename V::reg;
  constexpr int W = V::W;
  const reg sv = V::set1(sum);
  int j = 0;
  for (; j + W <= n; j += W) V::store(s + j, V::div(V::load(s + j), sv));
  for (; j < n; ++j) s[j] = s[j] / sum;
}

template <class V>
void softmax(float* s, int n) {
  softmax_exp<V>(s, n);
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum = sum + s[j];
  softmax_div<V>(s, n, sum);
}

// §6 attention of `heads` consecutive heads (width D) for one query over n
// positions: q[h*D + d]; position j's keys at keys + j*stride + h*D, values
// likewise. s: heads * n floats of scratch; out[h*D + d]. Positions are
// the outer loop and heads the inner one, so each position's keys and
// values for the whole group are read together (one page, where a cache
// row is 72 KB apart from the next), and each output element still sums
// over j in order from +0.0. Rows kAttendAhead positions ahead are
// prefetched: one position's slice is a few cache lines on its own page,
// which no hardware prefetcher follows.
constexpr int kAttendAhead = 8;

inline void prefetch_span(const float* p, size_t floats) {
  const char* c = reinterpret_cast<const char*>(p);
  for (size_t b = 0; b < floats * sizeof(float); b += 64) {
    __builtin_prefetch(c + b, 0, 3);
  }
}
// §2.5 for HC consecutive heads of width 64 (VPH vectors each) with the
// HC * VPH accumulators in registers across all n positions: out[e] =
// +0.0, then out[e] + p_h[j] * v_j[e] for j in order, as the loop below
// it in attend, without a load and a store of every output per position.
// s: head h's probabilities at s + h * sn; values: the first head's
// values of position 0; out: the first head's outputs.
template <class V, int VPH, int HC>
void wsum_chunk(const float* s, size_t sn, const float* values, size_t stride,
                int n, float* out) {
  using reg = typename V::reg;
  constexpr int W = V::W, NA = HC * VPH;
  reg acc[NA];
#pragma GCC unroll 16
  for (int i = 0; i < NA; ++i) acc[i] = V::zero();
  for (int j = 0; j < n; ++j) {
    const float* vj = values + size_t(j) * stride;
    if (j + kAttendAhead < n) {
      prefetch_span(vj + size_t(kAttendAhead) * stride, size_t(NA * W));
    }
#pragma GCC unroll 4
    for (int h = 0; h < HC; ++h) {
      const reg pv = V::set1(s[size_t(h) * sn + size_t(j)]);
#pragma GCC unroll 16
      for (int v = 0; v < VPH; ++v) {
        acc[h * VPH + v] = V::add(acc[h * VPH + v],
                                  V::mul(pv, V::load(vj + (h * VPH + v) * W)));
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < NA; ++i) V::store(out + i * W, acc[i]);
}

// Registers a head's query takes in V::split64 form: V::kSplitRegs where
// the traits say (AVX2: 8), else 4.
template <class V>
constexpr int split_regs() {
  if constexpr (requires { V::kSplitRegs; }) {
    return V::kSplitRegs;
  } else {
    return 4;
  }
}

// §6 scores of one query for keys [j0, j1) of `heads` consecutive heads:
// s[h*sn + j] = dot(q_h, k_j,h) / scale (§2.1 dot of length D, then one
// division). Each score is independent of the others, so the cached step
// may split the keys of a long context across members.
template <class V>
void attend_scores(const float* q, const float* keys, size_t stride, int D,
                   int heads, int j0, int j1, float scale, float* s,
                   size_t sn) {
  using reg = typename V::reg;
  if constexpr (requires { V::dot64(nullptr, nullptr); }) {
    if (D == 64 && heads <= 32) {
      reg qs[32][split_regs<V>()];
      for (int h = 0; h < heads; ++h) V::split64(q + 64 * h, qs[h]);
      for (int j = j0; j < j1; ++j) {
        const float* kj = keys + size_t(j) * stride;
        if (j + kAttendAhead < j1) {
          prefetch_span(kj + size_t(kAttendAhead) * stride, size_t(64 * heads));
        }
        for (int h = 0; h < heads; ++h) {
          s[size_t(h) * sn + size_t(j)] = V::dot64(qs[h], kj + 64 * h) / scale;
        }
      }
      return;
    }
  }
  for (int j = j0; j < j1; ++j) {
    const float* kj = keys + size_t(j) * stride;
    if (j + kAttendAhead < j1) {
      prefetch_span(kj + size_t(kAttendAhead) * stride, size_t(heads * D));
    }
    for (int h = 0; h < heads; ++h) {
      const size_t off = size_t(h) * size_t(D);
      s[size_t(h) * sn + size_t(j)] = ls_dot32(q + off, kj + off, D, 1) / scale;
    }
  }
}

// §2.5 for V::W consecutive value elements of one head: out[e] = +0.0,
// then out[e] + p[j] * v_j[e] for j in [0, n) in order (wsum_chunk's
// lanes). values: element 0 of the slice in position 0's row.
template <class V>
void attend_values_vec(const float* p, const float* values, size_t stride,
                       int n, float* out) {
  wsum_chunk<V, 1, 1>(p, 0, values, stride, n, out);
}

template <class V>
void attend(const float* q, const float* keys, const float* values,
            size_t stride, int D, int heads, int n, float scale, float* s,
            float* out) {
  using reg = typename V::reg;
  constexpr int W = V::W;
  const size_t sn = size_t(n);
  attend_scores<V>(q, keys, stride, D, heads, 0, n, scale, s, sn);
  for (int h = 0; h < heads; ++h) softmax<V>(s + size_t(h) * sn, n);
  // §2.5: element e = h*D + d accumulates p_h[j] * v_j[e] for j in order.
  const int E = heads * D;
  if constexpr (64 % W == 0 && 64 / W <= 16) {
    if (D == 64) {
      constexpr int kVph = 64 / W, kChunk = 16 / kVph;
      for (int h0 = 0; h0 < heads; h0 += kChunk) {
        const int hc = heads - h0 < kChunk ? heads - h0 : kChunk;
        const float* sh = s + size_t(h0) * sn;
        const float* vh = values + size_t(h0) * 64;
        float* oh = out + size_t(h0) * 64;
        if (hc == 1) wsum_chunk<V, kVph, 1>(sh, sn, vh, stride, n, oh);
        if constexpr (kChunk >= 2) {
          if (hc == 2) wsum_chunk<V, kVph, 2>(sh, sn, vh, stride, n, oh);
        }
        if constexpr (kChunk >= 4) {
          if (hc == 3) wsum_chunk<V, kVph, 3>(sh, sn, vh, stride, n, oh);
          if (hc == 4) wsum_chunk<V, kVph, 4>(sh, sn, vh, stride, n, oh);
        }
      }
      return;
    }
  }
  for (int e = 0; e < E; ++e) out[e] = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float* vj = values + size_t(j) * stride;
    if (j + kAttendAhead < n) {
      prefetch_span(vj + size_t(kAttendAhead) * stride, size_t(E));
    }
    for (int h = 0; h < heads; ++h) {
      const float pj = s[size_t(h) * sn + size_t(j)];
      const reg pv = V::set1(pj);
      float* o = out + h * D;
      const float* v = vj + h * D;
      int d = 0;
      for (; d + W <= D; d += W) {
        V::store(o + d, V::add(V::load(o + d), V::mul(pv, V::load(v + d))));
      }
      for (; d < D; ++d) o[d] = o[d] + pj * v[d];
    }
  }
}

// ---------------------------------------------------------------------------
// §6 attention of a block of consecutive queries of one head (the batched
// prefill and the full pass). Query r (0 <= r < rows) attends keys
// 0 .. n0 + r - 1, n0 >= 1: its q at q + r*qs (D floats); the head's keys
// transposed, key j's element d at kt[d*kts + j] (kts a multiple of 16,
// kts >= n0 + rows - 1; the columns past the keys are read, never used);
// its values compact, value j's element d at vc[j*vs + d]; scores: rows *
// kts floats of scratch; query r's output at out + r*os.
//
// Every output keeps its one order:
//  - score s[r][j] = dot(q_r, k_j) / scale: the score matrix Q . K^T is a
//    matrix product with K^T as an input-major [D, keys] matrix, so the
//    batched product's tile computes it, each lane one (query, key) pair
//    running §2.1 (16 blocks of D / 16 from +0.0, the halving tree, or
//    sequential for other D) — the per-score operations of ls_dot32. Each
//    tile of NP queries computes the keys up to its last query's (the few
//    past a query's own are computed and left unused). Then one division
//    per score: by scale, or, when scale is a power of two whose inverse
//    is exact (8 for D = 64), a product with that inverse, which is the
//    same correctly rounded value of the same real number.
//  - softmax (§2.4) per query over its own keys, as softmax() above.
//  - out[r][d] = the §2.5 sum of p[r][j] * v_j[d] for j = 0 .. n0 + r - 1
//    in order from +0.0: the batched product's tile again, with a single
//    block (sequential sum) over the keys the tile's queries share
//    (0 .. n0 + r0 - 1 for the tile's first query r0), each lane one
//    (query, d) output; then each later query of the tile continues its
//    own sums over its remaining keys, in order.
template <class V, int NV, int NP>
void attend_rows(const float* q, size_t qs, int rows, int n0, const float* kt,
                 size_t kts, const float* vc, size_t vs, int D, float scale,
                 float* s, float* out, size_t os) {
  using reg = typename V::reg;
  constexpr int W = V::W, TW = NV * W;
  // Scores, NP queries at a time.
  for (int r0 = 0; r0 < rows; r0 += NP) {
    const int np = rows - r0 < NP ? rows - r0 : NP;
    const int need = n0 + r0 + np - 1;
    const int o1 = (need + W - 1) / W * W;
    matmul_range<V, NV, NP>(q + size_t(r0) * qs, qs, np, kt, nullptr, D,
                            int(kts), 0, o1, s + size_t(r0) * kts, kts);
  }
  // The division, then §2.4 query by query: the maximum and e = exp(s -
  // m) as softmax() computes them; the sums of four queries at a time
  // interleaved, each its own sequential sum from +0.0 in key order (four
  // independent chains, not one waiting on each add); the division.
  uint32_t sb;
  __builtin_memcpy(&sb, &scale, sizeof sb);
  const uint32_t ex = (sb >> 23) & 0xffu;
  const bool pow2 = (sb & 0x807fffffu) == 0 && ex > 1 && ex < 253;
  const float inv = 1.0f / scale;  // exact when pow2
  for (int r = 0; r < rows; ++r) {
    float* sr = s + size_t(r) * kts;
    const int n = n0 + r;
    int j = 0;
    if (pow2) {
      const reg iv = V::set1(inv);
      for (; j + W <= n; j += W) V::store(sr + j, V::mul(V::load(sr + j), iv));
      for (; j < n; ++j) sr[j] = sr[j] * inv;
    } else {
      const reg sv = V::set1(scale);
      for (; j + W <= n; j += W) V::store(sr + j, V::div(V::load(sr + j), sv));
      for (; j < n; ++j) sr[j] = sr[j] / scale;
    }
    softmax_exp<V>(sr, n);
  }
  for (int r0 = 0; r0 < rows; r0 += 4) {
    const int g = rows - r0 < 4 ? rows - r0 : 4;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const float* e[4];
    for (int i = 0; i < 4; ++i) {
      e[i] = s + size_t(r0 + (i < g ? i : 0)) * kts;
    }
    int j = 0;
    if (g == 4) {
      for (; j < n0 + r0; ++j) {
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) sum[i] = sum[i] + e[i][j];
      }
    }
    for (int i = 0; i < g; ++i) {
      for (int k = j; k < n0 + r0 + i; ++k) sum[i] = sum[i] + e[i][k];
      softmax_div<V>(s + size_t(r0 + i) * kts, n0 + r0 + i, sum[i]);
    }
  }
  // §2.5: the keys a tile's queries share, then each query's own.
  for (int r0 = 0; r0 < rows; r0 += NP) {
    const int np = rows - r0 < NP ? rows - r0 : NP;
    const int L = n0 + r0;
    const float* p = s + size_t(r0) * kts;
    float* o = out + size_t(r0) * os;
    int d = 0;
    for (; d + TW <= D; d += TW) {
      matmul_columns<V, NV, NP>(p, kts, np, vc + d, vs, 1, L, nullptr, o + d,
                                os);
    }
    for (; d + W <= D; d += W) {
      matmul_columns<V, 1, NP>(p, kts, np, vc + d, vs, 1, L, nullptr, o + d,
                               os);
    }
    for (; d < D; ++d) {
      matmul_columns<VecScalar, 1, NP>(p, kts, np, vc + d, vs, 1, L, nullptr,
                                       o + d, os);
    }
    for (int r = 1; r < np; ++r) {
      const float* pr = p + size_t(r) * kts;
      float* orow = o + size_t(r) * os;
      for (int j = L; j < L + r; ++j) {
        const float pj = pr[j];
        const reg pv = V::set1(pj);
        const float* v = vc + size_t(j) * vs;
        int e = 0;
        for (; e + W <= D; e += W) {
          V::store(orow + e,
                   V::add(V::load(orow + e), V::mul(pv, V::load(v + e))));
        }
        for (; e < D; ++e) orow[e] = orow[e] + pj * v[e];
      }
    }
  }
}

}  // namespace
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_KERNELS_IMPL_H_
