/* The tiny byte-level GPT-2 in binary64 (docs/models.md, docs/arithmetic.md
 * §4): vocabulary 256, width 4, one pre-norm block with two heads of width
 * 2, feed-forward width 8, tanh GELU, final LayerNorm, untied 4 -> 256 head
 * with bias. Plain C99 on caller buffers. */
#ifndef LOCKSTEP_CORE_LS_TINY_H_
#define LOCKSTEP_CORE_LS_TINY_H_

#include <stddef.h>
#include <stdint.h>

#include "ls_status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  LS_TINY_VOCAB = 256,
  LS_TINY_EMBD = 4,
  LS_TINY_HEADS = 2,
  LS_TINY_HEAD_DIM = 2,
  LS_TINY_FF = 8,
  LS_TINY_MAX_CTX = 1024
};

/* Word offsets of every tensor in the flat weight array (docs/models.md).
 * Matrices are input-major (Conv1D): W[k][o] at k*n_out + o. */
typedef struct {
  size_t wte;    /* [256, 4] token embeddings */
  size_t wpe;    /* [n_ctx, 4] position embeddings */
  size_t ln1_g;  /* [4] */
  size_t ln1_b;  /* [4] */
  size_t qkv_w;  /* [4, 12] columns q0..q3 k0..k3 v0..v3; head h owns 2h,2h+1 */
  size_t proj_w; /* [4, 4] attention output projection */
  size_t proj_b; /* [4] */
  size_t ln2_g;  /* [4] */
  size_t ln2_b;  /* [4] */
  size_t fc_w;   /* [4, 8] */
  size_t fc_b;   /* [8] */
  size_t out_w;  /* [8, 4] feed-forward output projection */
  size_t out_b;  /* [4] */
  size_t lnf_g;  /* [4] */
  size_t lnf_b;  /* [4] */
  size_t head_w; /* [4, 256] */
  size_t head_b; /* [256] */
  size_t total;  /* parameter count: 2472 + 4 * n_ctx */
} ls_tiny_layout;

/* Offsets for a context length; total is 0 when n_ctx is out of range. */
ls_tiny_layout ls_tiny_layout_for(int n_ctx);

/* Number of binary64 words of scratch ls_tiny_logits_checked needs. */
size_t ls_tiny_scratch_words(int n_ctx);

/* The unchecked forward on validated weights: logits[0..256) of the last of
 * n tokens (1 <= n <= n_ctx, tokens in [0, 256)). scratch holds at least
 * ls_tiny_scratch_words(n_ctx) - ls_tiny_layout_for(n_ctx).total words. */
void ls_tiny_forward(const double* w, int n_ctx, const int32_t* tokens, int n,
                     double* scratch, double* logits);

/* The checked entry (docs/models.md "Checked entry"): validates the weight
 * count, finiteness, the bound B in [0, 10], the sequence length and tokens;
 * clips every weight to [-B, B] into scratch; runs the model; writes the 256
 * logits of the last position. On any error nothing is written to logits and
 * the status says why. */
ls_status ls_tiny_logits_checked(int n_ctx, const double* weights,
                                 size_t n_weights, const int32_t* tokens,
                                 size_t n_tokens, double bound, double* scratch,
                                 size_t n_scratch, double* logits);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_TINY_H_ */
