/* GPT-2 forward in binary32 (docs/arithmetic.md §6). The reference: read it
 * as the model. One block is three steps: attention inputs (§6 ln_1,
 * c_attn), attention over earlier positions, and the block tail (c_proj,
 * residual, ln_2, MLP, residual). The cached step runs them position-major
 * through one row of the cache; the full pass runs them layer-major over
 * all positions. Same operations, same operands, so the same bits. */
#include "ls_gpt2.h"

#include "ls_arith.h"
#include "ls_gpt2_pass.h"
#include "ls_ops32.h"

/* Largest sizes accepted: far above GPT-2 XL. Each dimension fits an int;
 * ls_gpt2_config_valid also requires the weight and cache counts (in
 * bytes) to fit a size_t, which on 32-bit targets (wasm32) is the binding
 * limit. */
#define LS_GPT2_MAX_EMBD 8192
#define LS_GPT2_MAX_CTX 8192
#define LS_GPT2_MAX_LAYER 256
#define LS_GPT2_MAX_VOCAB 262144

int ls_gpt2_config_valid(const ls_gpt2_config* c) {
  if (!(c && c->n_vocab > 0 && c->n_vocab <= LS_GPT2_MAX_VOCAB &&
        c->n_ctx > 0 && c->n_ctx <= LS_GPT2_MAX_CTX && c->n_embd > 0 &&
        c->n_embd <= LS_GPT2_MAX_EMBD && c->n_head > 0 &&
        c->n_embd % c->n_head == 0 && c->n_layer > 0 &&
        c->n_layer <= LS_GPT2_MAX_LAYER)) {
    return 0;
  }
  /* The counts in 64 bits (they cannot overflow there at these maxima). */
  const uint64_t C = (uint64_t)c->n_embd;
  const uint64_t words = (uint64_t)c->n_vocab * C + (uint64_t)c->n_ctx * C +
                         (uint64_t)c->n_layer * (12 * C * C + 13 * C) + 2 * C;
  const uint64_t cache = (uint64_t)c->n_ctx * (uint64_t)c->n_layer * 2 * C;
  const uint64_t limit = (uint64_t)((size_t)-1) / sizeof(float);
  return words <= limit && cache <= limit;
}

static size_t ls_block_words(size_t C) { return 12 * C * C + 13 * C; }

size_t ls_gpt2_wpe_offset(const ls_gpt2_config* c) {
  return (size_t)c->n_vocab * (size_t)c->n_embd;
}

ls_gpt2_block ls_gpt2_block_offsets(const ls_gpt2_config* c, int layer) {
  const size_t C = (size_t)c->n_embd;
  size_t o = ls_gpt2_wpe_offset(c) + (size_t)c->n_ctx * C +
             (size_t)layer * ls_block_words(C);
  ls_gpt2_block b;
  b.ln1_g = o, o += C;
  b.ln1_b = o, o += C;
  b.attn_w = o, o += C * 3 * C;
  b.attn_b = o, o += 3 * C;
  b.proj_w = o, o += C * C;
  b.proj_b = o, o += C;
  b.ln2_g = o, o += C;
  b.ln2_b = o, o += C;
  b.fc_w = o, o += C * 4 * C;
  b.fc_b = o, o += 4 * C;
  b.out_w = o, o += 4 * C * C;
  b.out_b = o;
  return b;
}

/* The offset functions below assume a valid config (callers check
 * ls_gpt2_config_valid or ls_gpt2_param_count first). */
size_t ls_gpt2_lnf_offset(const ls_gpt2_config* c) {
  return ls_gpt2_wpe_offset(c) + (size_t)c->n_ctx * (size_t)c->n_embd +
         (size_t)c->n_layer * ls_block_words((size_t)c->n_embd);
}

size_t ls_gpt2_param_count(const ls_gpt2_config* c) {
  if (!ls_gpt2_config_valid(c)) return 0;
  return ls_gpt2_lnf_offset(c) + 2 * (size_t)c->n_embd;
}

size_t ls_gpt2_cache_row_floats(const ls_gpt2_config* c) {
  return (size_t)c->n_layer * 2 * (size_t)c->n_embd;
}

size_t ls_gpt2_cache_floats(const ls_gpt2_config* c) {
  return (size_t)c->n_ctx * ls_gpt2_cache_row_floats(c);
}

/* Per-position working set of one block: x (C), h (C), qkv (3C), a (C),
 * y (C), f (4C), scores (n_ctx), matvec partial sums (16 * 4C). */
static size_t ls_block_scratch(const ls_gpt2_config* c) {
  const size_t C = (size_t)c->n_embd;
  return C + C + 3 * C + C + C + 4 * C + (size_t)c->n_ctx + 64 * C;
}

size_t ls_gpt2_step_scratch_floats(const ls_gpt2_config* c) {
  if (!ls_gpt2_config_valid(c)) return 0;
  return ls_block_scratch(c);
}

size_t ls_gpt2_infer_scratch_floats(const ls_gpt2_config* c, int n) {
  if (!ls_gpt2_config_valid(c) || n < 1) return 0;
  /* For every position: x (C), q|k|v (3C), h (C), a (C), y (C), f (4C). */
  return ls_block_scratch(c) + (size_t)n * 11 * (size_t)c->n_embd;
}

int ls_gpt2_weights_finite(const float* w, size_t n_w) {
  for (size_t i = 0; i < n_w; ++i) {
    if (!(w[i] - w[i] == 0.0f)) return 0;
  }
  return 1;
}

/* The working buffers of one block, carved from scratch. */
typedef struct {
  float *h, *a, *y, *f, *score, *partial;
} ls_work;

static ls_work ls_carve(const ls_gpt2_config* c, float* s) {
  const size_t C = (size_t)c->n_embd;
  ls_work k;
  k.h = s, s += C;
  k.a = s, s += C;
  k.y = s, s += C;
  k.f = s, s += 4 * C;
  k.score = s, s += (size_t)c->n_ctx;
  k.partial = s;
  return k;
}

/* An observer of the layer pass (ls_gpt2_infer_observed) and the layer it
 * is in; NULL everywhere else, so an unobserved pass pays one test of a
 * null pointer per operation. */
typedef struct {
  ls_gpt2_observer fn;
  void* user;
  int layer;
} ls_obs;

/* Rows first .. first+n-1 of a [n][width] tensor, one call per position. */
static void ls_observe_rows(const ls_obs* ob, ls_gpt2_tap tap, int first,
                            const float* rows, int n, size_t width) {
  if (!ob) return;
  for (int t = 0; t < n; ++t) {
    ob->fn(ob->user, ob->layer, tap, first + t, -1, rows + (size_t)t * width,
           width);
  }
}

/* §6: h = LayerNorm(x; ln_1), qkv = h . c_attn + b. */
static ls_status ls_attn_inputs(const ls_gpt2_model* m, int l,
                                const ls_gpt2_norms* p, const float* x,
                                float* qkv, ls_work* k) {
  ls_layernorm32(x, p->ln1_g, p->ln1_b, m->c->n_embd, k->h);
  return m->project(m, l, LS_PROJ_ATTN, k->h, 1, k->partial, qkv);
}

/* §6 attention of one query over positions 0..t: key j at keys + j*stride,
 * value j at values + j*stride; output a[C]. */
static void ls_attend(const ls_gpt2_config* c, const float* q,
                      const float* keys, const float* values, size_t stride,
                      int t, ls_work* k, const ls_obs* ob) {
  const int D = c->n_embd / c->n_head;
  /* sqrt(D) correctly rounded; 8 exactly for GPT-2's D = 64. */
  const float scale = __builtin_sqrtf((float)D);
  for (int hd = 0; hd < c->n_head; ++hd) {
    const size_t off = (size_t)hd * (size_t)D;
    for (int j = 0; j <= t; ++j) {
      k->score[j] =
          ls_dot32(q + off, keys + (size_t)j * stride + off, D, 1) / scale;
    }
    if (ob) {
      ob->fn(ob->user, ob->layer, LS_TAP_ATT_SCORE, t, hd, k->score,
             (size_t)t + 1);
    }
    ls_softmax32(k->score, t + 1, k->score);
    if (ob) {
      ob->fn(ob->user, ob->layer, LS_TAP_ATT_PROB, t, hd, k->score,
             (size_t)t + 1);
    }
    /* §2.5: each a[d] starts at +0.0 and adds p[j] * v_j[d] for j in
     * order. Positions are the outer loop so that each position's values
     * are read once, contiguously (a cache row is n_layer * 2C floats
     * long); the order of every sum is unchanged. */
    float* a = k->a + off;
    for (int d = 0; d < D; ++d) a[d] = 0.0f;
    for (int j = 0; j <= t; ++j) {
      const float p = k->score[j];
      const float* v = values + (size_t)j * stride + off;
      for (int d = 0; d < D; ++d) a[d] = a[d] + p * v[d];
    }
  }
}

/* §6: x += a . c_proj + b; x += gelu(LN(x; ln_2) . c_fc + b) . c_proj + b. */
static ls_status ls_block_tail(const ls_gpt2_model* m, int l,
                               const ls_gpt2_norms* p, float* x, ls_work* k) {
  const int C = m->c->n_embd;
  ls_status s = m->project(m, l, LS_PROJ_PROJ, k->a, 1, k->partial, k->y);
  if (s != LS_OK) return s;
  for (int i = 0; i < C; ++i) x[i] = x[i] + k->y[i];
  ls_layernorm32(x, p->ln2_g, p->ln2_b, C, k->h);
  s = m->project(m, l, LS_PROJ_FC, k->h, 1, k->partial, k->f);
  if (s != LS_OK) return s;
  for (int i = 0; i < 4 * C; ++i) k->f[i] = ls_gelu32(k->f[i]);
  s = m->project(m, l, LS_PROJ_OUT, k->f, 1, k->partial, k->y);
  if (s != LS_OK) return s;
  for (int i = 0; i < C; ++i) x[i] = x[i] + k->y[i];
  return LS_OK;
}

/* §6 output: logits = LN(x; ln_f) . wte^T; fails on non-finite. */
static ls_status ls_logits(const ls_gpt2_model* m, const float* x, ls_work* k,
                           float* logits) {
  const ls_gpt2_config* c = m->c;
  ls_layernorm32(x, m->lnf_g, m->lnf_b, c->n_embd, k->h);
  const ls_status s = m->head(m, k->h, k->partial, logits);
  if (s != LS_OK) return s;
  for (int v = 0; v < c->n_vocab; ++v) {
    if (!(logits[v] - logits[v] == 0.0f)) return LS_ERR_OUTPUT_NONFINITE;
  }
  return LS_OK;
}

/* The binary32 model (§6): weights packed as ls_gpt2_block_offsets says. */

/* §6 embeddings: x = wte[token] + wpe[position]. */
static void ls_embed32(const ls_gpt2_model* m, int32_t token, int32_t pos,
                       float* x) {
  const float* w = (const float*)m->w;
  const size_t C = (size_t)m->c->n_embd;
  const float* te = w + (size_t)token * C;
  const float* pe = w + ls_gpt2_wpe_offset(m->c) + (size_t)pos * C;
  for (size_t i = 0; i < C; ++i) x[i] = te[i] + pe[i];
}

static ls_gpt2_norms ls_norms32(const ls_gpt2_model* m, int layer) {
  const float* w = (const float*)m->w;
  const ls_gpt2_block b = ls_gpt2_block_offsets(m->c, layer);
  ls_gpt2_norms p;
  p.ln1_g = w + b.ln1_g, p.ln1_b = w + b.ln1_b;
  p.ln2_g = w + b.ln2_g, p.ln2_b = w + b.ln2_b;
  return p;
}

/* §2.2 for n positions: each matrix product is one ls_matmul32. */
static ls_status ls_project32(const ls_gpt2_model* m, int layer,
                              ls_gpt2_proj which, const float* x, int n,
                              float* scratch, float* y) {
  const float* w = (const float*)m->w;
  const ls_gpt2_block b = ls_gpt2_block_offsets(m->c, layer);
  const int C = m->c->n_embd;
  switch (which) {
    case LS_PROJ_ATTN:
      ls_matmul32(x, n, w + b.attn_w, w + b.attn_b, C, 3 * C, scratch, y);
      break;
    case LS_PROJ_PROJ:
      ls_matmul32(x, n, w + b.proj_w, w + b.proj_b, C, C, scratch, y);
      break;
    case LS_PROJ_FC:
      ls_matmul32(x, n, w + b.fc_w, w + b.fc_b, C, 4 * C, scratch, y);
      break;
    case LS_PROJ_OUT:
      ls_matmul32(x, n, w + b.out_w, w + b.out_b, 4 * C, C, scratch, y);
      break;
  }
  return LS_OK;
}

/* §6 logits[v] = dot(h, wte[v]) (§2.1). */
static ls_status ls_head32(const ls_gpt2_model* m, const float* h,
                           float* scratch, float* logits) {
  (void)scratch;
  ls_rowdots32(h, (const float*)m->w, m->c->n_embd, m->c->n_vocab, logits);
  return LS_OK;
}

static ls_gpt2_model ls_model32(const ls_gpt2_config* c, const float* w) {
  const size_t lnf = ls_gpt2_lnf_offset(c);
  ls_gpt2_model m;
  m.c = c;
  m.w = w;
  m.lnf_g = w + lnf;
  m.lnf_b = w + lnf + c->n_embd;
  m.embed = ls_embed32;
  m.norms = ls_norms32;
  m.project = ls_project32;
  m.head = ls_head32;
  return m;
}

ls_status ls_gpt2_step(const ls_gpt2_config* c, const float* w, size_t n_w,
                       float* cache, size_t cache_capacity, size_t cache_len,
                       int32_t token, int32_t position, float* scratch,
                       size_t n_scratch, float* logits) {
  if (!ls_gpt2_config_valid(c)) return LS_ERR_CONFIG;
  if (!w || !cache || !scratch || !logits) return LS_ERR_NULL;
  if (n_w != ls_gpt2_param_count(c)) return LS_ERR_WEIGHT_COUNT;
  if (token < 0 || token >= c->n_vocab) return LS_ERR_TOKEN;
  if (position < 0 || position >= c->n_ctx) return LS_ERR_POSITION;
  const size_t row = ls_gpt2_cache_row_floats(c);
  if (cache_len != (size_t)position * row || cache_capacity < cache_len + row) {
    return LS_ERR_CACHE_LENGTH;
  }
  if (n_scratch < ls_gpt2_step_scratch_floats(c)) return LS_ERR_SCRATCH;
  const ls_gpt2_model m = ls_model32(c, w);
  return ls_gpt2_model_step(&m, cache, token, position, scratch, logits);
}

ls_status ls_gpt2_model_step(const ls_gpt2_model* m, float* cache,
                             int32_t token, int32_t position, float* scratch,
                             float* logits) {
  const ls_gpt2_config* c = m->c;
  const size_t C = (size_t)c->n_embd;
  const size_t row = ls_gpt2_cache_row_floats(c);
  float* x = scratch;
  float* qkv = x + C;
  ls_work k = ls_carve(c, qkv + 3 * C);
  m->embed(m, token, position, x);
  for (int l = 0; l < c->n_layer; ++l) {
    const ls_gpt2_norms p = m->norms(m, l);
    ls_status s = ls_attn_inputs(m, l, &p, x, qkv, &k);
    if (s != LS_OK) return s;
    /* Append this position's keys and values to the cache row. */
    float* kv = cache + (size_t)position * row + (size_t)l * 2 * C;
    for (size_t i = 0; i < 2 * C; ++i) kv[i] = qkv[C + i];
    const float* keys = cache + (size_t)l * 2 * C;
    ls_attend(c, qkv, keys, keys + C, row, position, &k, 0);
    s = ls_block_tail(m, l, &p, x, &k);
    if (s != LS_OK) return s;
  }
  return ls_logits(m, x, &k, logits);
}

/* The layer-major pass over n positions first .. first+n-1, shared by the
 * full-prefix pass and the prefill: each of a layer's operations runs over
 * all n positions before the next (each matrix product is one
 * ls_matmul32), the same operations on the same operands as n cached
 * steps. With a cache, each layer's keys and values are appended to rows
 * first .. first+n-1 and position first+t attends to rows 0 .. first+t;
 * without one (the full pass, first = 0), attention reads this layer's
 * q|k|v of the n positions. Logits: the last position's, or every
 * position's when all_positions. Scratch: ls_gpt2_infer_scratch_floats. */
static ls_status ls_layer_pass(const ls_gpt2_model* m, float* cache,
                               const int32_t* tokens, int n, int32_t first,
                               int all_positions, float* scratch, float* logits,
                               ls_gpt2_observer observer, void* user) {
  const ls_gpt2_config* c = m->c;
  const size_t C = (size_t)c->n_embd, N = (size_t)n;
  const size_t row = ls_gpt2_cache_row_floats(c);
  float* xs = scratch;          /* [n][C] residual stream */
  float* qkvs = xs + N * C;     /* [n][3C] this layer's q | k | v */
  float* hs = qkvs + N * 3 * C; /* [n][C] LayerNorm outputs */
  float* as = hs + N * C;       /* [n][C] attention outputs */
  float* ys = as + N * C;       /* [n][C] projection outputs */
  float* fs = ys + N * C;       /* [n][4C] MLP hidden */
  ls_work k = ls_carve(c, fs + N * 4 * C);
  ls_obs obs = {observer, user, -1};
  const ls_obs* ob = observer ? &obs : 0;
  for (int t = 0; t < n; ++t) {
    m->embed(m, tokens[t], first + t, xs + (size_t)t * C);
  }
  ls_observe_rows(ob, LS_TAP_EMBED, first, xs, n, C);
  for (int l = 0; l < c->n_layer; ++l) {
    const ls_gpt2_norms p = m->norms(m, l);
    ls_status s;
    obs.layer = l;
    /* §6: h = LayerNorm(x; ln_1), qkv = h . c_attn + b. */
    for (size_t t = 0; t < N; ++t) {
      ls_layernorm32(xs + t * C, p.ln1_g, p.ln1_b, (int)C, hs + t * C);
    }
    ls_observe_rows(ob, LS_TAP_LN1, first, hs, n, C);
    s = m->project(m, l, LS_PROJ_ATTN, hs, n, k.partial, qkvs);
    if (s != LS_OK) return s;
    ls_observe_rows(ob, LS_TAP_QKV, first, qkvs, n, 3 * C);
    /* Attention; with a cache, this layer's keys and values go there
     * first. */
    const float* keys = qkvs + C;
    const float* values = qkvs + 2 * C;
    size_t stride = 3 * C;
    int before = 0; /* positions attended to before the first query */
    if (cache) {
      float* kv = cache + (size_t)l * 2 * C;
      for (size_t t = 0; t < N; ++t) {
        float* dst = kv + ((size_t)first + t) * row;
        for (size_t i = 0; i < 2 * C; ++i) dst[i] = qkvs[t * 3 * C + C + i];
      }
      keys = kv, values = kv + C, stride = row, before = first;
    }
    for (int t = 0; t < n; ++t) {
      ls_attend(c, qkvs + (size_t)t * 3 * C, keys, values, stride, before + t,
                &k, ob);
      for (size_t i = 0; i < C; ++i) as[(size_t)t * C + i] = k.a[i];
    }
    ls_observe_rows(ob, LS_TAP_ATT_OUT, first, as, n, C);
    /* §6 block tail: x += a . c_proj + b; x += gelu(LN(x; ln_2) . c_fc +
     * b) . c_proj + b. */
    s = m->project(m, l, LS_PROJ_PROJ, as, n, k.partial, ys);
    if (s != LS_OK) return s;
    ls_observe_rows(ob, LS_TAP_PROJ, first, ys, n, C);
    for (size_t t = 0; t < N; ++t) {
      float* x = xs + t * C;
      for (size_t i = 0; i < C; ++i) x[i] = x[i] + ys[t * C + i];
      ls_layernorm32(x, p.ln2_g, p.ln2_b, (int)C, hs + t * C);
    }
    ls_observe_rows(ob, LS_TAP_RES1, first, xs, n, C);
    ls_observe_rows(ob, LS_TAP_LN2, first, hs, n, C);
    s = m->project(m, l, LS_PROJ_FC, hs, n, k.partial, fs);
    if (s != LS_OK) return s;
    ls_observe_rows(ob, LS_TAP_FC, first, fs, n, 4 * C);
    for (size_t i = 0; i < N * 4 * C; ++i) fs[i] = ls_gelu32(fs[i]);
    ls_observe_rows(ob, LS_TAP_GELU, first, fs, n, 4 * C);
    s = m->project(m, l, LS_PROJ_OUT, fs, n, k.partial, ys);
    if (s != LS_OK) return s;
    ls_observe_rows(ob, LS_TAP_MLP_OUT, first, ys, n, C);
    for (size_t i = 0; i < N * C; ++i) xs[i] = xs[i] + ys[i];
    ls_observe_rows(ob, LS_TAP_RES2, first, xs, n, C);
  }
  obs.layer = c->n_layer;
  if (!all_positions) {
    return ls_logits(m, xs + (size_t)(n - 1) * C, &k, logits);
  }
  for (int t = 0; t < n; ++t) {
    float* row = logits + (size_t)t * (size_t)c->n_vocab;
    const ls_status s = ls_logits(m, xs + (size_t)t * C, &k, row);
    if (s != LS_OK) return s;
    /* ls_logits leaves LayerNorm(x; ln_f) in k.h. */
    ls_observe_rows(ob, LS_TAP_LNF, first + t, k.h, 1, C);
    ls_observe_rows(ob, LS_TAP_LOGITS, first + t, row, 1, (size_t)c->n_vocab);
  }
  return LS_OK;
}

/* The full-prefix pass's argument checks, shared with the observed pass. */
static ls_status ls_infer_check(const ls_gpt2_config* c, const float* w,
                                size_t n_w, const int32_t* tokens, int n,
                                const float* scratch, size_t n_scratch,
                                const float* logits) {
  if (!ls_gpt2_config_valid(c)) return LS_ERR_CONFIG;
  if (!w || !scratch || !logits || (n > 0 && !tokens)) return LS_ERR_NULL;
  if (n_w != ls_gpt2_param_count(c)) return LS_ERR_WEIGHT_COUNT;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (n > c->n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c->n_vocab) return LS_ERR_TOKEN;
  }
  if (n_scratch < ls_gpt2_infer_scratch_floats(c, n)) return LS_ERR_SCRATCH;
  return LS_OK;
}

ls_status ls_gpt2_infer(const ls_gpt2_config* c, const float* w, size_t n_w,
                        const int32_t* tokens, int n, float* scratch,
                        size_t n_scratch, float* logits) {
  const ls_status s =
      ls_infer_check(c, w, n_w, tokens, n, scratch, n_scratch, logits);
  if (s != LS_OK) return s;
  const ls_gpt2_model m = ls_model32(c, w);
  return ls_layer_pass(&m, 0, tokens, n, 0, 0, scratch, logits, 0, 0);
}

ls_status ls_gpt2_infer_observed(const ls_gpt2_config* c, const float* w,
                                 size_t n_w, const int32_t* tokens, int n,
                                 float* scratch, size_t n_scratch,
                                 float* logits, ls_gpt2_observer observer,
                                 void* user) {
  const ls_status s =
      ls_infer_check(c, w, n_w, tokens, n, scratch, n_scratch, logits);
  if (s != LS_OK) return s;
  const ls_gpt2_model m = ls_model32(c, w);
  return ls_layer_pass(&m, 0, tokens, n, 0, 1, scratch, logits, observer, user);
}

ls_status ls_gpt2_prefill(const ls_gpt2_config* c, const float* w, size_t n_w,
                          float* cache, size_t cache_capacity, size_t cache_len,
                          const int32_t* tokens, int n, int32_t position,
                          int all_positions, float* scratch, size_t n_scratch,
                          float* logits) {
  if (!ls_gpt2_config_valid(c)) return LS_ERR_CONFIG;
  if (!w || !cache || !scratch || !logits || (n > 0 && !tokens)) {
    return LS_ERR_NULL;
  }
  if (n_w != ls_gpt2_param_count(c)) return LS_ERR_WEIGHT_COUNT;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (position < 0 || position >= c->n_ctx) return LS_ERR_POSITION;
  if (n > c->n_ctx - position) return LS_ERR_SEQUENCE_TOO_LONG;
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c->n_vocab) return LS_ERR_TOKEN;
  }
  const size_t row = ls_gpt2_cache_row_floats(c);
  if (cache_len != (size_t)position * row ||
      cache_capacity < cache_len + (size_t)n * row) {
    return LS_ERR_CACHE_LENGTH;
  }
  if (n_scratch < ls_gpt2_infer_scratch_floats(c, n)) return LS_ERR_SCRATCH;
  const ls_gpt2_model m = ls_model32(c, w);
  return ls_layer_pass(&m, cache, tokens, n, position, all_positions, scratch,
                       logits, 0, 0);
}

ls_status ls_gpt2_model_pass(const ls_gpt2_model* m, float* cache,
                             const int32_t* tokens, int n, int32_t first,
                             int all_positions, float* scratch, float* logits) {
  return ls_layer_pass(m, cache, tokens, n, first, all_positions, scratch,
                       logits, 0, 0);
}

ls_status ls_gpt2_model_pass_observed(const ls_gpt2_model* m, float* cache,
                                      const int32_t* tokens, int n,
                                      int32_t first, int all_positions,
                                      float* scratch, float* logits,
                                      ls_gpt2_observer observer, void* user) {
  return ls_layer_pass(m, cache, tokens, n, first, all_positions, scratch,
                       logits, observer, user);
}
