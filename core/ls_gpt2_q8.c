/* GPT-2 on grouped int8 weights (docs/arithmetic.md §7). The forward is
 * ls_gpt2.c's, through its model table (ls_gpt2_pass.h); this file says
 * where the int8 weights are and fills in the embedding lookup (§7.4), the
 * projections and the head (§7.2 then §7.3 per position). */
#include "ls_gpt2_q8.h"

#include "ls_gpt2_pass.h"
#include "ls_q8.h"

static size_t ls_pad64(size_t n) { return (n + 63) / 64 * 64; }

int ls_gpt2_q8_config_valid(const ls_gpt2_config* c) {
  if (!ls_gpt2_config_valid(c) || c->n_embd % LS_Q8_GROUP != 0) return 0;
  /* The byte count in 64 bits (no overflow at the core's maxima): at most
   * 1.04 bytes per binary32 word, plus padding. */
  const uint64_t C = (uint64_t)c->n_embd, G = C / LS_Q8_GROUP;
  const uint64_t bytes =
      ((uint64_t)c->n_vocab + (uint64_t)c->n_ctx) * (C + 2 * G) + 128 +
      (uint64_t)c->n_layer * (12 * C * (C + 2 * G) + 13 * C * 4) + 8 * C;
  return bytes <= (uint64_t)((size_t)-1);
}

static size_t ls_q8_mat(size_t K, size_t N) {
  return ls_pad64(ls_q8_matrix_bytes(K, N));
}

size_t ls_gpt2_q8_wpe_offset(const ls_gpt2_config* c) {
  return ls_q8_mat((size_t)c->n_embd, (size_t)c->n_vocab);
}

/* One block's bytes: every tensor is a multiple of 64 bytes when C is a
 * multiple of 64, so no padding inside a block. */
static size_t ls_q8_block_bytes(size_t C) {
  return 13 * C * 4 + ls_q8_mat(C, 3 * C) + ls_q8_mat(C, C) +
         ls_q8_mat(C, 4 * C) + ls_q8_mat(4 * C, C);
}

ls_gpt2_q8_block ls_gpt2_q8_block_offsets(const ls_gpt2_config* c, int layer) {
  const size_t C = (size_t)c->n_embd;
  size_t o = ls_gpt2_q8_wpe_offset(c) + ls_q8_mat(C, (size_t)c->n_ctx) +
             (size_t)layer * ls_q8_block_bytes(C);
  ls_gpt2_q8_block b;
  b.ln1_g = o, o += 4 * C;
  b.ln1_b = o, o += 4 * C;
  b.attn_w = o, o += ls_q8_mat(C, 3 * C);
  b.attn_b = o, o += 4 * 3 * C;
  b.proj_w = o, o += ls_q8_mat(C, C);
  b.proj_b = o, o += 4 * C;
  b.ln2_g = o, o += 4 * C;
  b.ln2_b = o, o += 4 * C;
  b.fc_w = o, o += ls_q8_mat(C, 4 * C);
  b.fc_b = o, o += 4 * 4 * C;
  b.out_w = o, o += ls_q8_mat(4 * C, C);
  b.out_b = o;
  return b;
}

size_t ls_gpt2_q8_lnf_offset(const ls_gpt2_config* c) {
  const size_t C = (size_t)c->n_embd;
  return ls_gpt2_q8_wpe_offset(c) + ls_q8_mat(C, (size_t)c->n_ctx) +
         (size_t)c->n_layer * ls_q8_block_bytes(C);
}

size_t ls_gpt2_q8_bytes(const ls_gpt2_config* c) {
  if (!ls_gpt2_q8_config_valid(c)) return 0;
  return ls_gpt2_q8_lnf_offset(c) + 8 * (size_t)c->n_embd;
}

static int ls_f32_finite(const uint8_t* w, size_t at, size_t n) {
  return ls_gpt2_weights_finite((const float*)(w + at), n);
}

/* A quantized matrix at `at` is valid and its padding to 64 bytes zero. */
static int ls_q8_mat_ok(const uint8_t* w, size_t at, size_t K, size_t N) {
  const size_t n = ls_q8_matrix_bytes(K, N);
  for (size_t i = at + n; i < at + ls_pad64(n); ++i) {
    if (w[i] != 0) return 0;
  }
  return ls_q8_matrix_valid(w + at, K, N);
}

int ls_gpt2_q8_weights_valid(const ls_gpt2_config* c, const uint8_t* w,
                             size_t n_bytes) {
  if (!w || n_bytes != ls_gpt2_q8_bytes(c)) return 0;
  const size_t C = (size_t)c->n_embd;
  if (!ls_q8_mat_ok(w, 0, C, (size_t)c->n_vocab) ||
      !ls_q8_mat_ok(w, ls_gpt2_q8_wpe_offset(c), C, (size_t)c->n_ctx)) {
    return 0;
  }
  for (int l = 0; l < c->n_layer; ++l) {
    const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(c, l);
    if (!ls_f32_finite(w, b.ln1_g, 2 * C) ||
        !ls_q8_mat_ok(w, b.attn_w, C, 3 * C) ||
        !ls_f32_finite(w, b.attn_b, 3 * C) ||
        !ls_q8_mat_ok(w, b.proj_w, C, C) ||
        !ls_f32_finite(w, b.proj_b, 3 * C) || /* proj_b, ln2_g, ln2_b */
        !ls_q8_mat_ok(w, b.fc_w, C, 4 * C) ||
        !ls_f32_finite(w, b.fc_b, 4 * C) ||
        !ls_q8_mat_ok(w, b.out_w, 4 * C, C) || !ls_f32_finite(w, b.out_b, C)) {
      return 0;
    }
  }
  return ls_f32_finite(w, ls_gpt2_q8_lnf_offset(c), 2 * C);
}

/* ---------------------------------------------------------------- model */

static const uint8_t* ls_bytes(const ls_gpt2_model* m) {
  return (const uint8_t*)m->w;
}

/* §7.4: x[i] = float(qte[tok][i]) * ste[tok][g] + float(qpe[pos][i]) *
 * spe[pos][g]: two dequantized columns (exact products), one sum each. */
void ls_gpt2_q8_embed(const ls_gpt2_config* c, const uint8_t* w, int32_t token,
                      int32_t pos, float* x) {
  const size_t C = (size_t)c->n_embd;
  const uint8_t* te = w;
  const uint8_t* pe = te + ls_gpt2_q8_wpe_offset(c);
  const int8_t* qte = (const int8_t*)te;
  const int8_t* qpe = (const int8_t*)pe;
  const size_t V = (size_t)c->n_vocab, T = (size_t)c->n_ctx;
  for (size_t g = 0; g < C / LS_Q8_GROUP; ++g) {
    const uint8_t* a = te + ls_q8_scale_index(C, V, (size_t)token, g);
    const uint8_t* b = pe + ls_q8_scale_index(C, T, (size_t)pos, g);
    const float st = ls_bf16_to_f32((uint16_t)(a[0] | a[1] << 8));
    const float sp = ls_bf16_to_f32((uint16_t)(b[0] | b[1] << 8));
    for (size_t k = g * LS_Q8_GROUP; k < (g + 1) * LS_Q8_GROUP; ++k) {
      const float vt = (float)qte[ls_q8_weight_index(C, V, k, (size_t)token)];
      const float vp = (float)qpe[ls_q8_weight_index(C, T, k, (size_t)pos)];
      x[k] = vt * st + vp * sp;
    }
  }
}

static void ls_embed_q8(const ls_gpt2_model* m, int32_t token, int32_t pos,
                        float* x) {
  ls_gpt2_q8_embed(m->c, ls_bytes(m), token, pos, x);
}

static ls_gpt2_norms ls_norms_q8(const ls_gpt2_model* m, int layer) {
  const uint8_t* w = ls_bytes(m);
  const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(m->c, layer);
  ls_gpt2_norms p;
  p.ln1_g = (const float*)(w + b.ln1_g), p.ln1_b = (const float*)(w + b.ln1_b);
  p.ln2_g = (const float*)(w + b.ln2_g), p.ln2_b = (const float*)(w + b.ln2_b);
  return p;
}

/* §7.2 then §7.3 for n positions. The inputs are quantized a chunk of
 * positions at a time into the scratch (the pass's partial-sum area of
 * 64 * C floats: each position's K int8 levels, then after the chunk's
 * levels its K / 64 scales), each position once and on its own, then the
 * chunk goes through one ls_q8_matmul, which a backend may run with each
 * panel read once for several positions; the bits are those of one
 * ls_q8_matvec per position. A position whose input is not finite gets a
 * NaN in every output (§7.2 step 1; its levels and scales are set to zero
 * so that the product is defined, and its outputs overwritten), which
 * reaches its logits and every later position's through the residual
 * stream and the cache, as a non-finite value does in §6, so the logits
 * check reports it. */
static float ls_q8_nan(void) {
  union {
    uint32_t u;
    float f;
  } b;
  b.u = 0x7FC00000u; /* the default quiet NaN */
  return b.f;
}

static ls_status ls_matmul_q8(const float* x, int n, const uint8_t* w,
                              const float* b, int C, int K, int N,
                              float* scratch, float* y) {
  const size_t G = (size_t)K / LS_Q8_GROUP;
  /* Positions per chunk: K + 4G bytes each in 256 * C bytes (60 for
   * K = 4C, 240 for K = C). */
  const int room = (int)((size_t)256 * (size_t)C / ((size_t)K + 4 * G));
  unsigned char bad[240];
  for (int t0 = 0; t0 < n; t0 += room) {
    const int p = n - t0 < room ? n - t0 : room;
    int8_t* qx = (int8_t*)scratch;
    float* sx = scratch + (size_t)p * (size_t)K / 4; /* K: a multiple of 64 */
    int any_bad = 0;
    for (int t = 0; t < p; ++t) {
      int8_t* q = qx + (size_t)t * (size_t)K;
      float* s = sx + (size_t)t * G;
      const float* xt = x + (size_t)(t0 + t) * (size_t)K;
      bad[t] = ls_q8_quantize(xt, K, q, s) != LS_OK;
      if (bad[t]) {
        for (int k = 0; k < K; ++k) q[k] = 0;
        for (size_t g = 0; g < G; ++g) s[g] = 0.0f;
        any_bad = 1;
      }
    }
    float* yc = y + (size_t)t0 * (size_t)N;
    ls_q8_matmul(qx, sx, p, w, K, N, b, yc);
    for (int t = 0; any_bad && t < p; ++t) {
      if (!bad[t]) continue;
      for (int o = 0; o < N; ++o) yc[(size_t)t * (size_t)N + o] = ls_q8_nan();
    }
  }
  return LS_OK;
}

static ls_status ls_project_q8(const ls_gpt2_model* m, int layer,
                               ls_gpt2_proj which, const float* x, int n,
                               float* scratch, float* y) {
  const uint8_t* w = ls_bytes(m);
  const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(m->c, layer);
  const int C = m->c->n_embd;
  switch (which) {
    case LS_PROJ_ATTN:
      return ls_matmul_q8(x, n, w + b.attn_w, (const float*)(w + b.attn_b), C,
                          C, 3 * C, scratch, y);
    case LS_PROJ_PROJ:
      return ls_matmul_q8(x, n, w + b.proj_w, (const float*)(w + b.proj_b), C,
                          C, C, scratch, y);
    case LS_PROJ_FC:
      return ls_matmul_q8(x, n, w + b.fc_w, (const float*)(w + b.fc_b), C, C,
                          4 * C, scratch, y);
    case LS_PROJ_OUT:
      return ls_matmul_q8(x, n, w + b.out_w, (const float*)(w + b.out_b), C,
                          4 * C, C, scratch, y);
  }
  return LS_ERR_CONFIG;
}

/* §7.4: logits = h . wte^T on the int8 head, no bias. */
static ls_status ls_head_q8(const ls_gpt2_model* m, const float* h,
                            float* scratch, float* logits) {
  return ls_matmul_q8(h, 1, ls_bytes(m), 0, m->c->n_embd, m->c->n_embd,
                      m->c->n_vocab, scratch, logits);
}

static ls_gpt2_model ls_model_q8(const ls_gpt2_config* c, const uint8_t* w) {
  const size_t lnf = ls_gpt2_q8_lnf_offset(c);
  ls_gpt2_model m;
  m.c = c;
  m.w = w;
  m.lnf_g = (const float*)(w + lnf);
  m.lnf_b = m.lnf_g + c->n_embd;
  m.embed = ls_embed_q8;
  m.norms = ls_norms_q8;
  m.project = ls_project_q8;
  m.head = ls_head_q8;
  return m;
}

/* The weights' checks shared by the three entries. */
static ls_status ls_q8_check(const ls_gpt2_config* c, const uint8_t* w,
                             size_t n_bytes) {
  if (!ls_gpt2_q8_config_valid(c)) return LS_ERR_CONFIG;
  if (!w) return LS_ERR_NULL;
  if (n_bytes != ls_gpt2_q8_bytes(c)) return LS_ERR_WEIGHT_COUNT;
  return LS_OK;
}

static ls_status ls_q8_tokens(const ls_gpt2_config* c, const int32_t* tokens,
                              int n) {
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c->n_vocab) return LS_ERR_TOKEN;
  }
  return LS_OK;
}

ls_status ls_gpt2_q8_step(const ls_gpt2_config* c, const uint8_t* w,
                          size_t n_bytes, float* cache, size_t cache_capacity,
                          size_t cache_len, int32_t token, int32_t position,
                          float* scratch, size_t n_scratch, float* logits) {
  const ls_status s = ls_q8_check(c, w, n_bytes);
  if (s != LS_OK) return s;
  if (!cache || !scratch || !logits) return LS_ERR_NULL;
  if (token < 0 || token >= c->n_vocab) return LS_ERR_TOKEN;
  if (position < 0 || position >= c->n_ctx) return LS_ERR_POSITION;
  const size_t row = ls_gpt2_cache_row_floats(c);
  if (cache_len != (size_t)position * row || cache_capacity < cache_len + row) {
    return LS_ERR_CACHE_LENGTH;
  }
  if (n_scratch < ls_gpt2_step_scratch_floats(c)) return LS_ERR_SCRATCH;
  const ls_gpt2_model m = ls_model_q8(c, w);
  return ls_gpt2_model_step(&m, cache, token, position, scratch, logits);
}

/* The full-prefix pass's checks, shared with the observed pass. */
static ls_status ls_q8_infer_check(const ls_gpt2_config* c, const uint8_t* w,
                                   size_t n_bytes, const int32_t* tokens, int n,
                                   const float* scratch, size_t n_scratch,
                                   const float* logits) {
  ls_status s = ls_q8_check(c, w, n_bytes);
  if (s != LS_OK) return s;
  if (!scratch || !logits || (n > 0 && !tokens)) return LS_ERR_NULL;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (n > c->n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
  if ((s = ls_q8_tokens(c, tokens, n)) != LS_OK) return s;
  if (n_scratch < ls_gpt2_infer_scratch_floats(c, n)) return LS_ERR_SCRATCH;
  return LS_OK;
}

ls_status ls_gpt2_q8_infer(const ls_gpt2_config* c, const uint8_t* w,
                           size_t n_bytes, const int32_t* tokens, int n,
                           float* scratch, size_t n_scratch, float* logits) {
  const ls_status s =
      ls_q8_infer_check(c, w, n_bytes, tokens, n, scratch, n_scratch, logits);
  if (s != LS_OK) return s;
  const ls_gpt2_model m = ls_model_q8(c, w);
  return ls_gpt2_model_pass(&m, 0, tokens, n, 0, 0, scratch, logits);
}

ls_status ls_gpt2_q8_infer_observed(const ls_gpt2_config* c, const uint8_t* w,
                                    size_t n_bytes, const int32_t* tokens,
                                    int n, float* scratch, size_t n_scratch,
                                    float* logits, ls_gpt2_observer observer,
                                    void* user) {
  const ls_status s =
      ls_q8_infer_check(c, w, n_bytes, tokens, n, scratch, n_scratch, logits);
  if (s != LS_OK) return s;
  const ls_gpt2_model m = ls_model_q8(c, w);
  return ls_gpt2_model_pass_observed(&m, 0, tokens, n, 0, 1, scratch, logits,
                                     observer, user);
}

ls_status ls_gpt2_q8_prefill(const ls_gpt2_config* c, const uint8_t* w,
                             size_t n_bytes, float* cache,
                             size_t cache_capacity, size_t cache_len,
                             const int32_t* tokens, int n, int32_t position,
                             int all_positions, float* scratch,
                             size_t n_scratch, float* logits) {
  ls_status s = ls_q8_check(c, w, n_bytes);
  if (s != LS_OK) return s;
  if (!cache || !scratch || !logits || (n > 0 && !tokens)) return LS_ERR_NULL;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (position < 0 || position >= c->n_ctx) return LS_ERR_POSITION;
  if (n > c->n_ctx - position) return LS_ERR_SEQUENCE_TOO_LONG;
  if ((s = ls_q8_tokens(c, tokens, n)) != LS_OK) return s;
  const size_t row = ls_gpt2_cache_row_floats(c);
  if (cache_len != (size_t)position * row ||
      cache_capacity < cache_len + (size_t)n * row) {
    return LS_ERR_CACHE_LENGTH;
  }
  if (n_scratch < ls_gpt2_infer_scratch_floats(c, n)) return LS_ERR_SCRATCH;
  const ls_gpt2_model m = ls_model_q8(c, w);
  return ls_gpt2_model_pass(&m, cache, tokens, n, position, all_positions,
                            scratch, logits);
}
