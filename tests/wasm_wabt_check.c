/* Independent semantics for issue 4: the scalar module (lockstep-scalar
 * .wasm, no SIMD) translated to C by wabt's wasm2c and compiled natively
 * runs the tiny models' checked entry, and every logit of seeded random
 * inputs equals the native core's (core/ls_tiny.c), byte for byte. wasm2c
 * reads the module's own instructions, so this checks the module's bits
 * without V8.
 *
 * With --gpt2 PACKED.lockstep (the Hugging Face fixture, packed), the
 * same for GPT-2: the logits of every cached step, the KV cache and the
 * full-prefix pass against core/ls_gpt2.c; and the module's batched
 * prefill (issue 8) in chunks of 1, 5 and 8 positions (every position's
 * logits) and after 7 positions (the last one's) against those steps.
 * Then all of it again on the module's int8 entries (issue 9: gpt2_q8_plan,
 * docs/arithmetic.md §7) for the same weights quantized here with the
 * core's ls_q8_pack, against core/ls_gpt2_q8.c.
 *
 *   wasm_wabt_check TINY.lockstep ... [--gpt2 PACKED.lockstep]
 *   (exit 0: all equal) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"
#include "ls_gpt2_q8.h"
#include "ls_q8.h"
#include "ls_sampler.h"
#include "ls_tiny.h"
#include "lsw_scalar.h"

/* The one import, the memory, which this embedder owns. */
struct Z_env_instance_t {
  wasm_rt_memory_t memory;
};
wasm_rt_memory_t* Z_envZ_memory(struct Z_env_instance_t* env) {
  return &env->memory;
}

enum { PLAN_WORDS = 18 }; /* lsw_plan (wasm/lsw_entry.c) in u32 words */
enum {
  P_STATUS,
  P_TOTAL,
  P_WEIGHTS,
  P_WEIGHTS_BYTES,
  P_CACHE,
  P_CACHE_BYTES,
  P_SCRATCH,
  P_SCRATCH_BYTES,
  P_LOGITS,
  P_LOGITS_BYTES,
  P_TOKENS
};

/* The end of a check: the memory must still have the pages it was created
 * with (nothing grows during a session); then the instance and its memory
 * are released. Returns 1 if the memory grew, else 0. */
static int release(Z_lsw_instance_t* inst, struct Z_env_instance_t* env,
                   uint32_t pages, const char* path) {
  const int grew = env->memory.pages != pages;
  if (grew) fprintf(stderr, "%s: the memory grew\n", path);
  Z_lsw_free(inst);
  wasm_rt_free_memory(&env->memory);
  return grew;
}

static int fail(const char* what, const char* path) {
  fprintf(stderr, "wasm_wabt_check: %s: %s\n", path, what);
  return 1;
}

/* A tiny checkpoint's payload (docs/checkpoint-format.md) and n_ctx. */
static double* read_tiny(const char* path, size_t* words, int* n_ctx) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char pre[56];
  double* w = NULL;
  char* header = NULL;
  if (fread(pre, 1, 56, f) != 56 || memcmp(pre, "LOCKSTEP", 8) != 0) goto out;
  uint32_t h;
  uint64_t p;
  memcpy(&h, pre + 12, 4);
  memcpy(&p, pre + 16, 8);
  header = calloc(h + 1, 1);
  if (!header || fread(header, 1, h, f) != h) goto out;
  const char* at = strstr(header, "\"n_ctx\":");
  if (!at) goto out;
  *n_ctx = atoi(at + 8);
  w = malloc(p);
  if (!w || fread(w, 1, p, f) != p) {
    free(w);
    w = NULL;
    goto out;
  }
  *words = (size_t)(p / 8);
out:
  free(header);
  fclose(f);
  return w;
}

static void read_plan(const wasm_rt_memory_t* m, u32 at, uint32_t* plan) {
  memcpy(plan, m->data + at, PLAN_WORDS * 4);
}

static int check_model(const char* path, uint64_t* rng) {
  size_t words = 0;
  int n_ctx = 0;
  double* weights = read_tiny(path, &words, &n_ctx);
  if (!weights) return fail("not a readable tiny checkpoint", path);

  /* Plan with a throw-away instance, then instantiate on exactly the
   * planned memory, as the Node.js host does. */
  struct Z_env_instance_t planner_env, env;
  Z_lsw_instance_t planner, inst;
  uint32_t plan[PLAN_WORDS];
  wasm_rt_allocate_memory(&planner_env.memory, 16, 16);
  Z_lsw_instantiate(&planner, &planner_env);
  read_plan(&planner_env.memory, Z_lswZ_tiny_plan(&planner, (u32)n_ctx), plan);
  Z_lsw_free(&planner);
  wasm_rt_free_memory(&planner_env.memory);
  if (plan[P_STATUS] != 0) return fail("the module refused the plan", path);
  const uint32_t pages = plan[P_TOTAL] / 65536;
  wasm_rt_allocate_memory(&env.memory, pages, pages);
  Z_lsw_instantiate(&inst, &env);
  read_plan(&env.memory, Z_lswZ_tiny_plan(&inst, (u32)n_ctx), plan);
  if (plan[P_WEIGHTS_BYTES] != words * 8) return fail("weight count", path);
  memcpy(env.memory.data + plan[P_WEIGHTS], weights, words * 8);

  const size_t scratch_words = ls_tiny_scratch_words(n_ctx);
  double* scratch = malloc(scratch_words * 8);
  int32_t* tokens = malloc((size_t)n_ctx * 4);
  int failures = 0;
  for (int i = 0; i < 60 && !failures; ++i) {
    const int n = i == 0 ? n_ctx : 1 + (int)(ls_splitmix64_next(rng) % n_ctx);
    for (int t = 0; t < n; ++t) {
      tokens[t] = (int32_t)(ls_splitmix64_next(rng) % 256);
    }
    const double bound = i % 3 == 0 ? 10.0 : (i % 3 == 1 ? 2.5 : 0.75);
    double want[256], got[256];
    const ls_status s =
        ls_tiny_logits_checked(n_ctx, weights, words, tokens, (size_t)n, bound,
                               scratch, scratch_words, want);
    memcpy(env.memory.data + plan[P_TOKENS], tokens, (size_t)n * 4);
    const u32 ws = Z_lswZ_tiny_logits(&inst, (u32)n, bound);
    if ((u32)s != ws) {
      fprintf(stderr, "%s: sequence %d: status %u (wasm) vs %d (native)\n",
              path, i, ws, (int)s);
      ++failures;
      break;
    }
    memcpy(got, env.memory.data + plan[P_LOGITS], sizeof got);
    for (int k = 0; k < 256; ++k) {
      if (memcmp(&got[k], &want[k], 8) != 0) {
        uint64_t a, b;
        memcpy(&a, &got[k], 8);
        memcpy(&b, &want[k], 8);
        fprintf(stderr,
                "%s: sequence %d (%d tokens, bound %g): first difference at "
                "logit %d: 0x%016llx (wasm2c) vs 0x%016llx (native)\n",
                path, i, n, bound, k, (unsigned long long)a,
                (unsigned long long)b);
        ++failures;
        break;
      }
    }
  }
  /* A token outside the vocabulary is the same error in both. */
  tokens[0] = 256;
  memcpy(env.memory.data + plan[P_TOKENS], tokens, 4);
  if (Z_lswZ_tiny_logits(&inst, 1, 10.0) != LS_ERR_TOKEN) {
    fprintf(stderr, "%s: a bad token was not LS_ERR_TOKEN\n", path);
    ++failures;
  }
  failures += release(&inst, &env, pages, path);
  free(scratch);
  free(tokens);
  free(weights);
  if (!failures) printf("ok   %s: 60 random inputs, every logit equal\n", path);
  return failures;
}

/* The first `n` bytes at a and b equal; else the first differing float. */
static int same_floats(const char* what, const void* a, const void* b,
                       size_t n) {
  if (memcmp(a, b, n) == 0) return 1;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t x, y;
    memcpy(&x, (const char*)a + i, 4);
    memcpy(&y, (const char*)b + i, 4);
    if (x != y) {
      fprintf(stderr,
              "%s: first difference at element %zu: 0x%08x (wasm2c) vs "
              "0x%08x (native)\n",
              what, i / 4, x, y);
      break;
    }
  }
  return 0;
}

static int config_int(const char* header, const char* key) {
  char pattern[32];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char* at = strstr(header, pattern);
  return at ? atoi(at + strlen(pattern)) : -1;
}

static int run_gpt2(const char* path, const ls_gpt2_config* c, const void* w,
                    size_t p, int q8);

/* Plain binary32 weights to the int8 payload (docs/int8.md "Payload
 * layout"): the matrices, wte and wpe packed by ls_q8_pack at the
 * ls_gpt2_q8_* offsets, the rest copied; q zeroed by the caller. */
static ls_status quantize(const ls_gpt2_config* c, const float* w, uint8_t* q) {
  const size_t C = (size_t)c->n_embd, V = (size_t)c->n_vocab,
               T = (size_t)c->n_ctx;
  ls_status s = ls_q8_pack(w, C, V, 1, C, 0, V, q);
  if (s == LS_OK) {
    s = ls_q8_pack(w + ls_gpt2_wpe_offset(c), C, T, 1, C, 0, T,
                   q + ls_gpt2_q8_wpe_offset(c));
  }
  for (int l = 0; l < c->n_layer && s == LS_OK; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(c, l);
    const ls_gpt2_q8_block o = ls_gpt2_q8_block_offsets(c, l);
    const size_t f32[][3] = {
        {b.ln1_g, o.ln1_g, C},       {b.ln1_b, o.ln1_b, C},
        {b.attn_b, o.attn_b, 3 * C}, {b.proj_b, o.proj_b, C},
        {b.ln2_g, o.ln2_g, C},       {b.ln2_b, o.ln2_b, C},
        {b.fc_b, o.fc_b, 4 * C},     {b.out_b, o.out_b, C}};
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; ++i) {
      memcpy(q + f32[i][1], w + f32[i][0], f32[i][2] * 4);
    }
    if (s == LS_OK)
      s = ls_q8_pack(w + b.attn_w, C, 3 * C, 3 * C, 1, 0, 3 * C, q + o.attn_w);
    if (s == LS_OK)
      s = ls_q8_pack(w + b.proj_w, C, C, C, 1, 0, C, q + o.proj_w);
    if (s == LS_OK)
      s = ls_q8_pack(w + b.fc_w, C, 4 * C, 4 * C, 1, 0, 4 * C, q + o.fc_w);
    if (s == LS_OK)
      s = ls_q8_pack(w + b.out_w, 4 * C, C, C, 1, 0, C, q + o.out_w);
  }
  memcpy(q + ls_gpt2_q8_lnf_offset(c), w + ls_gpt2_lnf_offset(c), 2 * C * 4);
  return s;
}

static int check_gpt2(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) return fail("cannot open", path);
  unsigned char pre[56];
  uint32_t h = 0;
  uint64_t p = 0;
  if (fread(pre, 1, 56, f) != 56) return fail("truncated", path);
  memcpy(&h, pre + 12, 4);
  memcpy(&p, pre + 16, 8);
  char* header = calloc(h + 1, 1);
  float* w = malloc(p);
  if (!header || !w || fread(header, 1, h, f) != h || fread(w, 1, p, f) != p) {
    return fail("truncated", path);
  }
  fclose(f);
  const ls_gpt2_config c = {
      config_int(header, "n_vocab"), config_int(header, "n_ctx"),
      config_int(header, "n_embd"), config_int(header, "n_head"),
      config_int(header, "n_layer")};
  const int panel64 = strstr(header, "\"layout\":\"panel64\"") != NULL;
  free(header);
  const size_t words = ls_gpt2_param_count(&c);
  if (words == 0 || words * 4 != p) return fail("not a packed GPT-2", path);
  if (panel64) {
    /* A file in the panel64 layout (`lockstep convert`'s default): the
     * module and core/ls_gpt2.c take the plain layout, as the Node.js host
     * gives it. */
    float* plain = malloc(p);
    if (!plain) return fail("out of memory", path);
    ls_gpt2_from_panels(&c, w, plain);
    free(w);
    w = plain;
  }
  int failures = run_gpt2(path, &c, w, p, 0);
  /* The same weights quantized (docs/int8.md's payload layout, each tensor
   * at its ls_gpt2_q8_* offset, padding zero), on the int8 entries. */
  const size_t q8_bytes = ls_gpt2_q8_bytes(&c);
  uint8_t* q = q8_bytes ? calloc(q8_bytes, 1) : NULL;
  if (!q || quantize(&c, w, q) != LS_OK ||
      !ls_gpt2_q8_weights_valid(&c, q, q8_bytes)) {
    failures += fail("cannot quantize the weights to int8", path);
  } else {
    failures += run_gpt2(path, &c, q, q8_bytes, 1);
  }
  free(q);
  free(w);
  return failures;
}

/* The native reference of either format: binary32 (ls_gpt2.c) or int8
 * (ls_gpt2_q8.c), the same arguments otherwise. */
static ls_status native_step(int q8, const ls_gpt2_config* c, const void* w,
                             size_t bytes, float* cache, size_t cap, size_t len,
                             int32_t token, int32_t pos, float* scratch,
                             size_t n_scratch, float* out) {
  return q8 ? ls_gpt2_q8_step(c, w, bytes, cache, cap, len, token, pos, scratch,
                              n_scratch, out)
            : ls_gpt2_step(c, w, bytes / 4, cache, cap, len, token, pos,
                           scratch, n_scratch, out);
}

static ls_status native_infer(int q8, const ls_gpt2_config* c, const void* w,
                              size_t bytes, const int32_t* tokens, int n,
                              float* scratch, size_t n_scratch, float* out) {
  return q8 ? ls_gpt2_q8_infer(c, w, bytes, tokens, n, scratch, n_scratch, out)
            : ls_gpt2_infer(c, w, bytes / 4, tokens, n, scratch, n_scratch,
                            out);
}

/* The module against the native reference on one model: weights `w` of
 * `p` bytes, binary32 (q8 0, planned with gpt2_plan) or int8 (q8 1,
 * gpt2_q8_plan). Returns the number of failures. */
static int run_gpt2(const char* path, const ls_gpt2_config* cp, const void* w,
                    size_t p, int q8) {
  const ls_gpt2_config c = *cp;
  const char* kind = q8 ? "int8" : "binary32";
  u32 (*plan_fn)(Z_lsw_instance_t*, u32, u32, u32, u32, u32, u32) =
      q8 ? Z_lswZ_gpt2_q8_plan : Z_lswZ_gpt2_plan;
  struct Z_env_instance_t planner_env, env;
  Z_lsw_instance_t planner, inst;
  uint32_t plan[PLAN_WORDS];
  wasm_rt_allocate_memory(&planner_env.memory, 16, 16);
  Z_lsw_instantiate(&planner, &planner_env);
  read_plan(&planner_env.memory,
            plan_fn(&planner, (u32)c.n_vocab, (u32)c.n_ctx, (u32)c.n_embd,
                    (u32)c.n_head, (u32)c.n_layer, 0),
            plan);
  Z_lsw_free(&planner);
  wasm_rt_free_memory(&planner_env.memory);
  if (plan[P_STATUS] != 0) return fail("the module refused the plan", path);
  const uint32_t pages = plan[P_TOTAL] / 65536;
  wasm_rt_allocate_memory(&env.memory, pages, pages);
  Z_lsw_instantiate(&inst, &env);
  read_plan(&env.memory,
            plan_fn(&inst, (u32)c.n_vocab, (u32)c.n_ctx, (u32)c.n_embd,
                    (u32)c.n_head, (u32)c.n_layer, 0),
            plan);
  if (plan[P_WEIGHTS_BYTES] != p)
    return fail("the plan's weights differ", path);
  memcpy(env.memory.data + plan[P_WEIGHTS], w, p);
  if (Z_lswZ_gpt2_prepare(&inst) != 0) return fail("prepare failed", path);

  /* The first case of the fixture (docs/gpt2-format.md "Test fixture"). */
  static const int32_t tokens[] = {5962, 22307, 25, 198,  8421, 356,  5120,
                                   597,  2252,  11, 3285, 502,  2740, 13};
  const int n = (int)(sizeof tokens / sizeof tokens[0]);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  const size_t cache_floats = ls_gpt2_cache_floats(&c);
  const size_t scratch_floats = ls_gpt2_infer_scratch_floats(&c, n);
  float* cache = calloc(cache_floats, 4);
  float* scratch = malloc(scratch_floats * 4);
  float* want = malloc((size_t)c.n_vocab * 4);
  float* stepped = malloc((size_t)n * (size_t)c.n_vocab * 4);
  const size_t V4 = (size_t)c.n_vocab * 4;
  int failures = 0;
  for (int t = 0; t < n && !failures; ++t) {
    char what[64];
    snprintf(what, sizeof what, "%s: %s cached step %d", path, kind, t);
    if (native_step(q8, &c, w, p, cache, cache_floats, (size_t)t * row,
                    tokens[t], t, scratch, scratch_floats, want) != LS_OK ||
        Z_lswZ_cachedStep(&inst, (u32)tokens[t], (u32)t) != 0 ||
        !same_floats(what, env.memory.data + plan[P_LOGITS], want,
                     (size_t)c.n_vocab * 4)) {
      ++failures;
    }
    memcpy((char*)stepped + (size_t)t * V4, want, V4);
  }
  if (!failures && !same_floats("KV cache", env.memory.data + plan[P_CACHE],
                                cache, (size_t)n * row * 4)) {
    ++failures;
  }
  memcpy(env.memory.data + plan[P_TOKENS], tokens, sizeof tokens);
  if (!failures &&
      (native_infer(q8, &c, w, p, tokens, n, scratch, scratch_floats, want) !=
           LS_OK ||
       Z_lswZ_infer(&inst, (u32)n) != 0 ||
       !same_floats("full prefix", env.memory.data + plan[P_LOGITS], want,
                    (size_t)c.n_vocab * 4))) {
    ++failures;
  }
  /* Prefill over the same cache, from position 0: chunks of 1, 5 and 8
   * positions with every position's logits (n = 14 <= the 32 rows). */
  static const int chunks[] = {1, 5, 8};
  for (int k = 0, at = 0; k < 3 && !failures; at += chunks[k++]) {
    char what[64];
    snprintf(what, sizeof what, "%s: %s prefill of %d at %d", path, kind,
             chunks[k], at);
    memcpy(env.memory.data + plan[P_TOKENS], tokens + at,
           (size_t)chunks[k] * 4);
    if (Z_lswZ_prefill(&inst, (u32)chunks[k], (u32)at, 1) != 0 ||
        !same_floats(what, env.memory.data + plan[P_LOGITS],
                     (char*)stepped + (size_t)at * V4,
                     (size_t)chunks[k] * V4)) {
      ++failures;
    }
  }
  if (!failures &&
      !same_floats("KV cache after prefill", env.memory.data + plan[P_CACHE],
                   cache, (size_t)n * row * 4)) {
    ++failures;
  }
  /* A partly filled cache: positions 7 .. 13 in one call, last logits. */
  memcpy(env.memory.data + plan[P_TOKENS], tokens + 7, (size_t)(n - 7) * 4);
  if (!failures &&
      (Z_lswZ_prefill(&inst, (u32)(n - 7), 7, 0) != 0 ||
       !same_floats("prefill after 7", env.memory.data + plan[P_LOGITS],
                    (char*)stepped + (size_t)(n - 1) * V4, V4) ||
       !same_floats("KV cache after the second prefill",
                    env.memory.data + plan[P_CACHE], cache,
                    (size_t)n * row * 4))) {
    ++failures;
  }
  failures += release(&inst, &env, pages, path);
  free(stepped);
  free(cache);
  free(scratch);
  free(want);
  if (!failures) {
    printf(
        "ok   %s (%s): %d cached steps, the cache, the full prefix and the "
        "prefills equal\n",
        path, kind, n);
  }
  return failures;
}

int main(int argc, char** argv) {
  wasm_rt_init();
  Z_lsw_init_module();
  uint64_t rng = 4;
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--gpt2") == 0 && i + 1 < argc) {
      failures += check_gpt2(argv[++i]);
    } else {
      failures += check_model(argv[i], &rng);
    }
  }
  wasm_rt_free();
  return failures ? 1 : 0;
}
