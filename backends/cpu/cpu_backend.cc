// The fast CPU forward: core/ls_gpt2.c's forward reorganised for speed,
// with the same operations on the same operands.
//  - The full pass runs layer by layer over all positions, as the
//    reference does, but batches every matrix product over the positions
//    (the attention of position t reads only positions <= t, and the block
//    tail of position t reads only position t, so their order is free).
//  - The cached step is one position, its keys and values read from and
//    appended to the caller's cache.
//  - LayerNorm, residuals and embeddings call or mirror the core; matrix
//    products, the output head, GELU and attention come from the kernel
//    table (cpu/kernels.h) of the ISA chosen at creation.
//  - Every matrix is read through a copy repacked at creation into panels
//    of 128 columns (below), so that a product streams memory linearly.
// The team of threads runs a whole pass as one job, with a barrier after
// each matrix product and after attention. Within a phase the members
// claim units of work (column tiles, heads) from a shared counter, so a
// member that is slower (memory is not shared evenly, the OS preempts one)
// simply does fewer. A unit is a set of whole outputs, or, when a decode
// product has fewer panels than the team needs, whole §2.1 blocks of a
// panel's outputs (split K), whose 16 block sums one member then combines
// by the §2.1 tree in its fixed order: every output's operations are the
// reference's, so the result does not depend on the thread count or on
// who computed what.
#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/q8_kernels.h"
#include "backends/cpu/thread_pool.h"
#include "backends/prefill_args.h"
#include "lockstep/error.h"
#include "lockstep/huge_floats.h"
#include "ls_gpt2_layout.h"
#include "ls_gpt2_q8.h"
#include "ls_ops32.h"

namespace lockstep::backends {
namespace {

using cpu::CpuKernels;

// The largest team a backend makes (the default is every core).
constexpr int kMaxThreads = 256;

// What an int8 projection writes for a position whose input is not finite:
// the default quiet NaN, 0x7FC00000 (core/ls_gpt2_q8.c's).
const float kQuietNaN = __builtin_bit_cast(float, 0x7FC00000u);

// [begin, end) of member m's share of n items (LayerNorm over positions).
struct Range {
  int begin, end;
};
Range share(int n, int m, int members) {
  const int chunk = (n + members - 1) / members;
  const int b = std::min(n, m * chunk);
  return {b, std::min(n, b + chunk)};
}

// Every matrix is read through a copy made at creation: the columns of an
// input-major W [K, N] cut into panels of kPanel = 64, panel p holding
// W[k][64p + j] at p*K*64 + k*pw + j (pw = the panel's width, 64 but for
// the last). A panel is then a small input-major matrix with contiguous
// rows, read linearly: the cached step takes two panels at a time (two
// streams, 8 AVX-512 accumulators), a batch of positions one panel at a
// time (4 x 6 tile). Measured with two threads (docs/cpu-backend.md): W in
// place (512 bytes of each 9-12 KB row per tile) ran at 0.80-0.86 of a
// streaming read, the panels at 0.98-1.04; for batches, 64-wide panels
// keep a K = 3072 panel (768 KB) in L2, 128-wide ones halved the speed.
// The output head, logits = h . wte^T, is the same with W = wte^T (in
// place, 16 rows transposed in registers per 16 x 16 tile ran at 0.71 of
// a streaming read). The arithmetic is untouched: each output's k order is
// the same.
constexpr int kPanel = 64;
static_assert(kPanel == LS_GPT2_PANEL, "the PANEL64 layout is read in place");

size_t panels(int n) { return (size_t(n) + kPanel - 1) / kPanel; }

// The batched attention (full pass and prefill) takes the queries of one
// head kAttnRows at a time; a member's score rows hold that many rows of
// every key (and the cached step's n_head rows).
constexpr int kAttnRows = 12;
size_t round16(size_t n) { return (n + 15) / 16 * 16; }
size_t score_floats(const ls_gpt2_config& c) {
  return round16(size_t(std::max(c.n_head, kAttnRows)) *
                 round16(size_t(c.n_ctx)));
}

// Panels whose K a decode product may split (those of the block
// matrices; never the head's): the widest, c_fc's.
size_t split_panels(const ls_gpt2_config& c) { return panels(4 * c.n_embd); }

// Floats of one layer's repacked matrices (c_attn, c_proj, c_fc, MLP
// c_proj: 12 C^2) and their offsets in it.
size_t layer_floats(size_t C) { return 12 * C * C; }
struct LayerPanels {
  size_t attn, proj, fc, out;
};
LayerPanels layer_panels(size_t C) {
  return {0, 3 * C * C, 4 * C * C, 8 * C * C};
}

// Floats of one position's quantized input of width up to 4C: 4C int8
// levels (C floats), then 4C / 64 binary32 scales, on a 64-byte line.
size_t q8_row_floats(size_t C) { return (C + C / 16 + 15) / 16 * 16; }

// The memory of one backend, in floats: for P positions the residual
// stream X, LayerNorm output H, q|k|v, attention output A, MLP hidden F and
// projection output Y; per member a private residual stream and LayerNorm
// output for the cached step and a score row of n_ctx per head; the
// repacked matrices of every layer and the repacked head.
struct Layout {
  size_t x, h, qkv, a, f, y, xm, hm, score, part, blocks, head, qm, qx, total;
};
// in_place: the weights are already PANEL64 (core/ls_gpt2_layout.h) and
// are read where they are, so no repacked copy is allocated.
Layout layout(const ls_gpt2_config& c, int positions, int members,
              bool in_place, bool q8) {
  const size_t C = size_t(c.n_embd), P = size_t(positions);
  const size_t M = size_t(members);
  // Each buffer starts on a 64-byte line.
  auto round = [](size_t n) { return (n + 15) / 16 * 16; };
  Layout l{};
  size_t o = 0;
  l.x = o, o += round(P * C);
  l.h = o, o += round(P * C);
  l.qkv = o, o += round(P * 3 * C);
  l.a = o, o += round(P * C);
  l.f = o, o += round(P * 4 * C);
  l.y = o, o += round(P * C);
  l.xm = o, o += M * round(C);
  l.hm = o, o += M * round(C);
  l.score = o, o += M * score_floats(c);
  // Split K (several members): 16 block sums of 64 outputs per panel of
  // the widest block matrix (c_fc, 4C columns).
  l.part = o, o += M > 1 ? split_panels(c) * 16 * kPanel : 0;
  l.blocks = o, o += in_place ? 0 : size_t(c.n_layer) * layer_floats(C);
  l.head = o, o += in_place ? 0 : size_t(c.n_vocab) * C;
  // int8 (q8): the quantized projection inputs (§7.2), at most 4C levels
  // and 4C / 64 scales a position: per member for one position (the
  // step), and for P positions (a batch).
  l.qm = o, o += q8 ? M * q8_row_floats(C) : 0;
  l.qx = o, o += q8 ? P * q8_row_floats(C) : 0;
  l.total = o;
  return l;
}

// The one allocation: the layout in 2 MB pages.
size_t allocation_bytes(const Layout& l) {
  return HugeFloats::bytes_for(l.total);
}

int positions_for(const ls_gpt2_config& c, int max_prefix) {
  return max_prefix > 0 ? std::min(max_prefix, c.n_ctx) : c.n_ctx;
}

class CpuBackend final : public Gpt2Backend {
 public:
  // Binary32 weights w (q8 null), or grouped int8 weights q8 (w null,
  // qk their kernels; read in place).
  CpuBackend(const ls_gpt2_config& c, const float* w, const uint8_t* q8,
             const CpuKernels& k, const cpu::CpuQ8Kernels* qk, int threads,
             int max_prefix, bool in_place)
      : c_(c),
        w_(w),
        q8_(q8),
        k_(k),
        qk_(qk),
        in_place_(in_place || q8),
        pool_(threads),
        positions_(positions_for(c, max_prefix)),
        lay_(layout(c, positions_, pool_.size(), in_place_, q8 != nullptr)),
        bad_(size_t(positions_), 0),
        counters_(new std::atomic<int>[size_t(kPerLayer * c.n_layer + 1)]),
        panel_done_(new std::atomic<int>[split_panels(c)]),
        // On 2 MB pages: the repacked matrices (494 MB for 124M) are
        // streamed once per token.
        buf_(lay_.total) {
    for (size_t i = 0; i < split_panels(c); ++i) panel_done_[i].store(0);
    if (!in_place_) repack_all();
    for (int l = 0; l < c.n_layer; ++l) params_.push_back(layer_params(l));
    const size_t C = size_t(c.n_embd);
    if (q8_) {
      lnf_g_ = reinterpret_cast<const float*>(q8_ + ls_gpt2_q8_lnf_offset(&c));
    } else {
      lnf_g_ = w_ + ls_gpt2_lnf_offset(&c);
    }
    lnf_b_ = lnf_g_ + C;
  }

  std::string name() const override {
    std::string n =
        std::string("cpu-") + k_.isa + " x" + std::to_string(pool_.size());
    return q8_ ? n + " (int8: " + qk_->isa + ")" : n;
  }
  size_t extra_memory_bytes() const override { return allocation_bytes(lay_); }

  // The full pass's tensors as they stand after its barriers (observe).
  bool set_observer(ls_gpt2_observer observer, void* user) override {
    obs_ = observer;
    obs_user_ = user;
    return true;
  }

  ls_status step(float* cache, size_t cache_capacity, size_t cache_len,
                 int32_t token, int32_t position, float* logits) override {
    // The checks and their order of ls_gpt2_step.
    if (!cache || !logits) return LS_ERR_NULL;
    if (token < 0 || token >= c_.n_vocab) return LS_ERR_TOKEN;
    if (position < 0 || position >= c_.n_ctx) return LS_ERR_POSITION;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    if (cache_len != size_t(position) * row ||
        cache_capacity < cache_len + row) {
      return LS_ERR_CACHE_LENGTH;
    }
    Pass p{&token, 1, position, cache, logits, false};
    return run(p);
  }

  ls_status prefill(float* cache, size_t cache_capacity, size_t cache_len,
                    const int32_t* tokens, int n, int32_t position,
                    bool all_positions, float* logits) override {
    // The checks and their order of ls_gpt2_prefill.
    const ls_status bad =
        check_prefill_args(c_, cache, cache_capacity, cache_len, tokens, n,
                           position, logits, positions_);
    if (bad != LS_OK) return bad;
    // One position is the cached step (the same operations either way).
    // Observed, one position goes through the full pass too (observe).
    const bool all = (n > 1 || obs_) && all_positions;
    Pass p{tokens, n, position, cache, logits, all};
    return run(p);
  }

  ls_status infer(const int32_t* tokens, int n, float* logits) override {
    // The checks and their order of ls_gpt2_infer.
    if (!logits || (n > 0 && !tokens)) return LS_ERR_NULL;
    if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
    if (n > c_.n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
    for (int t = 0; t < n; ++t) {
      if (tokens[t] < 0 || tokens[t] >= c_.n_vocab) return LS_ERR_TOKEN;
    }
    if (n > positions_) return LS_ERR_SCRATCH;
    Pass p{tokens, n, 0, nullptr, logits, false};
    return run(p);
  }

 private:
  // Work counters per layer: the four matrix products and attention.
  static constexpr int kPerLayer = 7;
  // Split K aims at this many units per member in a decode product.
  static constexpr int kSplitUnitsPerMember = 4;
  enum Phase {
    kAttnIn = 0,
    kAttend = 1,
    kProj = 2,
    kFc = 3,
    kOut = 4,
    kAttendRows = 5,   // the step's split attention: its softmax units
    kAttendValues = 6  // and its weighted-sum units
  };

  // One forward pass: n positions starting at `first`. With a cache (the
  // step, n = 1, and the prefill) keys and values are appended to it and
  // attention reads it; without one (the full pass) attention reads this
  // pass's q|k|v. all: logits for every position (n * n_vocab).
  struct Pass {
    const int32_t* tokens;
    int n;
    int first;
    float* cache;
    float* logits;
    bool all;
  };

  ls_status run(Pass& p) {
    for (int i = 0; i < kPerLayer * c_.n_layer + 1; ++i) {
      counters_[size_t(i)].store(0, std::memory_order_relaxed);
    }
    auto job = [this, &p](int m, int members) {
      if (p.cache && p.n == 1 && !obs_) {
        step_pass(p, m);
      } else {
        full_pass(p, m, members);
      }
      if (p.all) {
        head_all(p, m, members);
      } else {
        head(p, m);
      }
    };
    nonfinite_.store(false, std::memory_order_relaxed);
    pool_.run(job);
    return nonfinite_.load(std::memory_order_relaxed) ? LS_ERR_OUTPUT_NONFINITE
                                                      : LS_OK;
  }

  std::atomic<int>& counter(int layer, Phase ph) {
    return counters_[size_t(layer * kPerLayer + ph)];
  }

  // The buffers both passes use: q|k|v, attention output, MLP hidden,
  // projection output, and member m's score rows.
  struct Shared {
    float *qkv, *a, *f, *y, *score;
  };
  Shared shared(int m) {
    float* buf = buf_.data();
    return {buf + lay_.qkv, buf + lay_.a, buf + lay_.f, buf + lay_.y,
            buf + lay_.score + size_t(m) * score_floats(c_)};
  }

  // The cached step. The short serial parts (embedding, residuals,
  // LayerNorm) are computed by every member into its own x and h, the same
  // operations on the same operands, so no barrier is needed around them.
  void step_pass(Pass& p, int m) {
    const ls_gpt2_config& c = c_;
    const int C = c.n_embd, D = C / c.n_head;
    const size_t Cs = size_t(C);
    float* buf = buf_.data();
    float* x = buf + lay_.xm + size_t(m) * lay_stride_c();
    float* h = buf + lay_.hm + size_t(m) * lay_stride_c();
    auto [QKV, A, F, Y, score] = shared(m);
    const size_t row = ls_gpt2_cache_row_floats(&c);
    const float scale = __builtin_sqrtf(float(D));

    embed(p.tokens[0], p.first, x);
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerParams& b = params_[size_t(l)];
      if (l > 0) residual(x, Y, C);
      ls_layernorm32(x, b.ln1_g, b.ln1_b, C, h);
      project(l, kAttnIn, h, Cs, 1, QKV, 3 * Cs, m);
      pool_.barrier();
      if (split_attention(p.first + 1)) {
        attend_split(p, l, QKV, scale, A);
      } else {
        float* keys = p.cache + size_t(l) * 2 * Cs;
        for (int u; (u = counter(l, kAttend).fetch_add(1)) < head_units();) {
          const int h0 = u * head_group(),
                    h1 = std::min(c.n_head, h0 + head_group());
          const size_t o0 = size_t(h0) * size_t(D), o1 = size_t(h1) * size_t(D);
          append_kv(p, l, QKV, o0, o1);
          k_.attend(QKV + o0, keys + o0, keys + Cs + o0, row, D, h1 - h0,
                    p.first + 1, scale, score, A + o0);
        }
      }
      pool_.barrier();
      project(l, kProj, A, Cs, 1, Y, Cs, m);
      pool_.barrier();
      residual(x, Y, C);
      ls_layernorm32(x, b.ln2_g, b.ln2_b, C, h);
      project(l, kFc, h, Cs, 1, F, 4 * Cs, m);
      pool_.barrier();
      project(l, kOut, F, 4 * Cs, 1, Y, Cs, m);
      pool_.barrier();
    }
    residual(x, Y, C);
    ls_layernorm32(x, lnf_g_, lnf_b_, C, h);
  }

  // With an observer (set_observer): member 0 hands it the n rows of
  // `width` floats at `rows` (one call per position), then every member
  // meets at a barrier, so nothing is overwritten while it reads. Called by
  // every member at the same points of the full pass, right after one of
  // its barriers, where the tensor is whole. Without one: nothing.
  void observe(int m, const Pass& p, int layer, ls_gpt2_tap tap,
               const float* rows, size_t width) {
    if (!obs_) return;
    if (m == 0) {
      for (int t = 0; t < p.n; ++t) {
        obs_(obs_user_, layer, tap, p.first + t, -1, rows + size_t(t) * width,
             width);
      }
    }
    pool_.barrier();
  }

  // The full pass over n positions, layer by layer (the full-prefix pass,
  // and the prefill, which also appends keys and values to the cache and
  // attends to it). LayerNorm and the residuals are split by positions (a
  // barrier after each).
  void full_pass(Pass& p, int m, int M) {
    const ls_gpt2_config& c = c_;
    const int C = c.n_embd, n = p.n;
    const size_t Cs = size_t(C);
    float* X = buf_.data() + lay_.x;
    float* Hn = buf_.data() + lay_.h;
    auto [QKV, A, F, Y, score] = shared(m);
    const Range pos = share(n, m, M);

    for (int t = pos.begin; t < pos.end; ++t) {
      embed(p.tokens[t], p.first + t, X + size_t(t) * Cs);
    }
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerParams& b = params_[size_t(l)];
      for (int t = pos.begin; t < pos.end; ++t) {
        float* x = X + size_t(t) * Cs;
        if (l > 0) residual(x, Y + size_t(t) * Cs, C);
        ls_layernorm32(x, b.ln1_g, b.ln1_b, C, Hn + size_t(t) * Cs);
      }
      pool_.barrier();
      // X: the embedding, or the previous layer's second residual.
      observe(m, p, l - 1, l == 0 ? LS_TAP_EMBED : LS_TAP_RES2, X, Cs);
      observe(m, p, l, LS_TAP_LN1, Hn, Cs);
      project(l, kAttnIn, Hn, Cs, n, QKV, 3 * Cs, m);
      pool_.barrier();
      observe(m, p, l, LS_TAP_QKV, QKV, 3 * Cs);
      attention(p, l, m);
      pool_.barrier();
      observe(m, p, l, LS_TAP_ATT_OUT, A, Cs);
      project(l, kProj, A, Cs, n, Y, Cs, m);
      pool_.barrier();
      observe(m, p, l, LS_TAP_PROJ, Y, Cs);
      for (int t = pos.begin; t < pos.end; ++t) {
        float* x = X + size_t(t) * Cs;
        residual(x, Y + size_t(t) * Cs, C);
        ls_layernorm32(x, b.ln2_g, b.ln2_b, C, Hn + size_t(t) * Cs);
      }
      pool_.barrier();
      observe(m, p, l, LS_TAP_RES1, X, Cs);
      observe(m, p, l, LS_TAP_LN2, Hn, Cs);
      project(l, kFc, Hn, Cs, n, F, 4 * Cs, m);
      pool_.barrier();
      // c_fc's GELU is applied in the product (F holds GELU(fc)).
      observe(m, p, l, LS_TAP_GELU, F, 4 * Cs);
      project(l, kOut, F, 4 * Cs, n, Y, Cs, m);
      pool_.barrier();
      observe(m, p, l, LS_TAP_MLP_OUT, Y, Cs);
    }
    if (p.all) {
      // Every position's second residual and ln_f, into Hn (split by
      // positions; head_all waits at a barrier).
      for (int t = pos.begin; t < pos.end; ++t) {
        float* x = X + size_t(t) * Cs;
        residual(x, Y + size_t(t) * Cs, C);
        ls_layernorm32(x, lnf_g_, lnf_b_, C, Hn + size_t(t) * Cs);
      }
      return;
    }
    // The last position's second residual and ln_f, into this member's h
    // (every member, as in the step, so the head needs no barrier).
    float* h = buf_.data() + lay_.hm + size_t(m) * lay_stride_c();
    float* x = buf_.data() + lay_.xm + size_t(m) * lay_stride_c();
    std::copy(X + size_t(n - 1) * Cs, X + size_t(n) * Cs, x);
    residual(x, Y + size_t(n - 1) * Cs, C);
    ls_layernorm32(x, lnf_g_, lnf_b_, C, h);
  }

  // The batched attention: per head, the keys of positions 0 .. first + n
  // - 1 transposed once into scratch (key j's element d at kt[d*kts + j])
  // and their values copied into one contiguous [N, D] block (a cache row
  // is a whole layer stack apart: 72 KB for 124M), then units of
  // kAttnRows consecutive queries of one head (k_.attend_rows: a tile of
  // queries x a tile of keys per register tile, each score, softmax and
  // weighted sum in its one order). The scratch is the MLP hidden and
  // projection buffers F and Y (5 P C floats, free between the q|k|v
  // product and c_proj); the values are read in place when only the keys
  // fit there, and false, with nothing done, when not even they do (a
  // prefill far into a cache with a small max_prefix) or the table has no
  // attend_rows.
  bool attend_batched(Pass& p, int l, int m) {
    const ls_gpt2_config& c = c_;
    const int C = c.n_embd, n = p.n, D = C / c.n_head, H = c.n_head;
    const size_t Cs = size_t(C), N = size_t(p.first) + size_t(n);
    const size_t kts = round16(N);
    const size_t room = lay_.y + round16(size_t(positions_) * Cs) - lay_.f;
    if (!k_.attend_rows || kts * Cs > room) return false;
    auto [QKV, A, F, Y, score] = shared(m);
    (void)Y;
    float* KT = F;  // head h's transposed keys at KT + h*D*kts
    // Head h's values at VC + h*N*D, value j at + j*D, when they fit.
    float* VC = 2 * kts * Cs <= room ? F + kts * Cs : nullptr;
    const size_t row = ls_gpt2_cache_row_floats(&c);
    float* keys = p.cache ? p.cache + size_t(l) * 2 * Cs : QKV + Cs;
    const size_t ks = p.cache ? row : 3 * Cs;  // key j at keys + j*ks
    // 1. Units of head groups: this call's keys and values of those heads
    // into the cache, then each head's keys transposed, 16 keys at a time
    // (columns past the last key: +0.0).
    for (int u; (u = counter(l, kAttend).fetch_add(1)) < head_units();) {
      const int h0 = u * head_group(), h1 = std::min(H, h0 + head_group());
      const size_t o0 = size_t(h0) * size_t(D), o1 = size_t(h1) * size_t(D);
      if (p.cache) append_kv(p, l, QKV, o0, o1);
      for (int h = h0; h < h1; ++h) {
        float* kt = KT + size_t(h) * size_t(D) * kts;
        const float* kh = keys + size_t(h) * size_t(D);
        for (size_t j0 = 0; j0 < kts; j0 += 16) {
          const size_t jn = std::min<size_t>(16, N > j0 ? N - j0 : 0);
          for (size_t d = 0; d < size_t(D); ++d) {
            float* dst = kt + d * kts + j0;
            for (size_t j = 0; j < jn; ++j) dst[j] = kh[(j0 + j) * ks + d];
            for (size_t j = jn; j < 16; ++j) dst[j] = 0.0f;
          }
        }
        if (VC) {
          float* vc = VC + size_t(h) * N * size_t(D);
          for (size_t j = 0; j < N; ++j) {
            std::copy(kh + j * ks + Cs, kh + j * ks + Cs + D, vc + j * D);
          }
        }
      }
    }
    pool_.barrier();
    // 2. Units of kAttnRows queries of one head: head by head, each head's
    // last (longest) rows first, so that the phase ends on short units.
    const int rows = int(std::min<size_t>(kAttnRows, score_floats(c) / kts));
    const int chunks = (n + rows - 1) / rows;
    const float scale = __builtin_sqrtf(float(D));
    const float* values = keys + Cs;  // value j of head h at + j*ks + h*D
    for (int u; (u = counter(l, kAttendRows).fetch_add(1)) < H * chunks;) {
      const int h = u / chunks, ch = chunks - 1 - u % chunks;
      const int t0 = ch * rows, t1 = std::min(n, t0 + rows);
      const size_t o = size_t(h) * size_t(D);
      const float* vh = VC ? VC + size_t(h) * N * size_t(D) : values + o;
      k_.attend_rows(QKV + size_t(t0) * 3 * Cs + o, 3 * Cs, t1 - t0,
                     p.first + t0 + 1, KT + o * kts, kts, vh,
                     VC ? size_t(D) : ks, D, scale, score,
                     A + size_t(t0) * Cs + o, Cs);
    }
    return true;
  }

  // The cached step's attention splits one query's work finer than head
  // groups when more members than head groups would otherwise idle through
  // a long context (the keys of 1,000 positions are 3 MB a layer): k_ has
  // the parts, the heads are 64 wide, there are more than two members and
  // at least kSplitAttendFrom keys. $LOCKSTEP_NO_SPLIT_ATTEND turns it off
  // (for benchmarks; the bits are the same either way).
  static constexpr int kSplitAttendFrom = 128, kKeyChunk = 64;
  bool split_attention(int n) const {
    return !no_split_attend_ && k_.attend_scores && pool_.size() > 2 &&
           n >= kSplitAttendFrom && c_.n_embd == 64 * c_.n_head;
  }

  // attend_split: k_.attend's operations for one query in three phases
  // with a barrier between them: the scores by head and range of
  // kKeyChunk keys (the unit holding the newest key appends the head's key
  // and value first), the softmax by head, the weighted sums by head and
  // vector of value elements. Scores go to member 0's score rows (n_head x
  // n_ctx floats). Ends before the caller's barrier.
  void attend_split(const Pass& p, int l, const float* QKV, float scale,
                    float* A) {
    const int H = c_.n_head, D = 64, n = p.first + 1, W = k_.lanes;
    const size_t Cs = size_t(c_.n_embd), sn = round16(size_t(c_.n_ctx));
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    const float* keys = p.cache + size_t(l) * 2 * Cs;
    float* s = buf_.data() + lay_.score;
    const int chunks = (n + kKeyChunk - 1) / kKeyChunk;
    for (int u; (u = counter(l, kAttend).fetch_add(1)) < H * chunks;) {
      const int h = u / chunks, j0 = (u % chunks) * kKeyChunk;
      const int j1 = std::min(n, j0 + kKeyChunk);
      const size_t o = size_t(h) * D;
      if (j1 == n) append_kv(p, l, QKV, o, o + D);
      k_.attend_scores(QKV + o, keys + o, row, D, 1, j0, j1, scale,
                       s + size_t(h) * sn, sn);
    }
    pool_.barrier();
    for (int h; (h = counter(l, kAttendRows).fetch_add(1)) < H;) {
      k_.softmax(s + size_t(h) * sn, n);
    }
    pool_.barrier();
    const int vecs = D / W;
    for (int u; (u = counter(l, kAttendValues).fetch_add(1)) < H * vecs;) {
      const size_t e = size_t(u / vecs) * D + size_t(u % vecs) * size_t(W);
      k_.attend_values_vec(s + size_t(u / vecs) * sn, keys + Cs + e, row, n,
                           A + e);
    }
  }

  // The keys and values of columns [o0, o1) (whole heads) of this call's
  // n positions, from q|k|v into the cache rows p.first .. p.first+n-1 of
  // layer l.
  void append_kv(const Pass& p, int l, const float* QKV, size_t o0,
                 size_t o1) const {
    const size_t Cs = size_t(c_.n_embd);
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    float* keys = p.cache + size_t(l) * 2 * Cs;
    for (int t = 0; t < p.n; ++t) {
      float* kv = keys + size_t(p.first + t) * row;
      const float* src = QKV + size_t(t) * 3 * Cs;
      for (size_t i = o0; i < o1; ++i) {
        kv[i] = src[Cs + i];
        kv[Cs + i] = src[2 * Cs + i];
      }
    }
  }

  // §6 attention of the n positions of layer l (full pass and prefill),
  // after the q|k|v product: with a cache, this call's keys and values are
  // appended to it first. The batched path (attend_batched) when its
  // scratch fits; else every position by itself (k_.attend), in units of
  // head groups.
  void attention(Pass& p, int l, int m) {
    if (attend_batched(p, l, m)) return;
    const ls_gpt2_config& c = c_;
    const int C = c.n_embd, n = p.n, D = C / c.n_head;
    const size_t Cs = size_t(C);
    auto [QKV, A, F, Y, score] = shared(m);
    (void)F, (void)Y;
    const float scale = __builtin_sqrtf(float(D));
    const size_t row = ls_gpt2_cache_row_floats(&c);
    for (int u; (u = counter(l, kAttend).fetch_add(1)) < head_units();) {
      const int h0 = u * head_group(),
                h1 = std::min(c.n_head, h0 + head_group());
      const size_t o0 = size_t(h0) * size_t(D), o1 = size_t(h1) * size_t(D);
      if (!p.cache) {
        for (int t = 0; t < n; ++t) {
          k_.attend(QKV + size_t(t) * 3 * Cs + o0, QKV + Cs + o0,
                    QKV + 2 * Cs + o0, 3 * Cs, D, h1 - h0, t + 1, scale, score,
                    A + size_t(t) * Cs + o0);
        }
        continue;
      }
      // These heads' keys and values of the n positions into the cache,
      // then each position attends to the rows up to its own.
      float* keys = p.cache + size_t(l) * 2 * Cs;
      append_kv(p, l, QKV, o0, o1);
      for (int t = 0; t < n; ++t) {
        k_.attend(QKV + size_t(t) * 3 * Cs + o0, keys + o0, keys + Cs + o0, row,
                  D, h1 - h0, p.first + t + 1, scale, score,
                  A + size_t(t) * Cs + o0);
      }
    }
  }

  // §6 logits = h . wte^T from this member's h: the product with the
  // repacked head (no bias), then the finiteness check of ls_gpt2_step.
  void head(Pass& p, int m) {
    const ls_gpt2_config& c = c_;
    const float* h = buf_.data() + lay_.hm + size_t(m) * lay_stride_c();
    std::atomic<int>& next = counters_[size_t(kPerLayer * c.n_layer)];
    float* logits = p.logits;
    bool nonfinite = false;
    auto check = [&](int o0, int width) {
      for (int v = o0; v < o0 + width; ++v) {
        if (!(logits[v] - logits[v] == 0.0f)) nonfinite = true;
      }
    };
    if (q8_) {  // §7.4: the int8 head wte^T [C, V] at the weights' start
      q8_product(next, q8_, nullptr, c.n_embd, c.n_vocab, h, 0, 1, logits, 0,
                 false, m, check);
    } else {
      matvec(next, h, head_panels(), nullptr, c.n_embd, c.n_vocab, logits,
             check);
    }
    if (nonfinite) nonfinite_.store(true, std::memory_order_relaxed);
  }

  // Every position's logits (p.all): the head over the n rows of Hn, as a
  // batch product, then the finiteness check of each unit's outputs.
  void head_all(Pass& p, int m, int members) {
    (void)members;
    const ls_gpt2_config& c = c_;
    pool_.barrier();
    const size_t V = size_t(c.n_vocab);
    // full_pass left the last layer's second residual in X and ln_f in Hn.
    observe(m, p, c.n_layer - 1, LS_TAP_RES2, buf_.data() + lay_.x,
            size_t(c.n_embd));
    observe(m, p, c.n_layer, LS_TAP_LNF, buf_.data() + lay_.h,
            size_t(c.n_embd));
    std::atomic<int>& next = counters_[size_t(kPerLayer * c.n_layer)];
    if (q8_) {
      q8_product(next, q8_, nullptr, c.n_embd, c.n_vocab, buf_.data() + lay_.h,
                 size_t(c.n_embd), p.n, p.logits, V, false, m, [](int, int) {});
    } else {
      matmul(next, buf_.data() + lay_.h, size_t(c.n_embd), p.n, head_panels(),
             nullptr, c.n_embd, c.n_vocab, p.logits, V, false);
    }
    pool_.barrier();
    observe(m, p, c.n_layer, LS_TAP_LOGITS, p.logits, V);
    const Range r = share(p.n, m, pool_.size());
    bool nonfinite = false;
    for (size_t i = size_t(r.begin) * V; i < size_t(r.end) * V; ++i) {
      if (!(p.logits[i] - p.logits[i] == 0.0f)) nonfinite = true;
    }
    if (nonfinite) nonfinite_.store(true, std::memory_order_relaxed);
  }

  // A block's LayerNorm parameters and biases (binary32 in both formats).
  struct LayerParams {
    const float *ln1_g, *ln1_b, *attn_b, *proj_b, *ln2_g, *ln2_b, *fc_b, *out_b;
    // int8: the four quantized matrices (c_attn, attn.c_proj, c_fc,
    // mlp.c_proj), else null.
    const uint8_t *q_attn = nullptr, *q_proj = nullptr, *q_fc = nullptr,
                  *q_out = nullptr;
  };
  LayerParams layer_params(int l) const {
    if (q8_) {
      const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c_, l);
      auto f = [this](size_t at) {
        return reinterpret_cast<const float*>(q8_ + at);
      };
      return {f(b.ln1_g),     f(b.ln1_b),     f(b.attn_b),  f(b.proj_b),
              f(b.ln2_g),     f(b.ln2_b),     f(b.fc_b),    f(b.out_b),
              q8_ + b.attn_w, q8_ + b.proj_w, q8_ + b.fc_w, q8_ + b.out_w};
    }
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
    return {w_ + b.ln1_g, w_ + b.ln1_b, w_ + b.attn_b, w_ + b.proj_b,
            w_ + b.ln2_g, w_ + b.ln2_b, w_ + b.fc_b,   w_ + b.out_b};
  }

  // Projection `ph` (kAttnIn, kProj, kFc, kOut) of layer l on n positions:
  // y = x . W + b, with §3.3 GELU after c_fc; binary32 or int8.
  void project(int l, Phase ph, const float* x, size_t xs, int n, float* y,
               size_t ys, int m) {
    const int C = c_.n_embd;
    const LayerParams& b = params_[size_t(l)];
    const int K = ph == kOut ? 4 * C : C;
    const int N = ph == kAttnIn ? 3 * C : ph == kFc ? 4 * C : C;
    const float* bias = ph == kAttnIn ? b.attn_b
                        : ph == kProj ? b.proj_b
                        : ph == kFc   ? b.fc_b
                                      : b.out_b;
    const bool gelu = ph == kFc;
    if (q8_) {
      const uint8_t* mat = ph == kAttnIn ? b.q_attn
                           : ph == kProj ? b.q_proj
                           : ph == kFc   ? b.q_fc
                                         : b.q_out;
      q8_product(counter(l, ph), mat, bias, K, N, x, xs, n, y, ys, gelu, m,
                 [](int, int) {});
      return;
    }
    const Mats P = mats(l);
    const float* w = ph == kAttnIn ? P.attn
                     : ph == kProj ? P.proj
                     : ph == kFc   ? P.fc
                                   : P.out;
    matmul(counter(l, ph), x, xs, n, w, bias, K, N, y, ys, gelu);
  }

  // §7.2 then §7.3: y = x . M (+ bias) for the quantized M [K, N] at mat
  // (the §7.6 panels) on n positions. The inputs are quantized first: for
  // one position by every member into its own buffer (as the step's
  // LayerNorm: the same operations on the same operands, no barrier), for
  // several each member's share of the positions into the shared buffer,
  // then a barrier. The units are one panel (one position) or one panel x
  // a slice of positions (a batch), claimed from `next`. A position whose
  // input is not finite gets the default quiet NaN in every output (§7.2
  // step 1, as core/ls_gpt2_q8.c), before GELU. after(o0, width) runs on
  // each unit's outputs (one position).
  template <class After>
  void q8_product(std::atomic<int>& next, const uint8_t* mat, const float* bias,
                  int K, int N, const float* x, size_t xs, int n, float* y,
                  size_t ys, bool gelu, int m, After after) {
    const size_t C = size_t(c_.n_embd), RF = q8_row_floats(C);
    const size_t qs = 4 * RF, ss = RF;  // row stride: bytes, floats
    float* base;
    bool one_bad = false;
    if (n == 1) {
      base = buf_.data() + lay_.qm + size_t(m) * RF;
      one_bad = !qk_->quantize(x, K, reinterpret_cast<int8_t*>(base), base + C);
    } else {
      base = buf_.data() + lay_.qx;
      const Range r = share(n, m, pool_.size());
      for (int t = r.begin; t < r.end; ++t) {
        float* row = base + size_t(t) * RF;
        bad_[size_t(t)] = !qk_->quantize(
            x + size_t(t) * xs, K, reinterpret_cast<int8_t*>(row), row + C);
      }
      pool_.barrier();
    }
    const int8_t* q = reinterpret_cast<const int8_t*>(base);
    const float* s = base + C;
    const size_t panel_bytes = size_t(kPanel) * size_t(K + 2 * (K / 64));
    const int np = int(panels(N));
    // Position slices as matmul's (multiples of 4, the VNNI tile height).
    int slices = 1, slice = n;
    if (n > 1) {
      const int want = (8 * pool_.size() + np - 1) / np;
      slices = std::max(1, std::min(want, n / 8));
      slice = ((n + slices - 1) / slices + 3) / 4 * 4;
    }
    const int units = np * slices;
    for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      const int cu = u / slices, su = u % slices;
      const int t0 = std::min(n, su * slice), t1 = std::min(n, t0 + slice);
      if (t0 >= t1) continue;
      const int o0 = cu * kPanel, pw = std::min(kPanel, N - o0);
      qk_->panel(q + size_t(t0) * qs, qs, s + size_t(t0) * ss, ss, t1 - t0,
                 mat + size_t(cu) * panel_bytes, K, pw,
                 bias ? bias + o0 : nullptr, y + size_t(t0) * ys + size_t(o0),
                 ys);
      for (int t = t0; t < t1; ++t) {
        float* yt = y + size_t(t) * ys + size_t(o0);
        if (n == 1 ? one_bad : bad_[size_t(t)] != 0) {
          std::fill(yt, yt + pw, kQuietNaN);
        }
        if (gelu) k_.gelu(yt, pw);
      }
      after(o0, pw);
    }
  }

  // The output head's panels (wte^T): the weights themselves when they are
  // PANEL64, else the repacked copy.
  const float* head_panels() const {
    return in_place_ ? w_ : buf_.data() + lay_.head;
  }

  // This layer's panelled matrices: in the PANEL64 weights at the plain
  // offsets, or in the repacked copy.
  struct Mats {
    const float *attn, *proj, *fc, *out;
  };
  Mats mats(int l) const {
    if (in_place_) {
      const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
      return {w_ + b.attn_w, w_ + b.proj_w, w_ + b.fc_w, w_ + b.out_w};
    }
    const size_t C = size_t(c_.n_embd);
    const float* base = buf_.data() + lay_.blocks + size_t(l) * layer_floats(C);
    const LayerPanels o = layer_panels(C);
    return {base + o.attn, base + o.proj, base + o.fc, base + o.out};
  }

  // y = x . W + bias for W [n_in, n_out] repacked into panels, over units
  // claimed from `next`: pairs of panels for one position; for a batch, one
  // panel and a slice of the positions (the panels of a narrow matrix are
  // cut into position slices, so every member gets about 8 units or more
  // and the phase ends evenly). With gelu, §3.3 on each unit's outputs
  // right after it is computed.
  void matmul(std::atomic<int>& next, const float* x, size_t xs, int n,
              const float* w, const float* bias, int n_in, int n_out, float* y,
              size_t ys, bool gelu) {
    if (n == 1) {
      matvec(next, x, w, bias, n_in, n_out, y, [&](int o0, int width) {
        if (gelu) k_.gelu(y + o0, width);
      });
      return;
    }
    const int np = int(panels(n_out));
    // Position slices: multiples of 6 (the AVX-512 tile height).
    const int want = (8 * pool_.size() + np - 1) / np;
    const int slices = std::max(1, std::min(want, n / 12));
    const int rows = (n + slices - 1) / slices;
    const int slice = (rows + 5) / 6 * 6;
    const int units = np * slices;
    const size_t K = size_t(n_in);
    for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      const int cu = u / slices, su = u % slices;
      const int t0 = std::min(n, su * slice), t1 = std::min(n, t0 + slice);
      if (t0 >= t1) continue;
      const int o0 = cu * kPanel, pw = std::min(kPanel, n_out - o0);
      k_.matmul(x + size_t(t0) * xs, xs, t1 - t0, w + size_t(o0) * K,
                bias ? bias + o0 : nullptr, n_in, pw, 0, pw,
                y + size_t(t0) * ys + size_t(o0), ys);
      if (gelu) {
        for (int t = t0; t < t1; ++t) {
          k_.gelu(y + size_t(t) * ys + size_t(o0), pw);
        }
      }
    }
  }

  // One position: units of two panels (two streams), but with several
  // members the last 2 * members panels one at a time, so that the
  // members reach the barrier after the product together (a unit of two
  // 768-deep panels is ~15 us of reading; half a unit lost per product and
  // member was ~4% of a step). A single member takes pairs throughout. A
  // last panel narrower than 64 columns goes through the general product.
  // With more members than that gives units (split_k()), the product's K
  // is split along the 16 §2.1 blocks instead (matvec_split).
  // after(o0, width) runs on each unit's outputs once computed.
  template <class After>
  void matvec(std::atomic<int>& next, const float* x, const float* w,
              const float* bias, int n_in, int n_out, float* y, After after) {
    const int np = int(panels(n_out)), full = n_out / kPanel;
    const int members = pool_.size();
    if (const int groups = split_k(full, n_in); groups > 1) {
      matvec_split(next, groups, x, w, bias, n_in, n_out, y, after);
      return;
    }
    const int reserve = members > 1 ? std::min(full, 2 * members) : full % 2;
    const int pairs = (full - reserve) / 2;  // of full panels only
    const int units = pairs + (np - 2 * pairs);
    const size_t K = size_t(n_in);
    for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      const bool pair = u < pairs;
      const int o0 = pair ? 2 * u * kPanel : (pairs + u) * kPanel;
      const int width = pair ? 2 * kPanel : std::min(kPanel, n_out - o0);
      const float* b = bias ? bias + o0 : nullptr;
      if (width >= kPanel) {
        k_.matvec_pair(x, w + size_t(o0) * K,
                       pair ? w + size_t(o0 + kPanel) * K : nullptr, b, n_in,
                       y + o0);
      } else {
        k_.matmul(x, 0, 1, w + size_t(o0) * K, b, n_in, width, 0, width, y + o0,
                  0);
      }
      after(o0, width);
    }
  }

  // Groups of §2.1 blocks per panel for a decode product of `full` whole
  // panels: 1 (whole panels, no split) while that gives every member about
  // 4 units or more, else the fewest of 2, 4, 8, 16 that does.
  int split_k(int full, int n_in) const {
    const int members = pool_.size();
    if (members == 1 || no_split_k_ || !k_.matvec_blocks || n_in % 16 != 0 ||
        full < 1 || size_t(full) > split_panels(c_)) {
      return 1;
    }
    int g = 1;
    while (g < 16 && full * g < kSplitUnitsPerMember * members) g *= 2;
    return g;
  }

  // Split K: a unit is one whole panel's §2.1 blocks [b0, b1), b1 - b0 =
  // 16 / groups; its block sums go to the shared partials (16 x 64 floats
  // per panel). The member that finishes a panel's last group (a counter
  // per panel) combines its 16 block sums by the §2.1 tree, s[i] = s[i] +
  // s[i + h] for h = 8, 4, 2, 1, adds the bias, and runs after() on it:
  // exactly the unsplit kernel's operations on each output, so the bits do
  // not depend on the split. A last panel narrower than 64 columns is one
  // unsplit unit at the end.
  template <class After>
  void matvec_split(std::atomic<int>& next, int groups, const float* x,
                    const float* w, const float* bias, int n_in, int n_out,
                    float* y, After after) {
    const int full = n_out / kPanel, np = int(panels(n_out));
    const int units = full * groups + (np - full);
    const int per = 16 / groups;
    const size_t K = size_t(n_in);
    float* part = buf_.data() + lay_.part;
    std::atomic<int>* done = panel_done_.get();
    for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      if (u >= full * groups) {  // the narrow last panel
        const int o0 = full * kPanel, width = n_out - o0;
        k_.matmul(x, 0, 1, w + size_t(o0) * K, bias ? bias + o0 : nullptr, n_in,
                  width, 0, width, y + o0, 0);
        after(o0, width);
        continue;
      }
      // Panel-major, so that the first units of every panel go first.
      const int pn = u / groups, g = u % groups;
      float* pp = part + size_t(pn) * 16 * kPanel;
      k_.matvec_blocks(x, w + size_t(pn) * kPanel * K, n_in, g * per,
                       g * per + per, pp + size_t(g * per) * kPanel);
      if (done[pn].fetch_add(1, std::memory_order_acq_rel) != groups - 1) {
        continue;
      }
      done[pn].store(0, std::memory_order_relaxed);  // for the next product
      for (int h = 8; h >= 1; h /= 2) {
        for (int i = 0; i < h; ++i) {
          float* si = pp + size_t(i) * kPanel;
          const float* sh = pp + size_t(i + h) * kPanel;
          for (int j = 0; j < kPanel; ++j) si[j] = si[j] + sh[j];
        }
      }
      const int o0 = pn * kPanel;
      float* yo = y + o0;
      if (bias) {
        for (int j = 0; j < kPanel; ++j) yo[j] = pp[j] + bias[o0 + j];
      } else {
        std::copy(pp, pp + kPanel, yo);
      }
      after(o0, kPanel);
    }
  }

  // §2.6 embeddings. PANEL64 weights hold wte as the head's panels: the
  // row is gathered into x first, then added to in place.
  void embed(int32_t token, int pos, float* x) const {
    if (q8_) {  // §7.4: the dequantized rows, the core's lookup
      ls_gpt2_q8_embed(&c_, q8_, token, pos, x);
      return;
    }
    const size_t C = size_t(c_.n_embd);
    const float* te = w_ + size_t(token) * C;
    if (in_place_) {
      ls_gpt2_panel_embedding(&c_, w_, token, x);
      te = x;
    }
    const float* pe = w_ + ls_gpt2_wpe_offset(&c_) + size_t(pos) * C;
    for (size_t i = 0; i < C; ++i) x[i] = te[i] + pe[i];
  }

  static void residual(float* x, const float* y, int C) {
    for (int i = 0; i < C; ++i) x[i] = x[i] + y[i];
  }

  // The panels of W [K, N] (row stride ld, column stride cs: the head is
  // wte^T, element (k, o) at wte[o*C + k]) into dst: the PANEL64 layout's
  // permutation (core/ls_gpt2_layout.h).
  static void repack(const float* w, size_t K, size_t N, size_t ld, size_t cs,
                     float* dst) {
    ls_panelize(w, K, N, ld, cs, dst);
  }

  void repack_all() {
    const size_t C = size_t(c_.n_embd);
    for (int l = 0; l < c_.n_layer; ++l) {
      const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
      float* base = buf_.data() + lay_.blocks + size_t(l) * layer_floats(C);
      const LayerPanels o = layer_panels(C);
      repack(w_ + b.attn_w, C, 3 * C, 3 * C, 1, base + o.attn);
      repack(w_ + b.proj_w, C, C, C, 1, base + o.proj);
      repack(w_ + b.fc_w, C, 4 * C, 4 * C, 1, base + o.fc);
      repack(w_ + b.out_w, 4 * C, C, C, 1, base + o.out);
    }
    repack(w_, C, size_t(c_.n_vocab), 1, C, buf_.data() + lay_.head);
  }

  // Attention units: groups of consecutive heads, about two per member.
  int head_group() const {
    return std::max(1, (c_.n_head + 2 * pool_.size() - 1) / (2 * pool_.size()));
  }
  int head_units() const {
    return (c_.n_head + head_group() - 1) / head_group();
  }

  size_t lay_stride_c() const { return round16(size_t(c_.n_embd)); }

  ls_gpt2_config c_;
  const float* w_;     // binary32 weights, or null
  const uint8_t* q8_;  // grouped int8 weights, or null
  const CpuKernels& k_;
  const cpu::CpuQ8Kernels* qk_;  // the int8 kernels (q8_ only)
  bool in_place_;  // w_ is PANEL64 (or int8): matrices and head read in place
  // $LOCKSTEP_NO_SPLIT_K set (to anything but "0") at creation: decode
  // never splits K (for benchmarks: the same bits either way).
  bool no_split_k_ = [] {
    const char* e = std::getenv("LOCKSTEP_NO_SPLIT_K");
    return e && std::string(e) != "0";
  }();
  bool no_split_attend_ = [] {
    const char* e = std::getenv("LOCKSTEP_NO_SPLIT_ATTEND");
    return e && std::string(e) != "0";
  }();
  cpu::ThreadPool pool_;
  int positions_;
  Layout lay_;
  // int8: per position of a batch, whether its projection input was not
  // finite (written before the barrier that precedes the product).
  std::vector<char> bad_;
  std::vector<LayerParams> params_;
  const float *lnf_g_ = nullptr, *lnf_b_ = nullptr;
  std::unique_ptr<std::atomic<int>[]> counters_;
  // Split K: per panel, the block groups finished in the current product.
  std::unique_ptr<std::atomic<int>[]> panel_done_;
  std::atomic<bool> nonfinite_{false};  // a non-finite logit in this pass
  ls_gpt2_observer obs_ = nullptr;      // set_observer
  void* obs_user_ = nullptr;
  HugeFloats buf_;
};

}  // namespace

size_t cpu_backend_memory_bytes(const ls_gpt2_config& c, const std::string& isa,
                                int threads, int max_prefix,
                                ls_gpt2_layout weights_layout) {
  const CpuKernels* k = cpu::kernels_for(isa);
  if (!k) throw Error("GPT-2 backend: this CPU cannot run ISA '" + isa + "'");
  return allocation_bytes(layout(c, positions_for(c, max_prefix), threads,
                                 weights_layout == LS_GPT2_LAYOUT_PANEL64,
                                 false));
}

std::unique_ptr<Gpt2Backend> make_cpu_backend(const ls_gpt2_config& c,
                                              const float* weights,
                                              size_t words,
                                              const std::string& isa,
                                              int threads, int max_prefix,
                                              ls_gpt2_layout weights_layout) {
  (void)words;  // checked by make_gpt2_backend
  const CpuKernels* k = cpu::kernels_for(isa);
  if (!k) throw Error("GPT-2 backend: this CPU cannot run ISA '" + isa + "'");
  if (threads < 1 || threads > kMaxThreads) {
    throw Error("GPT-2 backend: threads must be 1 .. " +
                std::to_string(kMaxThreads) + ", not " +
                std::to_string(threads));
  }
  return std::make_unique<CpuBackend>(c, weights, nullptr, *k, nullptr, threads,
                                      max_prefix,
                                      weights_layout == LS_GPT2_LAYOUT_PANEL64);
}

std::unique_ptr<Gpt2Backend> make_cpu_q8_backend(const ls_gpt2_config& c,
                                                 const uint8_t* weights,
                                                 size_t bytes,
                                                 const std::string& isa,
                                                 int threads, int max_prefix) {
  (void)bytes;  // checked by make_gpt2_q8_backend
  const CpuKernels* k = cpu::kernels_for(isa);
  const cpu::CpuQ8Kernels* qk = cpu::q8_kernels_for(isa);
  const char* forced = std::getenv("LOCKSTEP_Q8_KERNELS");
  if (k && !qk && forced && *forced) {
    throw Error("GPT-2 backend: LOCKSTEP_Q8_KERNELS=" + std::string(forced) +
                ": this CPU cannot run that int8 table (or none is named "
                "so)");
  }
  if (!k || !qk) {
    throw Error("GPT-2 backend: this CPU cannot run ISA '" + isa + "'");
  }
  if (threads < 1 || threads > kMaxThreads) {
    throw Error("GPT-2 backend: threads must be 1 .. " +
                std::to_string(kMaxThreads) + ", not " +
                std::to_string(threads));
  }
  return std::make_unique<CpuBackend>(c, nullptr, weights, *k, qk, threads,
                                      max_prefix, true);
}

}  // namespace lockstep::backends
