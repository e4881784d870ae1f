/* lockstep core operations in binary32 (docs/arithmetic.md §2), for GPT-2.
 * Plain C99 on caller buffers; no allocation, no libc. */
#ifndef LOCKSTEP_CORE_LS_OPS32_H_
#define LOCKSTEP_CORE_LS_OPS32_H_

#ifdef __cplusplus
extern "C" {
#endif

/* §2.1: the ordered dot product of x[0..n) and w[k*stride]. */
float ls_dot32(const float* x, const float* w, int n, int stride);

/* §2.2: y[o] = dot(x, W[:, o]) (+ b[o]) for an input-major W [n_in, n_out];
 * b may be NULL. Streams W row by row (each output keeps the §2.1 order),
 * which needs `partial`: 16 * n_out floats of scratch when n_in is a
 * multiple of 16, n_out otherwise. */
void ls_matvec32(const float* x, const float* w, const float* b, int n_in,
                 int n_out, float* partial, float* y);

/* §2.2 for n positions: y[t * n_out + o] = dot(x[t * n_in ..], W[:, o])
 * (+ b[o]) for t in [0, n), each output exactly as ls_matvec32 computes
 * it (the same partial scratch). The batched passes call it, so that a
 * backend (the WebAssembly SIMD module) can replace it with a kernel that
 * reads each row of W once for several positions. */
void ls_matmul32(const float* x, int n, const float* w, const float* b,
                 int n_in, int n_out, float* partial, float* y);

/* The last steps of ls_matvec32 for outputs [o0, n_out): output o's block
 * sums partial[blk * n_out + o] combined by the §2.1 tree (blocks == 16;
 * with blocks == 1, partial[o] is the sum), then the bias. For kernels
 * that accumulate the partials their own way (the WebAssembly module). */
void ls_matvec32_finish(const float* partial, const float* b, int blocks,
                        int n_out, int o0, float* y);

/* §2.1 over rows: y[r] = dot(x, M[r, :]) for a row-major M [n_rows, n] (the
 * tied GPT-2 output head, logits = h . wte^T). */
void ls_rowdots32(const float* x, const float* m, int n, int n_rows, float* y);

/* §2.3 in binary32, eps = 0x1.4f8b58p-17. */
void ls_layernorm32(const float* x, const float* g, const float* b, int n,
                    float* y);

/* §2.4 in binary32. */
void ls_softmax32(const float* s, int n, float* p);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_OPS32_H_ */
