/* The browser's WebGPU controller (docs/browser.md): a binary32 GPT-2 pass
 * over n positions (ls_gpt2.c's ls_layer_pass: the same operations on the
 * same operands, so the same bits as n cached steps) that stops before each
 * matrix product and hands it to the host. The host computes the product
 * (on WebGPU, or with web_project_cpu here) into the planned output buffer
 * and calls web_next, which goes on to the next product. Everything else
 * (embeddings, LayerNorm, attention, GELU, the residual stream, the
 * logits' finiteness check, the sampler) runs here, on the core's
 * functions. Built alone into lockstep-web.wasm with the scalar core, so
 * the module's own products are the core's ls_matmul32 / ls_rowdots32.
 *
 * web_begin / web_next return 0 when the logits are ready, an ls_status on
 * an error, or LSW_WEB_REQUEST + 8 * layer + which for a pending product
 * (which: 0 q|k|v, 1 attention output, 2 MLP up, 3 MLP down, 4 the output
 * head; web_request gives its buffers).
 *
 * Grouped int8 (web_plan_q8, docs/arithmetic.md §7): the weights are the
 * int8 file's payload as stored (core/ls_gpt2_q8.h's byte offsets), the
 * embedding lookup is ls_gpt2_q8_embed, and before each product this
 * module quantizes the input per position and group of 64 (§7.2, the
 * core's ls_q8_quantize) into the request's qx (int8 levels) and sx (the
 * binary32 scales); the host computes §7.3 from them, and a position whose
 * input was not finite gets the default quiet NaN in every output at
 * web_next, as core/ls_gpt2_q8.c's ls_matmul_q8 does. */
#include <stdint.h>

#include "ls_arith.h"
#include "ls_gpt2.h"
#include "ls_gpt2_q8.h"
#include "ls_ops32.h"
#include "ls_q8.h"
#include "ls_sampler.h"
#include "ls_status.h"

#define LSW_EXPORT(name) __attribute__((export_name(name)))
#define LSW_WEB_REQUEST 1000
#define LSW_ERR_TOO_LARGE 100
#define LSW_ERR_NOT_PREPARED 101
#define LSW_ERR_BUSY 104
/* web_prepare on int8 weights that ls_gpt2_q8_weights_valid refuses (the
 * code and message of lockstep.wasm's gpt2_prepare). */
#define LSW_ERR_Q8_WEIGHTS 103
#define LSW_ALIGN 64u
#define LSW_PAGE 65536u

extern unsigned char __heap_base;

/* The host's ABI (web/lockstep-web.mjs reads it as u32 words). */
typedef struct {
  uint32_t status, total;
  uint32_t weights, weights_bytes;
  uint32_t cache, cache_bytes;
  uint32_t work, work_bytes; /* x, qkv, h, a, y, f for max_prefix rows,
                                scores, matvec partials */
  uint32_t logits, logits_bytes;
  uint32_t tokens, tokens_bytes;
  uint32_t sample, sample_bytes;
  uint32_t max_prefix;
  uint32_t q8; /* 1: grouped int8 weights (web_plan_q8) */
} lsw_web_plan;

/* A pending product: y[t] = x[t] . W + b for t < n (no bias for the
 * head). Offsets are bytes in memory (x, y) or words in the weights (w,
 * b; b = 0xFFFFFFFF: none); head: W is wte, row-major [n_out, n_in].
 * int8: w and b are byte offsets in the weights (W a §7.6 quantized matrix
 * [n_in, n_out], the head's wte^T [C, V] at 0), and qx, sx the addresses of
 * x quantized (n_in levels, then n_in / 64 scales, per position); 0 in
 * binary32. */
typedef struct {
  uint32_t which, layer, n, n_in, n_out, x, y, w, b, head, qx, sx;
} lsw_web_request;

typedef struct {
  ls_gpt2_config c;
  int planned, prepared;
  lsw_web_plan plan;
  /* the pass in progress */
  int n, first, layer, stage; /* stage: the product the pass waits for */
  lsw_web_request req;
  float *xs, *qkvs, *hs, *as, *ys, *fs, *score, *partial;
  int8_t* qx;         /* int8: the pending product's levels ... */
  float* sx;          /* ... and scales */
  unsigned char* bad; /* int8: positions whose input was not finite */
  int any_bad;
  uint64_t rng;
} lsw_web_state;

static lsw_web_state g;

static uint32_t lsw_take(uint64_t* at, uint64_t bytes, uint32_t* size,
                         int* overflow) {
  *at = (*at + LSW_ALIGN - 1) / LSW_ALIGN * LSW_ALIGN;
  const uint64_t start = *at;
  *at += bytes;
  if (*at > (uint64_t)0xFFFF0000u) *overflow = 1;
  *size = (uint32_t)bytes;
  return (uint32_t)start;
}

static const lsw_web_plan* lsw_web_plan_any(int32_t n_vocab, int32_t n_ctx,
                                            int32_t n_embd, int32_t n_head,
                                            int32_t n_layer, int32_t max_prefix,
                                            int q8) {
  g = (lsw_web_state){0};
  ls_gpt2_config c = {n_vocab, n_ctx, n_embd, n_head, n_layer};
  lsw_web_plan* p = &g.plan;
  if (q8 ? !ls_gpt2_q8_config_valid(&c) : !ls_gpt2_config_valid(&c)) {
    p->status = LS_ERR_CONFIG;
    return p;
  }
  p->q8 = (uint32_t)q8;
  g.c = c;
  const uint64_t C = (uint64_t)n_embd;
  const uint64_t N =
      (uint64_t)(max_prefix > 0 && max_prefix < n_ctx ? max_prefix : n_ctx);
  uint64_t at = (uint64_t)(uintptr_t)&__heap_base;
  int over = 0;
  p->weights = lsw_take(&at,
                        q8 ? (uint64_t)ls_gpt2_q8_bytes(&c)
                           : (uint64_t)ls_gpt2_param_count(&c) * 4,
                        &p->weights_bytes, &over);
  p->cache = lsw_take(&at, (uint64_t)ls_gpt2_cache_floats(&c) * 4,
                      &p->cache_bytes, &over);
  /* int8: after the binary32 work, N * 4C levels, N * 4C / 64 scales and
   * N flags (binary32 plans no room for them). */
  const uint64_t q8_bytes = q8 ? N * 4 * C + N * 4 * C / 16 + N : 0;
  p->work =
      lsw_take(&at, (N * 11 * C + (uint64_t)n_ctx + 64 * C) * 4 + q8_bytes,
               &p->work_bytes, &over);
  p->logits = lsw_take(&at, (uint64_t)n_vocab * 4, &p->logits_bytes, &over);
  p->tokens = lsw_take(&at, (uint64_t)n_ctx * 4, &p->tokens_bytes, &over);
  p->sample = lsw_take(&at, (uint64_t)n_vocab * 20, &p->sample_bytes, &over);
  p->max_prefix = (uint32_t)N;
  if (over) {
    p->status = LSW_ERR_TOO_LARGE;
    return p;
  }
  p->total = (uint32_t)((at + LSW_PAGE - 1) / LSW_PAGE * (uint64_t)LSW_PAGE);
  float* w = (float*)(uintptr_t)p->work;
  g.xs = w;
  g.qkvs = g.xs + N * C;
  g.hs = g.qkvs + N * 3 * C;
  g.as = g.hs + N * C;
  g.ys = g.as + N * C;
  g.fs = g.ys + N * C;
  g.score = g.fs + N * 4 * C;
  g.partial = g.score + n_ctx;
  if (q8) {
    g.sx = g.partial + 64 * C;
    g.qx = (int8_t*)(g.sx + N * 4 * C / 64);
    g.bad = (unsigned char*)(g.qx + N * 4 * C);
  }
  g.planned = 1;
  g.stage = -1;
  return p;
}

LSW_EXPORT("web_plan")
const lsw_web_plan* lsw_web_plan_gpt2(int32_t n_vocab, int32_t n_ctx,
                                      int32_t n_embd, int32_t n_head,
                                      int32_t n_layer, int32_t max_prefix) {
  return lsw_web_plan_any(n_vocab, n_ctx, n_embd, n_head, n_layer, max_prefix,
                          0);
}

/* The plan for grouped int8 weights (docs/int8.md): the weights are
 * ls_gpt2_q8_bytes of the int8 file's payload, used as stored. */
LSW_EXPORT("web_plan_q8")
const lsw_web_plan* lsw_web_plan_gpt2_q8(int32_t n_vocab, int32_t n_ctx,
                                         int32_t n_embd, int32_t n_head,
                                         int32_t n_layer, int32_t max_prefix) {
  return lsw_web_plan_any(n_vocab, n_ctx, n_embd, n_head, n_layer, max_prefix,
                          1);
}

/* After the weights are written: the step needs them finite (int8: well
 * formed, ls_gpt2_q8_weights_valid). */
LSW_EXPORT("web_prepare") int32_t lsw_web_prepare(void) {
  if (!g.planned) return LS_ERR_CONFIG;
  if (g.plan.q8 &&
      !ls_gpt2_q8_weights_valid(&g.c, (const uint8_t*)(uintptr_t)g.plan.weights,
                                g.plan.weights_bytes)) {
    return LSW_ERR_Q8_WEIGHTS;
  }
  if (!g.plan.q8 &&
      !ls_gpt2_weights_finite((const float*)(uintptr_t)g.plan.weights,
                              g.plan.weights_bytes / 4)) {
    return LS_ERR_WEIGHT_NONFINITE;
  }
  g.prepared = 1;
  return LS_OK;
}

static const float* lsw_w(void) {
  return (const float*)(uintptr_t)g.plan.weights;
}

static const uint8_t* lsw_bytes(void) {
  return (const uint8_t*)(uintptr_t)g.plan.weights;
}

/* A binary32 vector of the weights at word offset `words` (binary32) or
 * at the byte offset `bytes` (int8). */
static const float* lsw_f32(size_t words, size_t bytes) {
  return g.plan.q8 ? (const float*)(lsw_bytes() + bytes) : lsw_w() + words;
}

/* The LayerNorm parameters of a layer (ln_1 g, b, ln_2 g, b) and ln_f's. */
typedef struct {
  const float *ln1_g, *ln1_b, *ln2_g, *ln2_b;
} lsw_norms;

static lsw_norms lsw_layer_norms(int layer) {
  const ls_gpt2_block b = ls_gpt2_block_offsets(&g.c, layer);
  const ls_gpt2_q8_block q = ls_gpt2_q8_block_offsets(&g.c, layer);
  lsw_norms n = {lsw_f32(b.ln1_g, q.ln1_g), lsw_f32(b.ln1_b, q.ln1_b),
                 lsw_f32(b.ln2_g, q.ln2_g), lsw_f32(b.ln2_b, q.ln2_b)};
  return n;
}

static const float* lsw_lnf(void) {
  return lsw_f32(ls_gpt2_lnf_offset(&g.c), ls_gpt2_q8_lnf_offset(&g.c));
}

/* int8: §7.2 for each of the request's n positions, the core's
 * ls_q8_quantize; a position whose input is not finite gets zero levels
 * and scales (so that any product of them is defined) and its flag, and
 * its outputs become NaN at web_next (ls_gpt2_q8.c's ls_matmul_q8). */
static void lsw_quantize(lsw_web_request* r, const float* x) {
  const size_t K = r->n_in, G = K / LS_Q8_GROUP;
  g.any_bad = 0;
  for (uint32_t t = 0; t < r->n; ++t) {
    int8_t* q = g.qx + t * K;
    float* s = g.sx + t * G;
    g.bad[t] = ls_q8_quantize(x + t * K, (int)K, q, s) != LS_OK;
    if (g.bad[t]) {
      for (size_t k = 0; k < K; ++k) q[k] = 0;
      for (size_t i = 0; i < G; ++i) s[i] = 0.0f;
      g.any_bad = 1;
    }
  }
  r->qx = (uint32_t)(uintptr_t)g.qx;
  r->sx = (uint32_t)(uintptr_t)g.sx;
}

/* Sets up the request for product `which` of the current layer. */
static int32_t lsw_request(int which) {
  const uint32_t C = (uint32_t)g.c.n_embd;
  const ls_gpt2_block b = ls_gpt2_block_offsets(&g.c, g.layer);
  const ls_gpt2_q8_block q = ls_gpt2_q8_block_offsets(&g.c, g.layer);
  const int q8 = (int)g.plan.q8;
  lsw_web_request* r = &g.req;
  r->which = (uint32_t)which;
  r->layer = (uint32_t)g.layer;
  r->n = (uint32_t)g.n;
  r->head = 0;
  const float* x = 0;
  float* y = 0;
  switch (which) {
    case 0:
      r->n_in = C, r->n_out = 3 * C, x = g.hs, y = g.qkvs;
      r->w = (uint32_t)(q8 ? q.attn_w : b.attn_w);
      r->b = (uint32_t)(q8 ? q.attn_b : b.attn_b);
      break;
    case 1:
      r->n_in = C, r->n_out = C, x = g.as, y = g.ys;
      r->w = (uint32_t)(q8 ? q.proj_w : b.proj_w);
      r->b = (uint32_t)(q8 ? q.proj_b : b.proj_b);
      break;
    case 2:
      r->n_in = C, r->n_out = 4 * C, x = g.hs, y = g.fs;
      r->w = (uint32_t)(q8 ? q.fc_w : b.fc_w);
      r->b = (uint32_t)(q8 ? q.fc_b : b.fc_b);
      break;
    case 3:
      r->n_in = 4 * C, r->n_out = C, x = g.fs, y = g.ys;
      r->w = (uint32_t)(q8 ? q.out_w : b.out_w);
      r->b = (uint32_t)(q8 ? q.out_b : b.out_b);
      break;
    default: /* the head on LayerNorm(x; ln_f) of the last position */
      r->n = 1, r->n_in = C, r->n_out = (uint32_t)g.c.n_vocab, r->head = 1;
      x = g.hs, y = (float*)(uintptr_t)g.plan.logits;
      r->w = 0, r->b = 0xFFFFFFFFu, r->layer = (uint32_t)g.c.n_layer;
      break;
  }
  r->x = (uint32_t)(uintptr_t)x;
  r->y = (uint32_t)(uintptr_t)y;
  r->qx = r->sx = 0;
  if (q8) lsw_quantize(r, x);
  g.stage = which;
  return LSW_WEB_REQUEST + 8 * (int32_t)r->layer + which;
}

/* §6 attention of position first + t over cache rows 0 .. first + t
 * (ls_gpt2.c's ls_attend: the same sums in the same order). */
static void lsw_attend(int t) {
  const ls_gpt2_config* c = &g.c;
  const int C = c->n_embd, D = C / c->n_head;
  const size_t row = ls_gpt2_cache_row_floats(c);
  const float* keys =
      (const float*)(uintptr_t)g.plan.cache + (size_t)g.layer * 2 * C;
  const float* values = keys + C;
  const float* q = g.qkvs + (size_t)t * 3 * C;
  const int last = g.first + t;
  const float scale = __builtin_sqrtf((float)D);
  for (int hd = 0; hd < c->n_head; ++hd) {
    const size_t off = (size_t)hd * (size_t)D;
    for (int j = 0; j <= last; ++j) {
      g.score[j] =
          ls_dot32(q + off, keys + (size_t)j * row + off, D, 1) / scale;
    }
    ls_softmax32(g.score, last + 1, g.score);
    float* a = g.as + (size_t)t * C + off;
    for (int d = 0; d < D; ++d) a[d] = 0.0f;
    for (int j = 0; j <= last; ++j) {
      const float p = g.score[j];
      const float* v = values + (size_t)j * row + off;
      for (int d = 0; d < D; ++d) a[d] = a[d] + p * v[d];
    }
  }
}

/* LayerNorm(x; ln_1) of every position, then the q|k|v product. */
static int32_t lsw_layer_start(void) {
  const int C = g.c.n_embd;
  const lsw_norms nm = lsw_layer_norms(g.layer);
  for (int t = 0; t < g.n; ++t) {
    ls_layernorm32(g.xs + (size_t)t * C, nm.ln1_g, nm.ln1_b, C,
                   g.hs + (size_t)t * C);
  }
  return lsw_request(0);
}

/* Starts a pass over the first n planned tokens at positions position ..
 * position + n - 1 (the cache's first `position` rows hold the earlier
 * ones). */
LSW_EXPORT("web_begin") int32_t lsw_web_begin(int32_t n, int32_t position) {
  if (!g.planned) return LS_ERR_CONFIG;
  if (!g.prepared) return LSW_ERR_NOT_PREPARED;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (position < 0 || position >= g.c.n_ctx) return LS_ERR_POSITION;
  if (n > g.c.n_ctx - position) return LS_ERR_SEQUENCE_TOO_LONG;
  if (n > (int32_t)g.plan.max_prefix) return LS_ERR_SCRATCH;
  const int32_t* tokens = (const int32_t*)(uintptr_t)g.plan.tokens;
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= g.c.n_vocab) return LS_ERR_TOKEN;
  }
  const size_t C = (size_t)g.c.n_embd;
  const float* wpe = lsw_w() + ls_gpt2_wpe_offset(&g.c);
  for (int t = 0; g.plan.q8 && t < n; ++t) { /* §7.4 */
    ls_gpt2_q8_embed(&g.c, lsw_bytes(), tokens[t], position + t,
                     g.xs + (size_t)t * C);
  }
  for (int t = 0; !g.plan.q8 && t < n; ++t) {
    const float* te = lsw_w() + (size_t)tokens[t] * C;
    const float* pe = wpe + (size_t)(position + t) * C;
    float* x = g.xs + (size_t)t * C;
    for (size_t i = 0; i < C; ++i) x[i] = te[i] + pe[i];
  }
  g.n = n, g.first = position, g.layer = 0;
  return lsw_layer_start();
}

/* After the host has written the pending product's output: goes on to the
 * next product, or finishes (0, or LS_ERR_OUTPUT_NONFINITE). */
LSW_EXPORT("web_next") int32_t lsw_web_next(void) {
  if (g.stage < 0) return LSW_ERR_BUSY;
  const ls_gpt2_config* c = &g.c;
  const size_t C = (size_t)c->n_embd, N = (size_t)g.n;
  const size_t row = ls_gpt2_cache_row_floats(c);
  const lsw_norms nm = lsw_layer_norms(g.layer);
  float* cache = (float*)(uintptr_t)g.plan.cache;
  if (g.plan.q8 && g.any_bad) { /* §7.2 step 1: NaN outputs */
    union {
      uint32_t u;
      float f;
    } nan = {0x7FC00000u};
    float* y = (float*)(uintptr_t)g.req.y;
    for (uint32_t t = 0; t < g.req.n; ++t) {
      for (uint32_t o = 0; g.bad[t] && o < g.req.n_out; ++o) {
        y[(size_t)t * g.req.n_out + o] = nan.f;
      }
    }
    g.any_bad = 0;
  }
  switch (g.stage) {
    case 0: { /* keys and values to the cache, attention */
      float* kv = cache + (size_t)g.layer * 2 * C;
      for (size_t t = 0; t < N; ++t) {
        float* dst = kv + ((size_t)g.first + t) * row;
        for (size_t i = 0; i < 2 * C; ++i) dst[i] = g.qkvs[t * 3 * C + C + i];
      }
      for (int t = 0; t < g.n; ++t) lsw_attend(t);
      return lsw_request(1);
    }
    case 1: /* x += a . c_proj + b; h = LayerNorm(x; ln_2) */
      for (size_t t = 0; t < N; ++t) {
        float* x = g.xs + t * C;
        for (size_t i = 0; i < C; ++i) x[i] = x[i] + g.ys[t * C + i];
        ls_layernorm32(x, nm.ln2_g, nm.ln2_b, (int)C, g.hs + t * C);
      }
      return lsw_request(2);
    case 2:
      for (size_t i = 0; i < N * 4 * C; ++i) g.fs[i] = ls_gelu32(g.fs[i]);
      return lsw_request(3);
    case 3:
      for (size_t i = 0; i < N * C; ++i) g.xs[i] = g.xs[i] + g.ys[i];
      if (++g.layer < c->n_layer) return lsw_layer_start();
      ls_layernorm32(g.xs + (N - 1) * C, lsw_lnf(), lsw_lnf() + C, (int)C,
                     g.hs);
      return lsw_request(4);
    default: {
      g.stage = -1;
      const float* logits = (const float*)(uintptr_t)g.plan.logits;
      for (int v = 0; v < c->n_vocab; ++v) {
        if (!(logits[v] - logits[v] == 0.0f)) return LS_ERR_OUTPUT_NONFINITE;
      }
      return LS_OK;
    }
  }
}

/* The pending product as u32 words (lsw_web_request's order). */
LSW_EXPORT("web_request") const lsw_web_request* lsw_web_request_get(void) {
  return &g.req;
}

/* The pending product computed here, by the core (ls_matmul32: §2.2 per
 * output; the head: ls_rowdots32; int8: ls_q8_matmul, §7.3). */
LSW_EXPORT("web_project_cpu") int32_t lsw_web_project_cpu(void) {
  if (g.stage < 0) return LSW_ERR_BUSY;
  const lsw_web_request* r = &g.req;
  const float* x = (const float*)(uintptr_t)r->x;
  float* y = (float*)(uintptr_t)r->y;
  if (g.plan.q8) {
    ls_q8_matmul(g.qx, g.sx, (int)r->n, lsw_bytes() + r->w, (int)r->n_in,
                 (int)r->n_out,
                 r->head ? 0 : (const float*)(lsw_bytes() + r->b), y);
  } else if (r->head) {
    ls_rowdots32(x, lsw_w(), (int)r->n_in, (int)r->n_out, y);
  } else {
    ls_matmul32(x, (int)r->n, lsw_w() + r->w, lsw_w() + r->b, (int)r->n_in,
                (int)r->n_out, g.partial, y);
  }
  return LS_OK;
}

LSW_EXPORT("web_seed") void lsw_web_seed(uint64_t seed) { g.rng = seed; }

/* §5 on the logits: greedy for top_k 0, else top-k with temperature; -1
 * for options the caller should have rejected. */
LSW_EXPORT("web_sample")
int32_t lsw_web_sample(int32_t top_k, double temperature) {
  const int n = g.c.n_vocab;
  if (!g.planned || top_k < 0 || top_k > n ||
      !(temperature > 0.0 && temperature <= 1e300)) {
    return -1;
  }
  double* wide = (double*)(uintptr_t)g.plan.sample;
  double* weight = wide + n;
  int* rank = (int*)(weight + n);
  const float* l = (const float*)(uintptr_t)g.plan.logits;
  for (int i = 0; i < n; ++i) wide[i] = (double)l[i];
  if (top_k == 0) return ls_argmax64(wide, n);
  return ls_sample_top_k64(wide, n, top_k, temperature, &g.rng, rank, weight);
}

LSW_EXPORT("web_status_message") const char* lsw_web_status_message(int32_t s) {
  if (s == LSW_ERR_TOO_LARGE) {
    return "the model does not fit a 4 GiB WebAssembly memory";
  }
  if (s == LSW_ERR_NOT_PREPARED) {
    return "the weights were not prepared (web_prepare after loading them)";
  }
  if (s == LSW_ERR_BUSY) return "no product is pending";
  if (s == LSW_ERR_Q8_WEIGHTS) {
    return "the int8 weights are not well formed (a level -128, a negative "
           "or non-finite scale, a non-finite binary32 weight or nonzero "
           "padding)";
  }
  return ls_status_message((ls_status)s);
}
