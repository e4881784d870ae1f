// The CPU backend's kernels, one table per instruction set. Each table is
// compiled in its own translation unit with that ISA's flags
// (kernels_avx512.cc, kernels_avx2.cc, kernels_neon.cc, kernels_generic.cc)
// from the same templates (kernels_impl.h); the backend picks one table at
// creation.
//
// Every kernel computes each output element with exactly the operation
// sequence of docs/arithmetic.md: SIMD lanes run across outputs (or across
// the 16 §2.1 blocks of one output, combined by the §2.1 tree), never
// across the terms of one sum.
//
// This header declares no inline code on purpose: the ISA translation units
// include it, and an inline function emitted there with AVX-512 flags could
// be the copy the linker keeps for everyone.
#ifndef LOCKSTEP_BACKENDS_CPU_KERNELS_H_
#define LOCKSTEP_BACKENDS_CPU_KERNELS_H_

#include <cstddef>

namespace lockstep::cpu {

struct CpuKernels {
  const char* isa;  // "avx512", "avx2", "neon", "generic"
  int lanes;        // binary32 lanes per vector

  // §2.2 for n positions: y[t*ys + o] = dot(x[t*xs + 0..n_in),
  // W[0..n_in, o]) (+ bias[o] when bias is not null) for o in [o0, o1),
  // W input-major [n_in, n_out]. One position uses a tile of 8 vectors x 1
  // position (the weights stream from memory once); a batch 4 x 6
  // (AVX-512) or 2 x 4 (AVX2, generic), reusing each row slice of W for
  // several positions.
  void (*matmul)(const float* x, size_t xs, int n, const float* w,
                 const float* bias, int n_in, int n_out, int o0, int o1,
                 float* y, size_t ys);
  // One position against two 64-column panels, each [n_in, 64] with
  // contiguous rows (the backend's repacked matrices): y[j] = dot(x,
  // p0[:, j]) (+ bias[j]) for j < 64, y[64 + j] from p1 (+ bias[64 + j]).
  // p1 = nullptr: the first panel alone (64 outputs).
  void (*matvec_pair)(const float* x, const float* p0, const float* p1,
                      const float* bias, int n_in, float* y);
  // §3.3 in place on v[0..n).
  void (*gelu)(float* v, int n);
  // §3.1 y[i] = exp(x[i]) (for tests: the vector exp against ls_exp32).
  void (*exp)(const float* x, float* y, int n);
  // §6 attention of `heads` consecutive heads of width D for one query
  // over n positions: score_h[j] = dot(q_h, k_j,h) / scale (§2.1, length
  // D), softmax (§2.4), out_h[d] = the §2.5 weighted sum of v_j,h[d].
  // q[h*D + d]; k_j,h at keys + j*stride + h*D, v_j,h at values + j*stride
  // + h*D; out[h*D + d]. score: heads * n floats of scratch.
  void (*attend)(const float* q, const float* keys, const float* values,
                 size_t stride, int D, int heads, int n, float scale,
                 float* score, float* out);
  // Split K, for decode with more threads than panels: one position
  // against one 64-column panel p ([n_in, 64], rows contiguous, n_in a
  // multiple of 16), only the §2.1 blocks [b0, b1): part[(b - b0) * 64 +
  // j] = block b's sum for output j (from +0.0, k in increasing order, the
  // per-lane operations of matvec_pair). The caller combines the 16 block
  // sums of each output by the §2.1 tree, then adds the bias. Last, with a
  // default, so that a table without it still compiles: nullptr means the
  // backend never splits K on that ISA.
  void (*matvec_blocks)(const float* x, const float* p, int n_in, int b0,
                        int b1, float* part) = nullptr;
  // §6 attention of `rows` consecutive queries of one head of width D (the
  // batched prefill and the full pass): query r attends keys 0 .. n0 + r -
  // 1 (n0 >= 1). q row r at q + r*qs; the head's keys transposed, key j's
  // element d at kt[d*kts + j] (kts a multiple of 16, at least n0 + rows -
  // 1; every column below kts readable); values compact, value j's element
  // d at vc[j*vs + d]; score: rows * kts floats of scratch; out row r at
  // out + r*os. Each score, softmax and weighted sum is attend's (the same
  // operations in the same order); nullptr: the backend calls attend per
  // query.
  void (*attend_rows)(const float* q, size_t qs, int rows, int n0,
                      const float* kt, size_t kts, const float* vc, size_t vs,
                      int D, float scale, float* score, float* out,
                      size_t os) = nullptr;
  // attend in three parts, so that the cached step can split one query's
  // attention over many members (keys, then heads, then value vectors):
  // attend_scores writes s[h*sn + j] for keys [j0, j1) of `heads` heads;
  // softmax is §2.4 in place on s[0..n); attend_values_vec is §2.5 for
  // `lanes` consecutive value elements of one head (values: that slice in
  // position 0's row; p: the head's probabilities). The same per-element
  // operations as attend, so the split gives attend's bits.
  void (*attend_scores)(const float* q, const float* keys, size_t stride, int D,
                        int heads, int j0, int j1, float scale, float* s,
                        size_t sn) = nullptr;
  void (*softmax)(float* s, int n) = nullptr;
  void (*attend_values_vec)(const float* p, const float* values, size_t stride,
                            int n, float* out) = nullptr;
};

const CpuKernels& kernels_avx512();
const CpuKernels& kernels_avx2();
// AArch64 only (kernels_neon.cc is compiled for AArch64 targets alone).
const CpuKernels& kernels_neon();
const CpuKernels& kernels_generic();

}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_KERNELS_H_
