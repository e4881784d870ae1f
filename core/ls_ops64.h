/* lockstep core operations in binary64 (docs/arithmetic.md §2): the ordered
 * matrix-vector product, LayerNorm and softmax. Plain C99 on caller buffers;
 * no allocation, no libc. */
#ifndef LOCKSTEP_CORE_LS_OPS64_H_
#define LOCKSTEP_CORE_LS_OPS64_H_

#ifdef __cplusplus
extern "C" {
#endif

/* §2.1: the ordered sum of x[k]*w[k*stride] for k in [0, n). n a multiple of
 * 16 uses 16 contiguous blocks and the halving tree; any other n is summed
 * sequentially. Both start from +0.0. */
double ls_dot64(const double* x, const double* w, int n, int stride);

/* §2.2: y[o] = dot(x, W[:, o]) (+ b[o]) for a Conv1D (input-major) W of
 * shape [n_in, n_out]; b may be NULL (no bias, not even +0.0 added). */
void ls_matvec64(const double* x, const double* w, const double* b, int n_in,
                 int n_out, double* y);

/* §2.3: LayerNorm of x[0..n) into y with gain g and bias b. */
void ls_layernorm64(const double* x, const double* g, const double* b, int n,
                    double* y);

/* §2.4: p[j] = exp(s[j] - max s) / sum, the sum sequential in j. */
void ls_softmax64(const double* s, int n, double* p);

/* §2.5: out[d] = sum over j in [0, n) of p[j] * v[j*stride + d], d in [0, w),
 * sequential in j from +0.0. */
void ls_weighted_sum64(const double* p, const double* v, int n, int stride,
                       int w, double* out);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_OPS64_H_ */
