/* Internal to core/: the GPT-2 forward of core/ls_gpt2.c over any weight
 * format. The cached step and the layer pass (full prefix, prefill) are
 * written once; what depends on how the weights are stored (the embedding
 * lookup, the four projections of a block, the output head, where the
 * LayerNorm parameters are) comes through this table. The binary32 model
 * (ls_gpt2.c, docs/arithmetic.md §6) and the grouped int8 model
 * (ls_gpt2_q8.c, §7) fill it in; attention, LayerNorm, GELU, residuals and
 * the cache are the same code for both. Not part of the C ABI. */
#ifndef LOCKSTEP_CORE_LS_GPT2_PASS_H_
#define LOCKSTEP_CORE_LS_GPT2_PASS_H_

#include <stddef.h>
#include <stdint.h>

#include "ls_gpt2.h"
#include "ls_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The projections of a block, in the order they run. */
typedef enum {
  LS_PROJ_ATTN = 0, /* c_attn: [C] -> [3C] */
  LS_PROJ_PROJ = 1, /* attn.c_proj: [C] -> [C] */
  LS_PROJ_FC = 2,   /* mlp.c_fc: [C] -> [4C] */
  LS_PROJ_OUT = 3   /* mlp.c_proj: [4C] -> [C] */
} ls_gpt2_proj;

/* A block's LayerNorm gains and biases (binary32 in every format). */
typedef struct {
  const float *ln1_g, *ln1_b, *ln2_g, *ln2_b;
} ls_gpt2_norms;

typedef struct ls_gpt2_model ls_gpt2_model;
struct ls_gpt2_model {
  const ls_gpt2_config* c;
  const void* w;              /* the weights, in the format's own layout */
  const float *lnf_g, *lnf_b; /* the final LayerNorm */
  /* x[0..C) = the embedding of token at position pos. */
  void (*embed)(const ls_gpt2_model* m, int32_t token, int32_t pos, float* x);
  ls_gpt2_norms (*norms)(const ls_gpt2_model* m, int layer);
  /* y[t] = x[t] . W + b for positions t < n of projection `which` of
   * `layer` (x [n][K], y [n][N], rows contiguous). `scratch` is the pass's
   * partial-sum area (16 * 4C floats). A non-OK status stops the pass. */
  ls_status (*project)(const ls_gpt2_model* m, int layer, ls_gpt2_proj which,
                       const float* x, int n, float* scratch, float* y);
  /* logits[0..n_vocab) = h . wte^T (no bias). */
  ls_status (*head)(const ls_gpt2_model* m, const float* h, float* scratch,
                    float* logits);
};

/* The cached step and the layer pass of ls_gpt2.c on a model whose
 * arguments the caller has checked (ls_gpt2_step and ls_gpt2_prefill's
 * checks): cache NULL is the full-prefix pass (first = 0). Scratch:
 * ls_gpt2_step_scratch_floats / ls_gpt2_infer_scratch_floats(c, n). */
ls_status ls_gpt2_model_step(const ls_gpt2_model* m, float* cache,
                             int32_t token, int32_t position, float* scratch,
                             float* logits);
ls_status ls_gpt2_model_pass(const ls_gpt2_model* m, float* cache,
                             const int32_t* tokens, int n, int32_t first,
                             int all_positions, float* scratch, float* logits);
/* ls_gpt2_model_pass with `observer` called on every tap of
 * core/ls_gpt2.h's ls_gpt2_tap (NULL: none), as ls_gpt2_infer_observed
 * does for binary32; the same bits either way. */
ls_status ls_gpt2_model_pass_observed(const ls_gpt2_model* m, float* cache,
                                      const int32_t* tokens, int n,
                                      int32_t first, int all_positions,
                                      float* scratch, float* logits,
                                      ls_gpt2_observer observer, void* user);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_GPT2_PASS_H_ */
