/* Weight layouts (core/ls_gpt2_layout.h): word permutations only. */
#include "ls_gpt2_layout.h"

void ls_panelize(const float* w, size_t K, size_t N, size_t ld, size_t cs,
                 float* dst) {
  for (size_t c0 = 0; c0 < N; c0 += LS_GPT2_PANEL) {
    const size_t pw = N - c0 < LS_GPT2_PANEL ? N - c0 : LS_GPT2_PANEL;
    float* panel = dst + c0 * K;
    for (size_t k = 0; k < K; ++k) {
      for (size_t j = 0; j < pw; ++j) {
        panel[k * pw + j] = w[k * ld + (c0 + j) * cs];
      }
    }
  }
}

void ls_unpanelize(const float* panels, size_t K, size_t N, size_t ld,
                   size_t cs, float* dst) {
  for (size_t c0 = 0; c0 < N; c0 += LS_GPT2_PANEL) {
    const size_t pw = N - c0 < LS_GPT2_PANEL ? N - c0 : LS_GPT2_PANEL;
    const float* panel = panels + c0 * K;
    for (size_t k = 0; k < K; ++k) {
      for (size_t j = 0; j < pw; ++j) {
        dst[k * ld + (c0 + j) * cs] = panel[k * pw + j];
      }
    }
  }
}

/* One direction of the whole-model permutation: to panels, or back. */
static void ls_convert(const ls_gpt2_config* c, const float* src, float* dst,
                       int to_panels) {
  const size_t C = (size_t)c->n_embd, V = (size_t)c->n_vocab;
  const size_t n = ls_gpt2_param_count(c);
  for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  /* (offset, K, N) of every permuted matrix; wte is the head wte^T. */
  if (to_panels) {
    ls_panelize(src, C, V, 1, C, dst);
  } else {
    ls_unpanelize(src, C, V, 1, C, dst);
  }
  for (int l = 0; l < c->n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(c, l);
    const size_t off[4] = {b.attn_w, b.proj_w, b.fc_w, b.out_w};
    const size_t K[4] = {C, C, C, 4 * C};
    const size_t N[4] = {3 * C, C, 4 * C, C};
    for (int m = 0; m < 4; ++m) {
      if (to_panels) {
        ls_panelize(src + off[m], K[m], N[m], N[m], 1, dst + off[m]);
      } else {
        ls_unpanelize(src + off[m], K[m], N[m], N[m], 1, dst + off[m]);
      }
    }
  }
}

void ls_gpt2_to_panels(const ls_gpt2_config* c, const float* plain,
                       float* dst) {
  ls_convert(c, plain, dst, 1);
}

void ls_gpt2_from_panels(const ls_gpt2_config* c, const float* panels,
                         float* dst) {
  ls_convert(c, panels, dst, 0);
}

void ls_gpt2_panel_embedding(const ls_gpt2_config* c, const float* panels,
                             int32_t token, float* out) {
  const size_t C = (size_t)c->n_embd, V = (size_t)c->n_vocab;
  const size_t v = (size_t)token;
  const size_t c0 = v / LS_GPT2_PANEL * LS_GPT2_PANEL;
  const size_t pw = V - c0 < LS_GPT2_PANEL ? V - c0 : LS_GPT2_PANEL;
  const float* panel = panels + c0 * C;
  for (size_t k = 0; k < C; ++k) out[k] = panel[k * pw + (v - c0)];
}
