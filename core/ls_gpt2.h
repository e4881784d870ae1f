/* GPT-2 in binary32 (docs/arithmetic.md §6, docs/gpt2.md): the packed
 * weight layout, the KV cache layout, the cached step and the full-prefix
 * pass. Plain C99 on caller buffers: this is the reference every GPT-2
 * backend is compared with, bit for bit. */
#ifndef LOCKSTEP_CORE_LS_GPT2_H_
#define LOCKSTEP_CORE_LS_GPT2_H_

#include <stddef.h>
#include <stdint.h>

#include "ls_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int32_t n_vocab; /* 50257 for every released GPT-2 */
  int32_t n_ctx;   /* positions: 1024 */
  int32_t n_embd;  /* 768, 1024, 1280, 1600 */
  int32_t n_head;  /* 12, 16, 20, 25 */
  int32_t n_layer; /* 12, 24, 36, 48 */
} ls_gpt2_config;

/* Word offsets of one block's tensors in the packed weights. Matrices are
 * input-major (Conv1D): W[k][o] at k * n_out + o. */
typedef struct {
  size_t ln1_g, ln1_b;   /* [C] */
  size_t attn_w, attn_b; /* [C, 3C], [3C]: q | k | v, head h at h*D.. */
  size_t proj_w, proj_b; /* [C, C], [C] */
  size_t ln2_g, ln2_b;   /* [C] */
  size_t fc_w, fc_b;     /* [C, 4C], [4C] */
  size_t out_w, out_b;   /* [4C, C], [C] */
} ls_gpt2_block;

/* The config is usable: every size positive, n_embd a multiple of n_head,
 * sizes small enough that every offset fits. */
int ls_gpt2_config_valid(const ls_gpt2_config* c);
/* Total packed words (0 for an invalid config). For 124M: 124,439,808. */
size_t ls_gpt2_param_count(const ls_gpt2_config* c);
/* wte [V, C] at 0; wpe [n_ctx, C] at V*C; blocks; ln_f g, b at the end. */
size_t ls_gpt2_wpe_offset(const ls_gpt2_config* c);
ls_gpt2_block ls_gpt2_block_offsets(const ls_gpt2_config* c, int layer);
size_t ls_gpt2_lnf_offset(const ls_gpt2_config* c); /* g, then b */

/* KV cache: floats per position (n_layer * 2 * n_embd) and for n_ctx
 * positions. Position s, layer l: keys at (s * n_layer + l) * 2C, values
 * right after them. */
size_t ls_gpt2_cache_row_floats(const ls_gpt2_config* c);
size_t ls_gpt2_cache_floats(const ls_gpt2_config* c);

/* Scratch floats ls_gpt2_step needs, and ls_gpt2_infer for n tokens. */
size_t ls_gpt2_step_scratch_floats(const ls_gpt2_config* c);
size_t ls_gpt2_infer_scratch_floats(const ls_gpt2_config* c, int n_tokens);

/* The cached step. `cache` holds n_ctx rows; its first cache_len floats
 * are the rows of positions 0 .. position-1, so cache_len must equal
 * position * ls_gpt2_cache_row_floats. Appends this position's keys and
 * values in place (earlier rows are never written) and writes n_vocab
 * logits. Weights must have been checked finite once
 * (ls_gpt2_weights_finite); the step checks sizes, token and position. */
ls_status ls_gpt2_step(const ls_gpt2_config* c, const float* w, size_t n_w,
                       float* cache, size_t cache_capacity, size_t cache_len,
                       int32_t token, int32_t position, float* scratch,
                       size_t n_scratch, float* logits);

/* The full-prefix pass over tokens[0..n), 1 <= n <= n_ctx: the last
 * position's n_vocab logits. Computes layer by layer over all positions;
 * the same operations as n cached steps, so the same bits. */
ls_status ls_gpt2_infer(const ls_gpt2_config* c, const float* w, size_t n_w,
                        const int32_t* tokens, int n, float* scratch,
                        size_t n_scratch, float* logits);

/* Batched prefill: tokens[0..n) at positions position .. position+n-1,
 * 1 <= n, position + n <= n_ctx. The cache holds the rows of positions
 * 0 .. position-1 (cache_len = position * row floats, as for the step);
 * the n new rows are appended after them (earlier rows are never
 * written). Computes layer by layer over the n positions (the schedule of
 * the full-prefix pass), each position attending to every cache row up to
 * its own: the same operations on the same operands as n cached steps, so
 * the same logits and cache words, bit for bit, whether the prompt comes
 * in one call, in chunks, or one token at a time. Writes the last
 * position's n_vocab logits, or with all_positions != 0 every position's
 * (n * n_vocab floats, position position+i's at i * n_vocab). Scratch:
 * ls_gpt2_infer_scratch_floats(c, n). */
ls_status ls_gpt2_prefill(const ls_gpt2_config* c, const float* w, size_t n_w,
                          float* cache, size_t cache_capacity, size_t cache_len,
                          const int32_t* tokens, int n, int32_t position,
                          int all_positions, float* scratch, size_t n_scratch,
                          float* logits);

/* Named intermediate tensors of a layer pass (lockstep dump, lockstep
 * verify; docs/verify.md). An observer sees each operation's output as it
 * is computed; it reads, never writes, so the bits are those of the
 * unobserved pass. Layer -1: the embedding; n_layer: ln_f and logits. */
typedef enum {
  LS_TAP_EMBED,     /* x = wte[token] + wpe[position]        [C]   */
  LS_TAP_LN1,       /* LayerNorm(x; ln_1)                    [C]   */
  LS_TAP_QKV,       /* c_attn output, q | k | v              [3C]  */
  LS_TAP_ATT_SCORE, /* q.k_j / sqrt(D), j = 0..t, per head   [t+1] */
  LS_TAP_ATT_PROB,  /* softmax of the scores, per head       [t+1] */
  LS_TAP_ATT_OUT,   /* attention output, heads concatenated  [C]   */
  LS_TAP_PROJ,      /* attention c_proj output               [C]   */
  LS_TAP_RES1,      /* x after the attention residual        [C]   */
  LS_TAP_LN2,       /* LayerNorm(x; ln_2)                    [C]   */
  LS_TAP_FC,        /* c_fc output                           [4C]  */
  LS_TAP_GELU,      /* GELU of it                            [4C]  */
  LS_TAP_MLP_OUT,   /* MLP c_proj output                     [C]   */
  LS_TAP_RES2,      /* x after the MLP residual              [C]   */
  LS_TAP_LNF,       /* LayerNorm(x; ln_f)                    [C]   */
  LS_TAP_LOGITS,    /* logits                                [V]   */
  LS_TAP_COUNT
} ls_gpt2_tap;

/* Called once per position (and head, for the attention taps; head is -1
 * otherwise) with the n floats of one tap, in the pass's own order. */
typedef void (*ls_gpt2_observer)(void* user, int layer, ls_gpt2_tap tap,
                                 int position, int head, const float* data,
                                 size_t n);

/* ls_gpt2_infer with every position's logits (n * n_vocab floats) and the
 * observer called on every tap; the same bits as ls_gpt2_infer. */
ls_status ls_gpt2_infer_observed(const ls_gpt2_config* c, const float* w,
                                 size_t n_w, const int32_t* tokens, int n,
                                 float* scratch, size_t n_scratch,
                                 float* logits, ls_gpt2_observer observer,
                                 void* user);

/* 1 when every weight is finite. */
int ls_gpt2_weights_finite(const float* w, size_t n_w);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_GPT2_H_ */
