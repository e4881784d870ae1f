/* GPT-2 with grouped int8 weights (docs/arithmetic.md §7, docs/int8.md):
 * the byte layout of the quantized weights and the cached step, the
 * full-prefix pass and the batched prefill on them. The forward is
 * core/ls_gpt2.c's (the same attention, LayerNorm, GELU, cache and
 * schedules); only the embedding lookup, the four projections of a block
 * and the output head read int8 weights. Plain C99 on caller buffers: the
 * reference every int8 backend is compared with, bit for bit. */
#ifndef LOCKSTEP_CORE_LS_GPT2_Q8_H_
#define LOCKSTEP_CORE_LS_GPT2_Q8_H_

#include <stddef.h>
#include <stdint.h>

#include "ls_gpt2.h"
#include "ls_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Byte offsets of one block's tensors in the quantized weights. The
 * matrices are §7.6 quantized matrices of W [K, N] (c_attn [C, 3C],
 * attn.c_proj [C, C], c_fc [C, 4C], mlp.c_proj [4C, C]); the LayerNorm
 * parameters and biases are binary32. Every tensor starts on a multiple of
 * 64 bytes (zero padding after a tensor whose size is not one). */
typedef struct {
  size_t ln1_g, ln1_b;   /* [C] f32 */
  size_t attn_w, attn_b; /* q8 [C, 3C], f32 [3C] */
  size_t proj_w, proj_b; /* q8 [C, C], f32 [C] */
  size_t ln2_g, ln2_b;   /* [C] f32 */
  size_t fc_w, fc_b;     /* q8 [C, 4C], f32 [4C] */
  size_t out_w, out_b;   /* q8 [4C, C], f32 [C] */
} ls_gpt2_q8_block;

/* A config the int8 model can run: ls_gpt2_config_valid, n_embd a
 * multiple of 64 (§7.0), and the byte count fits a size_t. */
int ls_gpt2_q8_config_valid(const ls_gpt2_config* c);
/* The weights' bytes (0 for a config that is not valid). 124M:
 * 128,688,832. */
size_t ls_gpt2_q8_bytes(const ls_gpt2_config* c);
/* wte as the head wte^T [C, V] at 0; wpe as wpe^T [C, n_ctx] (§7.4: each
 * position's row quantized per group of 64); the blocks; ln_f g, b (f32). */
size_t ls_gpt2_q8_wpe_offset(const ls_gpt2_config* c);
ls_gpt2_q8_block ls_gpt2_q8_block_offsets(const ls_gpt2_config* c, int layer);
size_t ls_gpt2_q8_lnf_offset(const ls_gpt2_config* c);

/* 1 when the weights are well formed: every binary32 tensor finite, every
 * quantized matrix valid (ls_q8_matrix_valid: no -128, scales finite and
 * non-negative) and the padding zero. The step assumes it was checked once
 * at load. */
int ls_gpt2_q8_weights_valid(const ls_gpt2_config* c, const uint8_t* w,
                             size_t n_bytes);

/* §7.4, the embedding lookup: x[0..n_embd) = the dequantized rows of wte
 * (token) and wpe (pos) summed (the caller checks token and pos). */
void ls_gpt2_q8_embed(const ls_gpt2_config* c, const uint8_t* w, int32_t token,
                      int32_t pos, float* x);

/* The entries of ls_gpt2.h on int8 weights: the same arguments, cache and
 * scratch sizes (ls_gpt2_step_scratch_floats,
 * ls_gpt2_infer_scratch_floats), contracts and status codes, with the
 * weights as n_bytes == ls_gpt2_q8_bytes(c) bytes at w, which must be
 * 4-byte aligned (the loader maps them 64-byte aligned). A projection
 * input that is not finite returns LS_ERR_OUTPUT_NONFINITE (§7.2). */
ls_status ls_gpt2_q8_step(const ls_gpt2_config* c, const uint8_t* w,
                          size_t n_bytes, float* cache, size_t cache_capacity,
                          size_t cache_len, int32_t token, int32_t position,
                          float* scratch, size_t n_scratch, float* logits);
ls_status ls_gpt2_q8_infer(const ls_gpt2_config* c, const uint8_t* w,
                           size_t n_bytes, const int32_t* tokens, int n,
                           float* scratch, size_t n_scratch, float* logits);
ls_status ls_gpt2_q8_prefill(const ls_gpt2_config* c, const uint8_t* w,
                             size_t n_bytes, float* cache,
                             size_t cache_capacity, size_t cache_len,
                             const int32_t* tokens, int n, int32_t position,
                             int all_positions, float* scratch,
                             size_t n_scratch, float* logits);

/* ls_gpt2_infer_observed (core/ls_gpt2.h) on int8 weights: the full-prefix
 * pass over tokens[0..n) with every position's logits (n * n_vocab
 * floats) and `observer` called on every tap of ls_gpt2_tap, the same
 * taps, shapes and order as the binary32 pass (embed; per layer ln1, qkv,
 * att_score, att_prob, att_out, proj, res1, ln2, fc, gelu, mlp_out, res2;
 * ln_f, logits). The observer only reads: the logits are
 * ls_gpt2_q8_prefill's with all_positions, bit for bit. Arguments and
 * status codes as ls_gpt2_q8_infer's; observer may be NULL. */
ls_status ls_gpt2_q8_infer_observed(const ls_gpt2_config* c, const uint8_t* w,
                                    size_t n_bytes, const int32_t* tokens,
                                    int n, float* scratch, size_t n_scratch,
                                    float* logits, ls_gpt2_observer observer,
                                    void* user);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_GPT2_Q8_H_ */
