/* Weight layouts of packed GPT-2 binary32 weights (docs/gpt2-format.md).
 * A layout only permutes words: the arithmetic (docs/arithmetic.md §6)
 * and so every logit are the same in every layout.
 *
 * LS_GPT2_LAYOUT_PLAIN: core/ls_gpt2.h's order, matrices input-major.
 * LS_GPT2_LAYOUT_PANEL64: the same tensors at the same offsets, but each
 * block matrix (c_attn, c_proj, c_fc, MLP c_proj: W [K, N] input-major) is
 * stored as panels of LS_GPT2_PANEL = 64 columns, and wte [V, C] is stored
 * as the panels of the output head wte^T [C, V]. Panel p of W [K, N] starts
 * at word p * 64 * K of the tensor and holds W[k][64p + j] at k * pw + j,
 * pw = min(64, N - 64p): a small input-major matrix with contiguous rows,
 * which the CPU backend streams linearly. Every other tensor is unchanged.
 * In this layout the token embedding wte[v][k] is at panel v / 64, word
 * k * pw + v % 64 (ls_gpt2_panel_embedding gathers it). */
#ifndef LOCKSTEP_CORE_LS_GPT2_LAYOUT_H_
#define LOCKSTEP_CORE_LS_GPT2_LAYOUT_H_

#include <stddef.h>

#include "ls_gpt2.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LS_GPT2_LAYOUT_PLAIN = 0,
  LS_GPT2_LAYOUT_PANEL64 = 1
} ls_gpt2_layout;

#define LS_GPT2_PANEL 64

/* The panels of W [K, N] read with row stride ld and column stride cs
 * (element (k, o) at w[k * ld + o * cs]; wte^T is ld = 1, cs = C) into
 * dst (K * N words). */
void ls_panelize(const float* w, size_t K, size_t N, size_t ld, size_t cs,
                 float* dst);
/* The inverse: panels of W [K, N] back to element (k, o) at
 * dst[k * ld + o * cs]. */
void ls_unpanelize(const float* panels, size_t K, size_t N, size_t ld,
                   size_t cs, float* dst);

/* Whole weights, plain -> PANEL64 and back; src and dst do not overlap and
 * hold ls_gpt2_param_count(c) words. The config must be valid. */
void ls_gpt2_to_panels(const ls_gpt2_config* c, const float* plain, float* dst);
void ls_gpt2_from_panels(const ls_gpt2_config* c, const float* panels,
                         float* dst);

/* wte[token][0..C) of PANEL64 weights, gathered into out[0..C). */
void ls_gpt2_panel_embedding(const ls_gpt2_config* c, const float* panels,
                             int32_t token, float* out);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CORE_LS_GPT2_LAYOUT_H_ */
