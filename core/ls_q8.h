/* Grouped int8 operations (docs/arithmetic.md §7): bfloat16 scales, the
 * quantization of a group of 64 values, the panel layout of a quantized
 * matrix and the int8 product. Plain C99 on caller buffers, no allocation,
 * no libc: the scalar reference every int8 fast path (SIMD, WebAssembly,
 * CUDA, WGSL) must match bit for bit. */
#ifndef LOCKSTEP_CORE_LS_Q8_H_
#define LOCKSTEP_CORE_LS_Q8_H_

#include <stddef.h>
#include <stdint.h>

#include "ls_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values per group (§7.0) and output columns per panel (§7.6). */
#define LS_Q8_GROUP 64
#define LS_Q8_PANEL 64
/* The quantization levels are [-LS_Q8_MAX, LS_Q8_MAX] (§7.2). */
#define LS_Q8_MAX 127

/* §7.1: a finite v >= 0 to bfloat16, round to nearest, ties to even. */
uint16_t ls_bf16_from_f32(float v);
/* §7.1: the binary32 with bits b << 16 (exact). */
float ls_bf16_to_f32(uint16_t b);

/* §7.2, activations: quantizes x[0..K), K a multiple of 64, one group of
 * 64 at a time: q[k] in [-127, 127], s[k / 64] = m / 127 (binary32).
 * Returns LS_ERR_OUTPUT_NONFINITE (q and s then undefined) when some x[k]
 * is NaN or infinite, else LS_OK. */
ls_status ls_q8_quantize(const float* x, int K, int8_t* q, float* s);

/* §7.2, weights: quantizes one group of 64 values v[i * stride] with a
 * bfloat16 scale: *s = bf16(m / 127), q[i] against widen(*s). Returns
 * LS_ERR_WEIGHT_NONFINITE (q, s undefined) for a non-finite value. */
ls_status ls_q8_quantize_weights(const float* v, long stride, int8_t* q,
                                 uint16_t* s);

/* §7.6: the bytes of a quantized matrix M [K, N] (K a multiple of 64):
 * N * (K + 2 * K / 64). */
size_t ls_q8_matrix_bytes(size_t K, size_t N);
/* §7.6: where M's int8 weight (k, o) and bfloat16 scale (o, g) are, in
 * bytes from the matrix's start. */
size_t ls_q8_weight_index(size_t K, size_t N, size_t k, size_t o);
size_t ls_q8_scale_index(size_t K, size_t N, size_t o, size_t g);

/* Quantizes columns [o0, o1) of M [K, N] (o0 a multiple of 64, or o1 = N
 * for a whole matrix from o0 = 0) into their places in the §7.6 layout at
 * dst, the start of the whole matrix (ls_q8_matrix_bytes(K, N) bytes).
 * Element (k, o) is read at w[k * ld + (o - o0) * cs]: a block matrix
 * W [K, N] input-major is ld = N, cs = 1; the head wte^T read from rows
 * o0 .. o1-1 of wte [N, K] is ld = 1, cs = K (so a converter can stream wte
 * a panel at a time). Returns LS_ERR_WEIGHT_NONFINITE for a non-finite
 * weight. */
ls_status ls_q8_pack(const float* w, size_t K, size_t N, size_t ld, size_t cs,
                     size_t o0, size_t o1, uint8_t* dst);

/* The weight (k, o) of a packed matrix, dequantized: float(q) * widen(s)
 * (§7.4). Column o of M into out[0..K) (an embedding row). */
void ls_q8_column(const uint8_t* m, size_t K, size_t N, size_t o, float* out);

/* §7.3 for one position: y[o] = sum over groups of float(isum) * (sx[g] *
 * sw[o][g]) from +0.0, then + b[o] (b may be NULL), for a packed M [K, N]
 * and an input quantized by ls_q8_quantize (qx[K], sx[K / 64]). */
void ls_q8_matvec(const int8_t* qx, const float* sx, const uint8_t* m, int K,
                  int N, const float* b, float* y);

/* §7.3 for n positions: y[t * N + o] for t < n is output o of position t,
 * whose input is quantized at qx + t * K, sx + t * (K / 64) (n inputs
 * quantized by ls_q8_quantize, one after another). Each output is exactly
 * what ls_q8_matvec computes for that position alone: §7.3's order is per
 * output and does not depend on the batch, so the bits are those of n
 * single-position calls. The batched passes (prefill, full prefix) call
 * it, so that a backend (the WebAssembly SIMD module) can replace it with
 * a kernel that reads each panel once for several positions. */
void ls_q8_matmul(const int8_t* qx, const float* sx, int n, const uint8_t* m,
                  int K, int N, const float* b, float* y);

/* 1 when a packed matrix is well formed: every weight byte in [-127, 127]
 * (never -128) and every scale finite and non-negative (no sign bit). */
int ls_q8_matrix_valid(const uint8_t* m, size_t K, size_t N);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_Q8_H_ */
