/* The tiny model's forward pass (docs/arithmetic.md §4, docs/models.md).
 * This is the reference: every other implementation of the tiny models is
 * tested against these bits. */
#include "ls_tiny.h"

#include "ls_arith.h"
#include "ls_ops64.h"

/* sqrt(2) rounded to binary64: attention scores are divided by sqrt(d_head)
 * (§4.3), and for d_head = 2 that divisor is this correctly rounded root. */
#define LS_TINY_SQRT_HEAD_DIM 0x1.6a09e667f3bcdp+0

/* ACSL (docs/proofs.md): the offsets, with c = 1024 + 4 * n_ctx the end of
 * the position embeddings. */
/*@ assigns \nothing;
    behavior in_range:
      assumes 1 <= n_ctx <= LS_TINY_MAX_CTX;
      ensures \result.wte == 0 && \result.wpe == 1024;
      ensures \result.ln1_g == 1024 + 4 * n_ctx;
      ensures \result.ln1_b == 1024 + 4 * n_ctx + 4;
      ensures \result.qkv_w == 1024 + 4 * n_ctx + 8;
      ensures \result.proj_w == 1024 + 4 * n_ctx + 56;
      ensures \result.proj_b == 1024 + 4 * n_ctx + 72;
      ensures \result.ln2_g == 1024 + 4 * n_ctx + 76;
      ensures \result.ln2_b == 1024 + 4 * n_ctx + 80;
      ensures \result.fc_w == 1024 + 4 * n_ctx + 84;
      ensures \result.fc_b == 1024 + 4 * n_ctx + 116;
      ensures \result.out_w == 1024 + 4 * n_ctx + 124;
      ensures \result.out_b == 1024 + 4 * n_ctx + 156;
      ensures \result.lnf_g == 1024 + 4 * n_ctx + 160;
      ensures \result.lnf_b == 1024 + 4 * n_ctx + 164;
      ensures \result.head_w == 1024 + 4 * n_ctx + 168;
      ensures \result.head_b == 1024 + 4 * n_ctx + 1192;
      ensures \result.total == 2472 + 4 * n_ctx;
    behavior out_of_range:
      assumes n_ctx < 1 || n_ctx > LS_TINY_MAX_CTX;
      ensures \result.total == 0;
    complete behaviors;
    disjoint behaviors;
*/
ls_tiny_layout ls_tiny_layout_for(int n_ctx) {
  ls_tiny_layout L = {0};
  if (n_ctx < 1 || n_ctx > LS_TINY_MAX_CTX) return L;
  size_t o = 0;
  L.wte = o, o += LS_TINY_VOCAB * LS_TINY_EMBD;
  L.wpe = o, o += (size_t)n_ctx * LS_TINY_EMBD;
  L.ln1_g = o, o += LS_TINY_EMBD;
  L.ln1_b = o, o += LS_TINY_EMBD;
  L.qkv_w = o, o += LS_TINY_EMBD * 3 * LS_TINY_EMBD;
  L.proj_w = o, o += LS_TINY_EMBD * LS_TINY_EMBD;
  L.proj_b = o, o += LS_TINY_EMBD;
  L.ln2_g = o, o += LS_TINY_EMBD;
  L.ln2_b = o, o += LS_TINY_EMBD;
  L.fc_w = o, o += LS_TINY_EMBD * LS_TINY_FF;
  L.fc_b = o, o += LS_TINY_FF;
  L.out_w = o, o += LS_TINY_FF * LS_TINY_EMBD;
  L.out_b = o, o += LS_TINY_EMBD;
  L.lnf_g = o, o += LS_TINY_EMBD;
  L.lnf_b = o, o += LS_TINY_EMBD;
  L.head_w = o, o += LS_TINY_EMBD * LS_TINY_VOCAB;
  L.head_b = o, o += LS_TINY_VOCAB;
  L.total = o;
  return L;
}

/* Per-position activations kept for attention: the residual input x (4) and
 * q, k, v (12); plus the scores of one row and a few vectors of the last
 * position. */
enum { LS_TINY_ROW = LS_TINY_EMBD + 3 * LS_TINY_EMBD, LS_TINY_TAIL = 64 };

/*@ requires 1 <= n_ctx <= LS_TINY_MAX_CTX;
    assigns \nothing;
    ensures \result == 17 * n_ctx + 64;
*/
static size_t ls_tiny_activation_words(int n_ctx) {
  return (size_t)n_ctx * (LS_TINY_ROW + 1) + LS_TINY_TAIL;
}

/*@ assigns \nothing;
    behavior in_range:
      assumes 1 <= n_ctx <= LS_TINY_MAX_CTX;
      ensures \result == 2536 + 21 * n_ctx;
    behavior out_of_range:
      assumes n_ctx < 1 || n_ctx > LS_TINY_MAX_CTX;
      ensures \result == 0;
    complete behaviors;
    disjoint behaviors;
*/
size_t ls_tiny_scratch_words(int n_ctx) {
  ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  if (L.total == 0) return 0;
  return L.total + ls_tiny_activation_words(n_ctx);
}

/* The activations use 17 * n + 20 words of scratch: rows, scores, h, a, y
 * and f. */
/*@ requires 1 <= n_ctx <= LS_TINY_MAX_CTX && 1 <= n <= n_ctx;
    requires \valid_read(w + (0 .. 2472 + 4 * n_ctx - 1));
    requires \valid_read(tokens + (0 .. n - 1));
    requires \forall integer i; 0 <= i < n ==>
      0 <= tokens[i] < LS_TINY_VOCAB;
    requires \valid(scratch + (0 .. 17 * n_ctx + 64 - 1));
    requires \valid(logits + (0 .. LS_TINY_VOCAB - 1));
    assigns scratch[0 .. 17 * n + 19], logits[0 .. LS_TINY_VOCAB - 1];
*/
void ls_tiny_forward(const double* w, int n_ctx, const int32_t* tokens, int n,
                     double* scratch, double* logits) {
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  enum { E = LS_TINY_EMBD, HD = LS_TINY_HEAD_DIM };
  double* rows = scratch;                         /* [n][16]: x | q k v */
  double* score = rows + (size_t)n * LS_TINY_ROW; /* [n] */
  double* h = score + n;                          /* [4] normalised input */
  double* a = h + E;                              /* [4] attention output */
  double* y = a + E;                              /* [4] projection */
  double* f = y + E;                              /* [8] feed-forward hidden */

  /* §4.1-4.2: every position's embedding and q, k, v. */
  /*@ loop invariant 0 <= t <= n;
      loop assigns t, scratch[0 .. 17 * n + 19];
      loop variant n - t;
  */
  for (int t = 0; t < n; ++t) {
    double* x = rows + (size_t)t * LS_TINY_ROW;
    const double* te = w + L.wte + (size_t)tokens[t] * E;
    const double* pe = w + L.wpe + (size_t)t * E;
    /*@ loop invariant 0 <= i <= E;
        loop assigns i, x[0 .. E - 1];
        loop variant E - i;
    */
    for (int i = 0; i < E; ++i) x[i] = te[i] + pe[i];
    ls_layernorm64(x, w + L.ln1_g, w + L.ln1_b, E, h);
    ls_matvec64(h, w + L.qkv_w, 0, E, 3 * E, x + E);
  }

  /* §4.3: causal attention of the last position, head by head. */
  const int t = n - 1;
  double* x = rows + (size_t)t * LS_TINY_ROW;
  const double* q = x + E;
  /*@ loop invariant 0 <= head <= LS_TINY_HEADS;
      loop assigns head, scratch[0 .. 17 * n + 19];
      loop variant LS_TINY_HEADS - head;
  */
  for (int head = 0; head < LS_TINY_HEADS; ++head) {
    /*@ loop invariant 0 <= j <= t + 1;
        loop assigns j, score[0 .. t];
        loop variant t - j;
    */
    for (int j = 0; j <= t; ++j) {
      const double* k = rows + (size_t)j * LS_TINY_ROW + 2 * E;
      score[j] =
          ls_dot64(q + head * HD, k + head * HD, HD, 1) / LS_TINY_SQRT_HEAD_DIM;
    }
    /* In place: ls_softmax64's behavior order holds (no store score[i]
     * hits a score[k], k > i, not yet read). */
    /*@ assert sm_call: \forall integer i, k; 0 <= i < k < t + 1 ==>
          \separated(score + i, score + k); */
    ls_softmax64(score, t + 1, score);
    ls_weighted_sum64(score, rows + 3 * E + head * HD, t + 1, LS_TINY_ROW, HD,
                      a + head * HD);
  }
  ls_matvec64(a, w + L.proj_w, w + L.proj_b, E, E, y);
  /*@ loop invariant 0 <= i <= E;
      loop assigns i, x[0 .. E - 1];
      loop variant E - i;
  */
  for (int i = 0; i < E; ++i) x[i] = x[i] + y[i];

  /* §4.4: the feed-forward sub-block. */
  ls_layernorm64(x, w + L.ln2_g, w + L.ln2_b, E, h);
  ls_matvec64(h, w + L.fc_w, w + L.fc_b, E, LS_TINY_FF, f);
  /*@ loop invariant 0 <= i <= LS_TINY_FF;
      loop assigns i, f[0 .. LS_TINY_FF - 1];
      loop variant LS_TINY_FF - i;
  */
  for (int i = 0; i < LS_TINY_FF; ++i) f[i] = ls_gelu64(f[i]);
  ls_matvec64(f, w + L.out_w, w + L.out_b, LS_TINY_FF, E, y);
  /*@ loop invariant 0 <= i <= E;
      loop assigns i, x[0 .. E - 1];
      loop variant E - i;
  */
  for (int i = 0; i < E; ++i) x[i] = x[i] + y[i];

  /* §4.5: final LayerNorm and the output head. */
  ls_layernorm64(x, w + L.lnf_g, w + L.lnf_b, E, h);
  ls_matvec64(h, w + L.head_w, w + L.head_b, E, LS_TINY_VOCAB, logits);
}

/* A finite binary64 has an exponent field below all-ones: v - v is +0.0
 * for every finite v and NaN for an infinity or a NaN. */
/*@ assigns \nothing;
    ensures \result != 0 <==> \is_finite(v);
*/
static int ls_finite64(double v) { return v - v == 0.0; }

/* ACSL: v lies in [-bound, bound], stated with IEEE comparisons as the
 * code makes them (as reals, -bound <= v <= bound, the provers time out on
 * the conversions; for finite v and bound the two are the same). */
/*@ predicate ls_clipped64(double v, double bound) =
      !ls_lt64(bound, v) && !ls_lt64(v, ls_neg64(bound));
*/

/* The caller's buffers are as long as it says (a NULL pointer is an
 * error the function reports). On every error, logits keeps its words
 * when it does not overlap scratch. */
/*@ requires weights == \null || \valid_read(weights + (0 .. n_weights - 1));
    requires tokens == \null || \valid_read(tokens + (0 .. n_tokens - 1));
    requires scratch == \null || \valid(scratch + (0 .. n_scratch - 1));
    requires logits == \null || \valid(logits + (0 .. LS_TINY_VOCAB - 1));
    assigns scratch[0 .. n_scratch - 1], logits[0 .. LS_TINY_VOCAB - 1];
    behavior bad_context:
      assumes n_ctx < 1 || n_ctx > LS_TINY_MAX_CTX;
      assigns \nothing;
      ensures \result == LS_ERR_CONTEXT;
    behavior error_keeps_logits:
      assumes logits != \null && scratch != \null;
      assumes \separated(logits + (0 .. LS_TINY_VOCAB - 1),
                         scratch + (0 .. n_scratch - 1));
      ensures \result != LS_OK ==> \forall integer i;
        0 <= i < LS_TINY_VOCAB ==> ls_same64(logits[i], \old(logits[i]));
    behavior ok_is_finite:
      ensures \result == LS_OK ==> \forall integer i;
        0 <= i < LS_TINY_VOCAB ==> \is_finite(logits[i]);
    behavior clipped:
      assumes \separated(weights + (0 .. n_weights - 1),
                         scratch + (0 .. n_scratch - 1));
*/
ls_status ls_tiny_logits_checked(int n_ctx, const double* weights,
                                 size_t n_weights, const int32_t* tokens,
                                 size_t n_tokens, double bound, double* scratch,
                                 size_t n_scratch, double* logits) {
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  if (L.total == 0) return LS_ERR_CONTEXT;
  if (!weights || !logits || !scratch || (n_tokens && !tokens))
    return LS_ERR_NULL;
  if (n_weights != L.total) return LS_ERR_WEIGHT_COUNT;
  /* Written so that NaN fails: every comparison with NaN is false. */
  if (!(bound >= 0.0 && bound <= 10.0)) return LS_ERR_BOUND;
  if (n_tokens == 0) return LS_ERR_EMPTY_SEQUENCE;
  if (n_tokens > (size_t)n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
  /*@ loop invariant 0 <= i <= n_tokens;
      loop invariant \forall integer j; 0 <= j < i ==>
        0 <= tokens[j] < LS_TINY_VOCAB;
      loop assigns i;
      loop variant n_tokens - i;
  */
  for (size_t i = 0; i < n_tokens; ++i) {
    if (tokens[i] < 0 || tokens[i] >= LS_TINY_VOCAB) return LS_ERR_TOKEN;
  }
  if (n_scratch < ls_tiny_scratch_words(n_ctx)) return LS_ERR_SCRATCH;
  /*@ loop invariant 0 <= i <= L.total;
      for clipped: loop invariant w_fin: \forall integer j; 0 <= j < i ==>
        \is_finite(weights[j]);
      loop assigns i;
      loop variant L.total - i;
  */
  for (size_t i = 0; i < L.total; ++i) {
    if (!ls_finite64(weights[i])) return LS_ERR_WEIGHT_NONFINITE;
  }
  /* Clip into scratch (§4.0): the caller's weights are never modified. */
  double* w = scratch;
  /* The forward pass reads only finite weights in [-bound, bound]
   * (behavior clipped: assertion clip). */
  /*@ loop invariant 0 <= i <= L.total;
      for clipped: loop invariant w_clip: \forall integer j; 0 <= j < i ==>
        \is_finite(w[j]) && ls_clipped64(w[j], bound);
      for clipped: loop invariant w_fin2: \forall integer j;
        0 <= j < L.total ==> \is_finite(weights[j]);
      loop assigns i, w[0 .. L.total - 1];
      loop variant L.total - i;
  */
  for (size_t i = 0; i < L.total; ++i) {
    double v = weights[i];
    w[i] = v > bound ? bound : (v < -bound ? -bound : v);
  }
  /*@ for clipped: assert clip: \forall integer j; 0 <= j < L.total ==>
        \is_finite(w[j]) && ls_clipped64(w[j], bound); */
  double out[LS_TINY_VOCAB];
  ls_tiny_forward(w, n_ctx, tokens, (int)n_tokens, scratch + L.total, out);
  /*@ loop invariant 0 <= i <= LS_TINY_VOCAB;
      loop invariant out_fin: \forall integer j; 0 <= j < i ==>
        \is_finite(out[j]);
      loop assigns i;
      loop variant LS_TINY_VOCAB - i;
  */
  for (int i = 0; i < LS_TINY_VOCAB; ++i) {
    if (!ls_finite64(out[i])) return LS_ERR_OUTPUT_NONFINITE;
  }
  /*@ loop invariant 0 <= i <= LS_TINY_VOCAB;
      loop invariant logits_fin: \forall integer j; 0 <= j < i ==>
        \is_finite(logits[j]);
      loop invariant out_fin2: \forall integer j; 0 <= j < LS_TINY_VOCAB ==>
        \is_finite(out[j]);
      loop assigns i, logits[0 .. LS_TINY_VOCAB - 1];
      loop variant LS_TINY_VOCAB - i;
  */
  for (int i = 0; i < LS_TINY_VOCAB; ++i) logits[i] = out[i];
  return LS_OK;
}
