/* The WebAssembly module's exports (docs/wasm.md): memory plans computed
 * from a config, and thin entries over the core's checked functions that
 * work on the planned buffers. The module imports one memory, which the
 * host creates once with exactly plan->total bytes (rounded up to pages);
 * nothing here allocates or grows it.
 *
 * Every buffer lives at a fixed offset of the plan, so a host needs only
 * the plan's offsets to write weights and tokens and read logits and the
 * cache. */
#include <stdint.h>

#include "ls_gpt2.h"
#include "ls_gpt2_q8.h"
#include "ls_sampler.h"
#include "ls_status.h"
#include "ls_tiny.h"

#define LSW_EXPORT(name) __attribute__((export_name(name)))

/* The linker's end of static data and stack: planned buffers start after
 * it, so that they can never overlap the module's own memory. */
extern unsigned char __heap_base;

/* A plan that does not fit the 4 GiB of a wasm32 memory (GPT-2 1.5B). */
#define LSW_ERR_TOO_LARGE 100
/* cachedStep, infer or prefill before gpt2_prepare. */
#define LSW_ERR_NOT_PREPARED 101
/* prefill with every position's logits over more positions than the
 * planned logits rows (the host runs such a prompt in chunks). */
#define LSW_ERR_LOGITS_ROWS 102
/* gpt2_prepare on int8 weights that ls_gpt2_q8_weights_valid refuses. */
#define LSW_ERR_Q8_WEIGHTS 103
/* observe without an observation buffer (a plan other than
 * gpt2_observe_plan's), or one too small for the pass. */
#define LSW_ERR_NOT_OBSERVING 104

/* Rows of the GPT-2 logits buffer: the positions one prefill call can
 * return every position's logits for (at most max_prefix). A host asking
 * for more runs the prompt in chunks, which gives the same bits. */
#define LSW_LOGITS_ROWS 32

#ifdef __wasm_simd128__
/* wasm/ops32_simd.c: the block matrices as 32-column panels. */
void lsw_forget_panels(void);
int lsw_repack_panels(float* w, int n_in, int n_out, float* tmp);
void lsw_set_head_panels(const float* m, float* panels, int n, int n_rows);
int lsw_exp32_mismatches(uint32_t first, uint32_t step, uint32_t count);

/* For the tests: the SIMD exp (softmax) against ls_exp32 on a sweep of bit
 * patterns; the number of differences. */
LSW_EXPORT("exp32_mismatches")
int32_t lsw_exp32_sweep(uint32_t first, uint32_t step, uint32_t count) {
  return lsw_exp32_mismatches(first, step, count);
}
#endif
#define LSW_ALIGN 64u
#define LSW_PAGE 65536u

/* Byte offsets and sizes of every buffer a session uses. The field order is
 * the host's ABI (hosts/node/module.mjs reads it as u32 words). */
typedef struct {
  uint32_t status; /* 0, an ls_status, or LSW_ERR_TOO_LARGE */
  uint32_t total;  /* bytes the memory needs: a multiple of 64 KiB */
  uint32_t weights, weights_bytes;
  uint32_t cache, cache_bytes; /* GPT-2 only */
  uint32_t scratch, scratch_bytes;
  /* f32 (GPT-2: logits_rows rows of n_vocab, for prefill's every-position
   * logits; the step, infer and the sampler use the first) or f64 (tiny) */
  uint32_t logits, logits_bytes;
  uint32_t tokens, tokens_bytes; /* int32, n_ctx of them */
  uint32_t sample, sample_bytes; /* widened logits, ranks, weights */
  /* SIMD GPT-2: room to repack one matrix at gpt2_prepare; the cache
   * itself when it is large enough (it is empty then), so usually no
   * memory of its own. */
  uint32_t repack, repack_bytes;
  /* SIMD GPT-2: the output head (wte) as panels of 32 rows. */
  uint32_t head, head_bytes;
  /* GPT-2 planned by gpt2_observe_plan / gpt2_q8_observe_plan only (0
   * otherwise): where `observe` writes the observed pass's every-position
   * logits and then its tap records (lsw_observe_bytes). Appended last, so
   * the fields above and their offsets are those of the plain plan. */
  uint32_t observe, observe_bytes;
} lsw_plan;

typedef struct {
  int kind; /* 0: none, 1: tiny, 2: GPT-2 */
  int q8;   /* GPT-2 on grouped int8 weights (docs/arithmetic.md §7) */
  ls_gpt2_config gpt2;
  int tiny_ctx;
  int max_prefix;
  int logits_rows; /* GPT-2: rows of the logits buffer */
  int last_row;    /* the row holding the latest position's logits */
  int prepared;    /* GPT-2 weights checked (and repacked) */
  lsw_plan plan;
  /* observe: the next record's address and the end of the observation
   * buffer, whether a record did not fit (never, for a pass the plan
   * sized), and where the last pass's records start and their length. */
  uint32_t obs_next, obs_end;
  int obs_overflow;
  uint32_t obs_records, obs_records_bytes;
  uint64_t rng; /* the sampler's SplitMix64 state (§5.1) */
} lsw_state;

static lsw_state g;

/* Lays out the buffers after the static data; sizes in bytes as uint64 so
 * that an oversized config is reported rather than wrapped. */
typedef struct {
  uint64_t at;
  int overflow;
} lsw_cursor;

static uint32_t lsw_take(lsw_cursor* c, uint64_t bytes, uint32_t* size) {
  c->at = (c->at + LSW_ALIGN - 1) / LSW_ALIGN * LSW_ALIGN;
  const uint64_t start = c->at;
  c->at += bytes;
  /* The last page must stay addressable: 4 GiB - 64 KiB at most. */
  if (c->at > (uint64_t)0xFFFF0000u) c->overflow = 1;
  *size = (uint32_t)bytes;
  return (uint32_t)start;
}

static lsw_cursor lsw_start(void) {
  lsw_cursor c;
  c.at = (uint64_t)(uintptr_t)&__heap_base;
  c.overflow = 0;
  return c;
}

static void lsw_finish(lsw_cursor* c) {
  lsw_plan* p = &g.plan;
  p->total =
      c->overflow
          ? 0
          : (uint32_t)((c->at + LSW_PAGE - 1) / LSW_PAGE * (uint64_t)LSW_PAGE);
  if (c->overflow) p->status = LSW_ERR_TOO_LARGE;
}

static void lsw_sample_buffers(lsw_cursor* c, uint64_t vocab) {
  g.plan.sample = lsw_take(c, vocab * (8 + 8 + 4), &g.plan.sample_bytes);
}

/* The plan for a tiny model of context n_ctx (docs/models.md). */
static void lsw_reset(void) {
  g = (lsw_state){0};
#ifdef __wasm_simd128__
  lsw_forget_panels();
#endif
}

LSW_EXPORT("tiny_plan") const lsw_plan* lsw_tiny_plan(int32_t n_ctx) {
  lsw_reset();
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  if (L.total == 0) {
    g.plan.status = LS_ERR_CONTEXT;
    return &g.plan;
  }
  g.kind = 1;
  g.tiny_ctx = n_ctx;
  lsw_cursor c = lsw_start();
  lsw_plan* p = &g.plan;
  p->weights = lsw_take(&c, (uint64_t)L.total * 8, &p->weights_bytes);
  p->scratch = lsw_take(&c, (uint64_t)ls_tiny_scratch_words(n_ctx) * 8,
                        &p->scratch_bytes);
  p->logits = lsw_take(&c, LS_TINY_VOCAB * 8, &p->logits_bytes);
  p->tokens = lsw_take(&c, (uint64_t)n_ctx * 4, &p->tokens_bytes);
  lsw_sample_buffers(&c, LS_TINY_VOCAB);
  lsw_finish(&c);
  return p;
}

/* The tiny checked entry (docs/models.md) on the planned buffers: the
 * logits of the last of n_tokens tokens, weights clipped to [-bound,
 * bound]. Returns an ls_status. */
LSW_EXPORT("tiny_logits")
int32_t lsw_tiny_logits(int32_t n_tokens, double bound) {
  if (g.kind != 1) return LS_ERR_CONFIG;
  if (n_tokens < 0) return LS_ERR_EMPTY_SEQUENCE;
  const lsw_plan* p = &g.plan;
  /* More tokens than the buffer holds is "too long", checked before the
   * buffer is read. */
  if (n_tokens > g.tiny_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
  return ls_tiny_logits_checked(
      g.tiny_ctx, (const double*)(uintptr_t)p->weights, p->weights_bytes / 8,
      (const int32_t*)(uintptr_t)p->tokens, (size_t)n_tokens, bound,
      (double*)(uintptr_t)p->scratch, p->scratch_bytes / 8,
      (double*)(uintptr_t)p->logits);
}

/* The plan for a GPT-2 config, binary32 (q8 0) or grouped int8 (q8 1);
 * max_prefix (1..n_ctx, <= 0: n_ctx) sizes the scratch of the full-prefix
 * pass and of one prefill call (the same size:
 * ls_gpt2_infer_scratch_floats), and the logits buffer holds
 * min(max_prefix, LSW_LOGITS_ROWS) rows. The int8 plan differs only in the
 * weights (ls_gpt2_q8_bytes, used in place: the file's layout is the one
 * the kernels read, so neither repacking room nor head panels). */
static uint64_t lsw_observe_bytes(const ls_gpt2_config* c, uint64_t n);

static const lsw_plan* lsw_plan_gpt2(int32_t n_vocab, int32_t n_ctx,
                                     int32_t n_embd, int32_t n_head,
                                     int32_t n_layer, int32_t max_prefix,
                                     int q8, int observe) {
  lsw_reset();
  ls_gpt2_config c = {n_vocab, n_ctx, n_embd, n_head, n_layer};
  if (q8 ? !ls_gpt2_q8_config_valid(&c) : !ls_gpt2_config_valid(&c)) {
    /* A config that is sound but whose weights alone pass 4 GiB (GPT-2
     * 1.5B) gets its own message; the core only sees a size_t overflow.
     * (The core's check counts binary32 words for int8 too, so 1.5B is
     * refused here in both formats.) */
    const uint64_t C = (uint64_t)(n_embd > 0 ? n_embd : 0);
    const uint64_t words =
        (uint64_t)(n_vocab > 0 ? n_vocab : 0) * C +
        (uint64_t)(n_ctx > 0 ? n_ctx : 0) * C +
        (uint64_t)(n_layer > 0 ? n_layer : 0) * (12 * C * C + 13 * C);
    const int sound = n_vocab > 0 && n_ctx > 0 && n_embd > 0 && n_head > 0 &&
                      n_layer > 0 && n_embd % n_head == 0 &&
                      (!q8 || n_embd % 64 == 0);
    g.plan.status = sound && words * 4 > (uint64_t)0xFFFF0000u
                        ? LSW_ERR_TOO_LARGE
                        : LS_ERR_CONFIG;
    return &g.plan;
  }
  g.kind = 2;
  g.q8 = q8;
  g.gpt2 = c;
  g.max_prefix = max_prefix > 0 && max_prefix < n_ctx ? max_prefix : n_ctx;
  g.logits_rows =
      g.max_prefix < LSW_LOGITS_ROWS ? g.max_prefix : LSW_LOGITS_ROWS;
  /* The scratch serves the step, the full-prefix pass and the prefill of
   * up to max_prefix positions. */
  const uint64_t step = ls_gpt2_step_scratch_floats(&c);
  const uint64_t infer = ls_gpt2_infer_scratch_floats(&c, g.max_prefix);
  const uint64_t prefill = ls_gpt2_infer_scratch_floats(&c, g.max_prefix);
  uint64_t scratch = step > infer ? step : infer;
  if (prefill > scratch) scratch = prefill;
  lsw_cursor cur = lsw_start();
  lsw_plan* p = &g.plan;
  const uint64_t weights = q8 ? (uint64_t)ls_gpt2_q8_bytes(&c)
                              : (uint64_t)ls_gpt2_param_count(&c) * 4;
  p->weights = lsw_take(&cur, weights, &p->weights_bytes);
  p->cache =
      lsw_take(&cur, (uint64_t)ls_gpt2_cache_floats(&c) * 4, &p->cache_bytes);
  p->scratch = lsw_take(&cur, scratch * 4, &p->scratch_bytes);
  p->logits = lsw_take(&cur, (uint64_t)g.logits_rows * (uint64_t)n_vocab * 4,
                       &p->logits_bytes);
  p->tokens = lsw_take(&cur, (uint64_t)n_ctx * 4, &p->tokens_bytes);
  lsw_sample_buffers(&cur, (uint64_t)n_vocab);
#ifdef __wasm_simd128__
  if (!q8) {
    const uint64_t matrix = (uint64_t)16 * (uint64_t)n_embd * n_embd;
    if (p->cache_bytes >= matrix) {
      p->repack = p->cache, p->repack_bytes = (uint32_t)matrix;
    } else {
      p->repack = lsw_take(&cur, matrix, &p->repack_bytes);
    }
    const uint64_t head_rows = ((uint64_t)n_vocab + 31) / 32 * 32;
    p->head = lsw_take(&cur, head_rows * (uint64_t)n_embd * 4, &p->head_bytes);
  }
#endif
  if (observe) {
    p->observe = lsw_take(&cur, lsw_observe_bytes(&c, (uint64_t)g.max_prefix),
                          &p->observe_bytes);
  }
  lsw_finish(&cur);
  return p;
}

LSW_EXPORT("gpt2_plan")
const lsw_plan* lsw_gpt2_plan(int32_t n_vocab, int32_t n_ctx, int32_t n_embd,
                              int32_t n_head, int32_t n_layer,
                              int32_t max_prefix) {
  return lsw_plan_gpt2(n_vocab, n_ctx, n_embd, n_head, n_layer, max_prefix, 0,
                       0);
}

/* The plan for a GPT-2 on grouped int8 weights (core/ls_gpt2_q8.h): the
 * same buffers, the weights being the int8 file's payload as it is. After
 * it, gpt2_prepare, cachedStep, infer and prefill run the int8 model. */
LSW_EXPORT("gpt2_q8_plan")
const lsw_plan* lsw_gpt2_q8_plan(int32_t n_vocab, int32_t n_ctx, int32_t n_embd,
                                 int32_t n_head, int32_t n_layer,
                                 int32_t max_prefix) {
  return lsw_plan_gpt2(n_vocab, n_ctx, n_embd, n_head, n_layer, max_prefix, 1,
                       0);
}

/* The observed pass (docs/wasm.md "Observed pass"): `observe(n)` writes
 * every tap of core/ls_gpt2.h's layer pass over the first n planned tokens
 * to the observation buffer, in the pass's order, each as a record of five
 * int32 (layer, tap, position, head, count) followed by `count` binary32
 * words. The buffer starts with room for max_prefix rows of logits (the
 * pass's own output), then the records. */
#define LSW_RECORD_WORDS 5u

/* Bytes of the observation buffer for a pass of n positions: n rows of
 * logits, then per position one record for embed, ln_f and logits and per
 * layer ten [C]..[4C] records and two per head of t + 1 scores. */
static uint64_t lsw_observe_bytes(const ls_gpt2_config* c, uint64_t n) {
  const uint64_t C = (uint64_t)c->n_embd, H = (uint64_t)c->n_head;
  const uint64_t L = (uint64_t)c->n_layer, V = (uint64_t)c->n_vocab;
  const uint64_t records = n * (3 + L * (10 + 2 * H));
  const uint64_t words = n * V + records * LSW_RECORD_WORDS +
                         n * (2 * C + L * 18 * C + V) +
                         L * 2 * H * (n * (n + 1) / 2);
  return words * 4;
}

/* The plans of gpt2_plan and gpt2_q8_plan (the same buffers at the same
 * offsets) plus the observation buffer for a pass of up to max_prefix
 * positions, for `observe`. Only a host that observes (the native
 * verify's wasm backend, docs/verify.md) plans with these. */
LSW_EXPORT("gpt2_observe_plan")
const lsw_plan* lsw_gpt2_observe_plan(int32_t n_vocab, int32_t n_ctx,
                                      int32_t n_embd, int32_t n_head,
                                      int32_t n_layer, int32_t max_prefix) {
  return lsw_plan_gpt2(n_vocab, n_ctx, n_embd, n_head, n_layer, max_prefix, 0,
                       1);
}

LSW_EXPORT("gpt2_q8_observe_plan")
const lsw_plan* lsw_gpt2_q8_observe_plan(int32_t n_vocab, int32_t n_ctx,
                                         int32_t n_embd, int32_t n_head,
                                         int32_t n_layer, int32_t max_prefix) {
  return lsw_plan_gpt2(n_vocab, n_ctx, n_embd, n_head, n_layer, max_prefix, 1,
                       1);
}

/* After the host has written the weights: checks them finite (the cached
 * step requires it) and, in the SIMD module, repacks the block matrices
 * into panels (wasm/ops32_simd.c). Returns an ls_status. */
LSW_EXPORT("gpt2_prepare") int32_t lsw_gpt2_prepare(void) {
  if (g.kind != 2) return LS_ERR_CONFIG;
  if (g.prepared) return LS_OK;
  if (g.q8) {
    /* Every level in [-127, 127], scales finite and non-negative, the
     * binary32 tensors finite, the padding zero: what the step assumes. */
    if (!ls_gpt2_q8_weights_valid(&g.gpt2,
                                  (const uint8_t*)(uintptr_t)g.plan.weights,
                                  g.plan.weights_bytes)) {
      return LSW_ERR_Q8_WEIGHTS;
    }
    g.prepared = 1;
    return LS_OK;
  }
  float* w = (float*)(uintptr_t)g.plan.weights;
  if (!ls_gpt2_weights_finite(w, g.plan.weights_bytes / 4)) {
    return LS_ERR_WEIGHT_NONFINITE;
  }
#ifdef __wasm_simd128__
  const ls_gpt2_config* c = &g.gpt2;
  const int C = c->n_embd;
  float* tmp = (float*)(uintptr_t)g.plan.repack;
  for (int l = 0; l < c->n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(c, l);
    lsw_repack_panels(w + b.attn_w, C, 3 * C, tmp);
    lsw_repack_panels(w + b.proj_w, C, C, tmp);
    lsw_repack_panels(w + b.fc_w, C, 4 * C, tmp);
    lsw_repack_panels(w + b.out_w, 4 * C, C, tmp);
  }
  lsw_set_head_panels(w, (float*)(uintptr_t)g.plan.head, C, c->n_vocab);
#endif
  g.prepared = 1;
  return LS_OK;
}

/* ls_gpt2_step at `position`: the cache's first `position` rows must hold
 * the earlier positions. Returns an ls_status. */
LSW_EXPORT("cachedStep")
int32_t lsw_gpt2_step(int32_t token, int32_t position) {
  if (g.kind != 2) return LS_ERR_CONFIG;
  if (!g.prepared) return LSW_ERR_NOT_PREPARED;
  const ls_gpt2_config* c = &g.gpt2;
  const lsw_plan* p = &g.plan;
  if (position < 0 || position >= c->n_ctx) return LS_ERR_POSITION;
  const size_t used = (size_t)position * ls_gpt2_cache_row_floats(c);
  g.last_row = 0;
  if (g.q8) {
    return ls_gpt2_q8_step(c, (const uint8_t*)(uintptr_t)p->weights,
                           p->weights_bytes, (float*)(uintptr_t)p->cache,
                           p->cache_bytes / 4, used, token, position,
                           (float*)(uintptr_t)p->scratch, p->scratch_bytes / 4,
                           (float*)(uintptr_t)p->logits);
  }
  return ls_gpt2_step(c, (const float*)(uintptr_t)p->weights,
                      p->weights_bytes / 4, (float*)(uintptr_t)p->cache,
                      p->cache_bytes / 4, used, token, position,
                      (float*)(uintptr_t)p->scratch, p->scratch_bytes / 4,
                      (float*)(uintptr_t)p->logits);
}

/* ls_gpt2_infer over the first n planned tokens. */
LSW_EXPORT("infer") int32_t lsw_gpt2_infer(int32_t n) {
  if (g.kind != 2) return LS_ERR_CONFIG;
  if (!g.prepared) return LSW_ERR_NOT_PREPARED;
  const lsw_plan* p = &g.plan;
  if (n > g.max_prefix && n <= g.gpt2.n_ctx) return LS_ERR_SCRATCH;
  if (n > g.gpt2.n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
  g.last_row = 0;
  if (g.q8) {
    return ls_gpt2_q8_infer(
        &g.gpt2, (const uint8_t*)(uintptr_t)p->weights, p->weights_bytes,
        (const int32_t*)(uintptr_t)p->tokens, n, (float*)(uintptr_t)p->scratch,
        p->scratch_bytes / 4, (float*)(uintptr_t)p->logits);
  }
  return ls_gpt2_infer(
      &g.gpt2, (const float*)(uintptr_t)p->weights, p->weights_bytes / 4,
      (const int32_t*)(uintptr_t)p->tokens, n, (float*)(uintptr_t)p->scratch,
      p->scratch_bytes / 4, (float*)(uintptr_t)p->logits);
}

/* ls_gpt2_prefill: the first n planned tokens at positions position ..
 * position + n - 1, their keys and values appended to the cache after its
 * first `position` rows (which must hold the earlier positions). The last
 * position's logits go to the logits buffer's first row, or with
 * all_positions != 0 every position's to its first n rows (n <= the
 * plan's logits rows). The same bits as n cachedStep calls. Returns an
 * ls_status. */
LSW_EXPORT("prefill")
int32_t lsw_gpt2_prefill(int32_t n, int32_t position, int32_t all_positions) {
  if (g.kind != 2) return LS_ERR_CONFIG;
  if (!g.prepared) return LSW_ERR_NOT_PREPARED;
  const ls_gpt2_config* c = &g.gpt2;
  const lsw_plan* p = &g.plan;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (position < 0 || position >= c->n_ctx) return LS_ERR_POSITION;
  /* The tokens buffer holds n_ctx tokens: checked before it is read. */
  if (n > c->n_ctx - position) return LS_ERR_SEQUENCE_TOO_LONG;
  if (n > g.max_prefix) return LS_ERR_SCRATCH;
  if (all_positions && n > g.logits_rows) return LSW_ERR_LOGITS_ROWS;
  const size_t used = (size_t)position * ls_gpt2_cache_row_floats(c);
  g.last_row = all_positions ? n - 1 : 0;
  if (g.q8) {
    return ls_gpt2_q8_prefill(
        c, (const uint8_t*)(uintptr_t)p->weights, p->weights_bytes,
        (float*)(uintptr_t)p->cache, p->cache_bytes / 4, used,
        (const int32_t*)(uintptr_t)p->tokens, n, position, all_positions != 0,
        (float*)(uintptr_t)p->scratch, p->scratch_bytes / 4,
        (float*)(uintptr_t)p->logits);
  }
  return ls_gpt2_prefill(c, (const float*)(uintptr_t)p->weights,
                         p->weights_bytes / 4, (float*)(uintptr_t)p->cache,
                         p->cache_bytes / 4, used,
                         (const int32_t*)(uintptr_t)p->tokens, n, position,
                         all_positions != 0, (float*)(uintptr_t)p->scratch,
                         p->scratch_bytes / 4, (float*)(uintptr_t)p->logits);
}

/* The observer of `observe`: one record per call, appended. */
static void lsw_record(void* user, int layer, ls_gpt2_tap tap, int position,
                       int head, const float* data, size_t n) {
  (void)user;
  const uint64_t bytes = ((uint64_t)LSW_RECORD_WORDS + n) * 4;
  if (g.obs_overflow || bytes > (uint64_t)(g.obs_end - g.obs_next)) {
    g.obs_overflow = 1;
    return;
  }
  int32_t* r = (int32_t*)(uintptr_t)g.obs_next;
  r[0] = layer, r[1] = (int32_t)tap, r[2] = position, r[3] = head;
  r[4] = (int32_t)n;
  float* f = (float*)(r + LSW_RECORD_WORDS);
  for (size_t i = 0; i < n; ++i) f[i] = data[i];
  g.obs_next += (uint32_t)bytes;
}

/* The observed pass over the first n planned tokens at positions 0 ..
 * n - 1 (n <= max_prefix): ls_gpt2_infer_observed, or
 * ls_gpt2_q8_infer_observed on int8 weights, the core's layer pass with
 * this module's kernels, writing every position's logits and a record of
 * every tap (lsw_observe_bytes) to the observation buffer. The cache, the
 * logits buffer and the sampler's row are not touched. Returns an
 * ls_status (LSW_ERR_NOT_OBSERVING without an observation buffer); after
 * it, observed_bytes() is the records' length. */
LSW_EXPORT("observe") int32_t lsw_gpt2_observe(int32_t n) {
  if (g.kind != 2) return LS_ERR_CONFIG;
  if (!g.prepared) return LSW_ERR_NOT_PREPARED;
  const lsw_plan* p = &g.plan;
  if (!p->observe) return LSW_ERR_NOT_OBSERVING;
  if (n > g.max_prefix && n <= g.gpt2.n_ctx) return LS_ERR_SCRATCH;
  if (n > g.gpt2.n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
  const size_t logits_bytes = (size_t)g.max_prefix * (size_t)g.gpt2.n_vocab * 4;
  float* logits = (float*)(uintptr_t)p->observe;
  g.obs_records = p->observe + (uint32_t)logits_bytes;
  g.obs_records_bytes = 0;
  g.obs_next = g.obs_records;
  g.obs_end = p->observe + p->observe_bytes;
  g.obs_overflow = 0;
  ls_status s;
  if (g.q8) {
    s = ls_gpt2_q8_infer_observed(
        &g.gpt2, (const uint8_t*)(uintptr_t)p->weights, p->weights_bytes,
        (const int32_t*)(uintptr_t)p->tokens, n, (float*)(uintptr_t)p->scratch,
        p->scratch_bytes / 4, logits, lsw_record, 0);
  } else {
    s = ls_gpt2_infer_observed(
        &g.gpt2, (const float*)(uintptr_t)p->weights, p->weights_bytes / 4,
        (const int32_t*)(uintptr_t)p->tokens, n, (float*)(uintptr_t)p->scratch,
        p->scratch_bytes / 4, logits, lsw_record, 0);
  }
  g.obs_records_bytes = g.obs_next - g.obs_records;
  if (s == LS_OK && g.obs_overflow) return LSW_ERR_NOT_OBSERVING;
  return (int32_t)s;
}

/* After `observe`: the address of its first record and the records'
 * length in bytes (0 before any). */
LSW_EXPORT("observed_at") uint32_t lsw_observed_at(void) {
  return g.obs_records;
}
LSW_EXPORT("observed_bytes") uint32_t lsw_observed_bytes(void) {
  return g.obs_records_bytes;
}

/* For the host: the rows of the GPT-2 logits buffer (every-position
 * logits one prefill call can return), 0 without a GPT-2 plan. */
LSW_EXPORT("logits_rows") int32_t lsw_logits_rows(void) {
  return g.kind == 2 ? g.logits_rows : 0;
}

/* §5.1: the sampler's state is the seed. */
LSW_EXPORT("seed") void lsw_seed(uint64_t seed) { g.rng = seed; }

/* §5.2/§5.3 on the latest logits (GPT-2's binary32 widened exactly):
 * greedy for top_k == 0, else top-k with temperature. Returns the token,
 * or -1 for options the caller should have rejected. */
LSW_EXPORT("sample") int32_t lsw_sample(int32_t top_k, double temperature) {
  const lsw_plan* p = &g.plan;
  const int n = g.kind == 1 ? LS_TINY_VOCAB : g.gpt2.n_vocab;
  if (g.kind == 0 || top_k < 0 || top_k > n ||
      !(temperature > 0.0 && temperature <= 1e300)) {
    return -1;
  }
  double* wide = (double*)(uintptr_t)p->sample;
  double* weight = wide + n;
  int* rank = (int*)(weight + n);
  if (g.kind == 1) {
    const double* l = (const double*)(uintptr_t)p->logits;
    for (int i = 0; i < n; ++i) wide[i] = l[i];
  } else {
    /* The latest position's row (the last of an every-position prefill). */
    const float* l =
        (const float*)(uintptr_t)p->logits + (size_t)g.last_row * (size_t)n;
    for (int i = 0; i < n; ++i) wide[i] = (double)l[i];
  }
  if (top_k == 0) return ls_argmax64(wide, n);
  return ls_sample_top_k64(wide, n, top_k, temperature, &g.rng, rank, weight);
}

/* The English message of a status, as a NUL-terminated string in memory. */
LSW_EXPORT("status_message") const char* lsw_status_message(int32_t s) {
  if (s == LSW_ERR_TOO_LARGE) {
    return "the model does not fit a 4 GiB WebAssembly memory";
  }
  if (s == LSW_ERR_NOT_PREPARED) {
    return "the weights were not prepared (gpt2_prepare after loading them)";
  }
  if (s == LSW_ERR_LOGITS_ROWS) {
    return "more positions than the planned rows of every-position logits";
  }
  if (s == LSW_ERR_Q8_WEIGHTS) {
    return "the int8 weights are not well formed (a level -128, a negative "
           "or non-finite scale, a non-finite binary32 weight or nonzero "
           "padding)";
  }
  if (s == LSW_ERR_NOT_OBSERVING) {
    return "no observation buffer for this pass (plan with "
           "gpt2_observe_plan or gpt2_q8_observe_plan)";
  }
  return ls_status_message((ls_status)s);
}
