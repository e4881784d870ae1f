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
// The team of threads runs a whole pass as one job, with a barrier after
// each matrix product and after attention. Within a phase the members
// claim units of work (column tiles, heads) from a shared counter, so a
// member that is slower (memory is not shared evenly, the OS preempts one)
// simply does fewer. A unit is a set of whole outputs: no sum is ever
// divided between threads, and the result does not depend on the thread
// count or on who computed what.
#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/thread_pool.h"
#include "lockstep/error.h"
#include "ls_ops32.h"

namespace lockstep::backends {
namespace {

using cpu::CpuKernels;

// [begin, end) of member m's share of n items (LayerNorm over positions).
struct Range {
  int begin, end;
};
Range share(int n, int m, int members) {
  const int chunk = (n + members - 1) / members;
  const int b = std::min(n, m * chunk);
  return {b, std::min(n, b + chunk)};
}

// The output head reads wte through a copy repacked at creation into
// panels of kPanel rows: panel p holds wte[p*kPanel + r][k] at
// (p*C + k)*kPanel + r (rows past n_vocab are +0.0). One panel is then an
// input-major [C, kPanel] matrix, so the head is the same streaming matrix
// product as every other (lanes across rows, k in order), reading memory
// linearly. (Vectorizing across rows of wte in place needs a transpose in
// registers per 16 x 16 tile: measured at 0.71 of the streaming bandwidth,
// against 1.02 for the panels; docs/cpu-backend.md.)
constexpr int kPanel = 128;

size_t panels(const ls_gpt2_config& c) {
  return (size_t(c.n_vocab) + kPanel - 1) / kPanel;
}

// Column units claimed by one member at a time for a single position: 128
// columns (the AVX-512 decode tile), 64 when a matrix has few. (A batch of
// positions claims one packed panel at a time.)
int unit_for(int n_out) { return n_out >= 16 * 128 ? 128 : 64; }

// The scratch of one backend, in floats: for P positions the residual
// stream X, LayerNorm output H, q|k|v, attention output A, MLP hidden F and
// projection output Y; per member a private residual stream and LayerNorm
// output for the cached step, a score row of n_ctx per head, a head panel's
// outputs and two packing panels; the repacked head.
struct Layout {
  size_t x, h, qkv, a, f, y, xm, hm, score, tail, pack, pack_stride, head;
  size_t total;
};
Layout layout(const ls_gpt2_config& c, const CpuKernels& k, int positions,
              int members) {
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
  l.score = o, o += M * round(size_t(c.n_head) * size_t(c.n_ctx));
  l.tail = o, o += M * round(kPanel);
  l.pack_stride = round(4 * C * size_t(k.pack_width));
  l.pack = o, o += 2 * M * l.pack_stride;
  l.head = o, o += panels(c) * kPanel * C;
  l.total = o;
  return l;
}

// The one allocation: the layout in 2 MB pages.
constexpr size_t kHuge = size_t(2) << 20;
size_t allocation_bytes(const Layout& l) {
  return (l.total * sizeof(float) + kHuge - 1) / kHuge * kHuge;
}

int positions_for(const ls_gpt2_config& c, int max_prefix) {
  return max_prefix > 0 ? std::min(max_prefix, c.n_ctx) : c.n_ctx;
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

class CpuBackend final : public Gpt2Backend {
 public:
  CpuBackend(const ls_gpt2_config& c, const float* w, const CpuKernels& k,
             int threads, int max_prefix)
      : c_(c),
        w_(w),
        k_(k),
        pool_(threads),
        positions_(positions_for(c, max_prefix)),
        lay_(layout(c, k, positions_, pool_.size())),
        counters_(new std::atomic<int>[size_t(kPerLayer * c.n_layer + 1)]) {
    // 2 MB aligned, and on Linux asked for transparent huge pages: the
    // head panels (154 MB for 124M) are streamed once per token, and 4 KB
    // pages would cost a TLB miss every 4 KB.
    const size_t bytes = allocation_bytes(lay_);
    buf_.reset(static_cast<float*>(std::aligned_alloc(kHuge, bytes)));
    if (!buf_) throw std::bad_alloc();
#ifdef __linux__
    madvise(buf_.get(), bytes, MADV_HUGEPAGE);  // advisory: failure is fine
#endif
    std::fill(buf_.get(), buf_.get() + lay_.head, 0.0f);
    repack_head();
  }

  std::string name() const override {
    return std::string("cpu-") + k_.isa + " x" + std::to_string(pool_.size());
  }
  size_t extra_memory_bytes() const override { return allocation_bytes(lay_); }

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
    Pass p{&token, 1, position, cache, logits};
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
    Pass p{tokens, n, 0, nullptr, logits};
    return run(p);
  }

 private:
  // Work counters per layer: the four matrix products and attention.
  static constexpr int kPerLayer = 5;
  enum Phase { kAttnIn = 0, kAttend = 1, kProj = 2, kFc = 3, kOut = 4 };

  // One forward pass: n positions starting at `first`. With a cache (the
  // step, n = 1) keys and values are appended to it and attention reads it;
  // without one (the full pass) attention reads this pass's q|k|v.
  struct Pass {
    const int32_t* tokens;
    int n;
    int first;
    float* cache;
    float* logits;
    bool nonfinite[64] = {};
  };

  ls_status run(Pass& p) {
    for (int i = 0; i < kPerLayer * c_.n_layer + 1; ++i) {
      counters_[size_t(i)].store(0, std::memory_order_relaxed);
    }
    auto job = [this, &p](int m, int members) {
      if (p.cache) {
        step_pass(p, m);
      } else {
        full_pass(p, m, members);
      }
      head(p, m);
    };
    pool_.run(job);
    for (int m = 0; m < pool_.size(); ++m) {
      if (p.nonfinite[m]) return LS_ERR_OUTPUT_NONFINITE;
    }
    return LS_OK;
  }

  std::atomic<int>& counter(int layer, Phase ph) {
    return counters_[size_t(layer * kPerLayer + ph)];
  }

  // The cached step. The short serial parts (embedding, residuals,
  // LayerNorm) are computed by every member into its own x and h, the same
  // operations on the same operands, so no barrier is needed around them.
  void step_pass(Pass& p, int m) {
    const ls_gpt2_config& c = c_;
    const int C = c.n_embd, D = C / c.n_head;
    const size_t Cs = size_t(C);
    float* buf = buf_.get();
    float* x = buf + lay_.xm + size_t(m) * lay_stride_c();
    float* h = buf + lay_.hm + size_t(m) * lay_stride_c();
    float* QKV = buf + lay_.qkv;
    float* A = buf + lay_.a;
    float* F = buf + lay_.f;
    float* Y = buf + lay_.y;
    float* score = buf + lay_.score +
                   size_t(m) * round16(size_t(c.n_head) * size_t(c.n_ctx));
    const size_t row = ls_gpt2_cache_row_floats(&c);
    const float scale = __builtin_sqrtf(float(D));

    embed(p.tokens[0], p.first, x);
    for (int l = 0; l < c.n_layer; ++l) {
      const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
      if (l > 0) residual(x, Y, C);
      ls_layernorm32(x, w_ + b.ln1_g, w_ + b.ln1_b, C, h);
      matmul(counter(l, kAttnIn), h, Cs, 1, b.attn_w, b.attn_b, C, 3 * C, QKV,
             3 * Cs, m, false);
      pool_.barrier();
      float* keys = p.cache + size_t(l) * 2 * Cs;
      float* kv = keys + size_t(p.first) * row;
      for (int u; (u = counter(l, kAttend).fetch_add(1)) < head_units();) {
        const int h0 = u * head_group(),
                  h1 = std::min(c.n_head, h0 + head_group());
        const size_t o0 = size_t(h0) * size_t(D), o1 = size_t(h1) * size_t(D);
        for (size_t i = o0; i < o1; ++i) {
          kv[i] = QKV[Cs + i];
          kv[Cs + i] = QKV[2 * Cs + i];
        }
        k_.attend(QKV + o0, keys + o0, keys + Cs + o0, row, D, h1 - h0,
                  p.first + 1, scale, score, A + o0);
      }
      pool_.barrier();
      matmul(counter(l, kProj), A, Cs, 1, b.proj_w, b.proj_b, C, C, Y, Cs, m,
             false);
      pool_.barrier();
      residual(x, Y, C);
      ls_layernorm32(x, w_ + b.ln2_g, w_ + b.ln2_b, C, h);
      matmul(counter(l, kFc), h, Cs, 1, b.fc_w, b.fc_b, C, 4 * C, F, 4 * Cs, m,
             true);
      pool_.barrier();
      matmul(counter(l, kOut), F, 4 * Cs, 1, b.out_w, b.out_b, 4 * C, C, Y, Cs,
             m, false);
      pool_.barrier();
    }
    residual(x, Y, C);
    const size_t lnf = ls_gpt2_lnf_offset(&c);
    ls_layernorm32(x, w_ + lnf, w_ + lnf + Cs, C, h);
  }

  // The full pass over n positions, layer by layer. LayerNorm and the
  // residuals are split by positions (a barrier after each).
  void full_pass(Pass& p, int m, int M) {
    const ls_gpt2_config& c = c_;
    const int C = c.n_embd, n = p.n, D = C / c.n_head;
    const size_t Cs = size_t(C);
    float* buf = buf_.get();
    float* X = buf + lay_.x;
    float* Hn = buf + lay_.h;
    float* QKV = buf + lay_.qkv;
    float* A = buf + lay_.a;
    float* F = buf + lay_.f;
    float* Y = buf + lay_.y;
    float* score = buf + lay_.score +
                   size_t(m) * round16(size_t(c.n_head) * size_t(c.n_ctx));
    const Range pos = share(n, m, M);
    const float scale = __builtin_sqrtf(float(D));

    for (int t = pos.begin; t < pos.end; ++t) {
      embed(p.tokens[t], t, X + size_t(t) * Cs);
    }
    for (int l = 0; l < c.n_layer; ++l) {
      const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
      for (int t = pos.begin; t < pos.end; ++t) {
        float* x = X + size_t(t) * Cs;
        if (l > 0) residual(x, Y + size_t(t) * Cs, C);
        ls_layernorm32(x, w_ + b.ln1_g, w_ + b.ln1_b, C, Hn + size_t(t) * Cs);
      }
      pool_.barrier();
      matmul(counter(l, kAttnIn), Hn, Cs, n, b.attn_w, b.attn_b, C, 3 * C, QKV,
             3 * Cs, m, false);
      pool_.barrier();
      for (int u; (u = counter(l, kAttend).fetch_add(1)) < head_units();) {
        const int h0 = u * head_group(),
                  h1 = std::min(c.n_head, h0 + head_group());
        const size_t o0 = size_t(h0) * size_t(D);
        for (int t = 0; t < n; ++t) {
          k_.attend(QKV + size_t(t) * 3 * Cs + o0, QKV + Cs + o0,
                    QKV + 2 * Cs + o0, 3 * Cs, D, h1 - h0, t + 1, scale, score,
                    A + size_t(t) * Cs + o0);
        }
      }
      pool_.barrier();
      matmul(counter(l, kProj), A, Cs, n, b.proj_w, b.proj_b, C, C, Y, Cs, m,
             false);
      pool_.barrier();
      for (int t = pos.begin; t < pos.end; ++t) {
        float* x = X + size_t(t) * Cs;
        residual(x, Y + size_t(t) * Cs, C);
        ls_layernorm32(x, w_ + b.ln2_g, w_ + b.ln2_b, C, Hn + size_t(t) * Cs);
      }
      pool_.barrier();
      matmul(counter(l, kFc), Hn, Cs, n, b.fc_w, b.fc_b, C, 4 * C, F, 4 * Cs, m,
             true);
      pool_.barrier();
      matmul(counter(l, kOut), F, 4 * Cs, n, b.out_w, b.out_b, 4 * C, C, Y, Cs,
             m, false);
      pool_.barrier();
    }
    // The last position's second residual and ln_f, into this member's h
    // (every member, as in the step, so the head needs no barrier).
    float* h = buf + lay_.hm + size_t(m) * lay_stride_c();
    float* x = buf + lay_.xm + size_t(m) * lay_stride_c();
    std::copy(X + size_t(n - 1) * Cs, X + size_t(n) * Cs, x);
    residual(x, Y + size_t(n - 1) * Cs, C);
    const size_t lnf = ls_gpt2_lnf_offset(&c);
    ls_layernorm32(x, w_ + lnf, w_ + lnf + Cs, C, h);
  }

  // §6 logits = h . wte^T from this member's h, panel by panel (the last,
  // partial panel through `tail`).
  void head(Pass& p, int m) {
    const ls_gpt2_config& c = c_;
    const size_t Cs = size_t(c.n_embd);
    float* buf = buf_.get();
    const float* h = buf + lay_.hm + size_t(m) * lay_stride_c();
    const float* panel0 = buf + lay_.head;
    float* tail = buf + lay_.tail + size_t(m) * round16(kPanel);
    std::atomic<int>& next = counters_[size_t(kPerLayer * c.n_layer)];
    const int np = int(panels(c));
    for (int pn; (pn = next.fetch_add(1)) < np;) {
      const int r0 = pn * kPanel, r1 = std::min(c.n_vocab, r0 + kPanel);
      float* y = r1 - r0 == kPanel ? p.logits + r0 : tail;
      k_.matmul(h, Cs, 1, panel0 + size_t(pn) * kPanel * Cs, nullptr, c.n_embd,
                kPanel, 0, kPanel, y, kPanel);
      if (y == tail) std::copy(tail, tail + (r1 - r0), p.logits + r0);
      for (int v = r0; v < r1; ++v) {
        if (!(p.logits[v] - p.logits[v] == 0.0f)) p.nonfinite[m] = true;
      }
    }
  }

  // y = x . W + b over units of columns claimed from `next`; with gelu,
  // §3.3 on each unit's outputs right after it is computed. A single
  // position reads W in place, units of unit_for() columns; a batch goes
  // through packed panels of pack_width columns, each unit packing the
  // panel of the unit it claims next while it computes.
  void matmul(std::atomic<int>& next, const float* x, size_t xs, int n,
              size_t w_off, size_t b_off, int n_in, int n_out, float* y,
              size_t ys, int m, bool gelu) {
    const float* w = w_ + w_off;
    const float* bias = w_ + b_off;
    auto finish = [&](int o0, int o1) {
      if (!gelu) return;
      for (int t = 0; t < n; ++t) {
        k_.gelu(y + size_t(t) * ys + size_t(o0), o1 - o0);
      }
    };
    if (n == 1) {
      const int unit = unit_for(n_out);
      const int units = (n_out + unit - 1) / unit;
      for (int u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
        const int o0 = u * unit, o1 = std::min(n_out, o0 + unit);
        k_.matmul(x, xs, n, w, bias, n_in, n_out, o0, o1, y, ys);
        finish(o0, o1);
      }
      return;
    }
    const int tw = k_.pack_width;
    const int full = n_out / tw, units = full + (n_out % tw != 0);
    float* pa = buf_.get() + lay_.pack + size_t(2 * m) * lay_.pack_stride;
    float* pb = pa + lay_.pack_stride;
    bool have = false;  // pa holds unit u's panel
    int u = next.fetch_add(1, std::memory_order_relaxed);
    while (u < units) {
      const int un = next.fetch_add(1, std::memory_order_relaxed);
      const int o0 = u * tw, o1 = std::min(n_out, o0 + tw);
      if (u < full) {
        if (!have) k_.pack(w + o0, size_t(n_out), n_in, pa);
        const bool more = un < full;
        k_.matmul_panel(x, xs, n, pa, bias + o0, n_in, y + o0, ys,
                        more ? w + size_t(un) * size_t(tw) : nullptr,
                        size_t(n_out), pb);
        std::swap(pa, pb);
        have = more;
      } else {
        k_.matmul(x, xs, n, w, bias, n_in, n_out, o0, o1, y, ys);
        have = false;
      }
      finish(o0, o1);
      u = un;
    }
  }

  // §2.6 embeddings.
  void embed(int32_t token, int pos, float* x) const {
    const size_t C = size_t(c_.n_embd);
    const float* te = w_ + size_t(token) * C;
    const float* pe = w_ + ls_gpt2_wpe_offset(&c_) + size_t(pos) * C;
    for (size_t i = 0; i < C; ++i) x[i] = te[i] + pe[i];
  }

  static void residual(float* x, const float* y, int C) {
    for (int i = 0; i < C; ++i) x[i] = x[i] + y[i];
  }

  void repack_head() {
    const size_t C = size_t(c_.n_embd);
    float* head = buf_.get() + lay_.head;
    for (size_t pn = 0; pn < panels(c_); ++pn) {
      float* panel = head + pn * kPanel * C;
      for (size_t r = 0; r < size_t(kPanel); ++r) {
        const size_t v = pn * kPanel + r;
        const float* row = v < size_t(c_.n_vocab) ? w_ + v * C : nullptr;
        for (size_t k = 0; k < C; ++k) {
          panel[k * kPanel + r] = row ? row[k] : 0.0f;
        }
      }
    }
  }

  // Attention units: groups of consecutive heads, about two per member.
  int head_group() const {
    return std::max(1, (c_.n_head + 2 * pool_.size() - 1) / (2 * pool_.size()));
  }
  int head_units() const {
    return (c_.n_head + head_group() - 1) / head_group();
  }

  static size_t round16(size_t n) { return (n + 15) / 16 * 16; }
  size_t lay_stride_c() const { return round16(size_t(c_.n_embd)); }

  ls_gpt2_config c_;
  const float* w_;
  const CpuKernels& k_;
  cpu::ThreadPool pool_;
  int positions_;
  Layout lay_;
  std::unique_ptr<std::atomic<int>[]> counters_;
  std::unique_ptr<float, FreeDeleter> buf_;
};

}  // namespace

size_t cpu_backend_memory_bytes(const ls_gpt2_config& c, const std::string& isa,
                                int threads, int max_prefix) {
  const CpuKernels* k = cpu::kernels_for(isa);
  if (!k) throw Error("GPT-2 backend: this CPU cannot run ISA '" + isa + "'");
  return allocation_bytes(layout(c, *k, positions_for(c, max_prefix), threads));
}

std::unique_ptr<Gpt2Backend> make_cpu_backend(const ls_gpt2_config& c,
                                              const float* weights,
                                              size_t words,
                                              const std::string& isa,
                                              int threads, int max_prefix) {
  (void)words;  // checked by make_gpt2_backend
  const CpuKernels* k = cpu::kernels_for(isa);
  if (!k) throw Error("GPT-2 backend: this CPU cannot run ISA '" + isa + "'");
  if (threads < 1 || threads > 64) {
    throw Error("GPT-2 backend: threads must be 1 .. 64, not " +
                std::to_string(threads));
  }
  return std::make_unique<CpuBackend>(c, weights, *k, threads, max_prefix);
}

}  // namespace lockstep::backends
