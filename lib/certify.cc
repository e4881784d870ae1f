// The real GPT-2 in interval arithmetic with outward rounding, and the
// certificate of a greedy choice (lib/certify.h, docs/certify.md). Read it
// as core/ls_gpt2.c over intervals: embeddings, then per block the
// attention inputs, the attention, the block tail, then the final
// LayerNorm (MPFR intervals of P bits) and the head (binary64 intervals,
// iv::). Every step is an enclosure of the real operation;
// docs/certify.md §2 gives the soundness argument of each.
#include "lib/certify.h"

#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "lockstep/error.h"

namespace lockstep {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The next binary64 above x. A round-to-nearest result r of a real v has
// next_down(r) <= v <= next_up(r) (|r - v| is at most half an ulp, also in
// the subnormal range and at an overflow to infinity), which is what every
// widened operation below rests on.
inline double up(double x) {
  if (x == 0.0) return 0x1p-1074;  // +0 and -0
  if (!(x < kInf)) return x;       // +inf (NaN never reaches here)
  uint64_t u = std::bit_cast<uint64_t>(x);
  u = (u >> 63) ? u - 1 : u + 1;  // a negative's magnitude shrinks
  return std::bit_cast<double>(u);
}
inline double dn(double x) { return -up(-x); }

inline Interval make(double lo, double hi) { return Interval{lo, hi}; }
const Interval kEverything{-kInf, kInf};

// exp and tanh of a binary64 with MPFR's directed rounding at 53 bits: the
// correctly rounded bound in the asked direction, then converted to
// binary64 in the same direction (MPFR's exponent range is wider than
// binary64's, so only the conversion can overflow or underflow, and it
// rounds the asked way). Both functions are increasing, so the endpoints'
// bounds bound the interval.
struct Mpfr {
  mpfr_t v;
  Mpfr() { mpfr_init2(v, 53); }
  ~Mpfr() {
    mpfr_clear(v);
    mpfr_free_cache();
  }
};

Mpfr& scratch() {
  thread_local Mpfr m;
  return m;
}

double exp_dir(double x, mpfr_rnd_t r) {
  Mpfr& m = scratch();
  mpfr_set_d(m.v, x, MPFR_RNDN);  // exact: 53 bits
  mpfr_exp(m.v, m.v, r);
  return mpfr_get_d(m.v, r);
}

double tanh_dir(double x, mpfr_rnd_t r) {
  Mpfr& m = scratch();
  mpfr_set_d(m.v, x, MPFR_RNDN);
  mpfr_tanh(m.v, m.v, r);
  return mpfr_get_d(m.v, r);
}

// The real constants, enclosed by MPFR's directed rounding.
struct Constants {
  Interval gelu_c;  // sqrt(2/pi)
  Interval gelu_a;  // 0.044715
  Interval eps;     // 10^-5, LayerNorm's epsilon
};

Interval decimal(const char* s) {
  mpfr_t v;
  mpfr_init2(v, 53);
  mpfr_set_str(v, s, 10, MPFR_RNDD);
  const double lo = mpfr_get_d(v, MPFR_RNDD);
  mpfr_set_str(v, s, 10, MPFR_RNDU);
  const double hi = mpfr_get_d(v, MPFR_RNDU);
  mpfr_clear(v);
  return make(lo, hi);
}

Interval sqrt_two_over_pi() {
  mpfr_t pi, v;
  mpfr_init2(pi, 64);
  mpfr_init2(v, 64);
  // Lower bound: 2 / (pi rounded up), rounded down, sqrt rounded down.
  mpfr_const_pi(pi, MPFR_RNDU);
  mpfr_ui_div(v, 2, pi, MPFR_RNDD);
  mpfr_sqrt(v, v, MPFR_RNDD);
  const double lo = mpfr_get_d(v, MPFR_RNDD);
  mpfr_const_pi(pi, MPFR_RNDD);
  mpfr_ui_div(v, 2, pi, MPFR_RNDU);
  mpfr_sqrt(v, v, MPFR_RNDU);
  const double hi = mpfr_get_d(v, MPFR_RNDU);
  mpfr_clear(pi);
  mpfr_clear(v);
  mpfr_free_cache();
  return make(lo, hi);
}

const Constants& constants() {
  static const Constants k{sqrt_two_over_pi(), decimal("0.044715"),
                           decimal("1e-5")};
  return k;
}

}  // namespace

namespace iv {

double next_up(double x) { return up(x); }
double next_down(double x) { return dn(x); }

Interval point(double x) { return make(x, x); }

Interval add(Interval a, Interval b) {
  return make(dn(a.lo + b.lo), up(a.hi + b.hi));
}

Interval sub(Interval a, Interval b) {
  return make(dn(a.lo - b.hi), up(a.hi - b.lo));
}

Interval mul(Interval a, double w) {
  if (w >= 0.0) return make(dn(a.lo * w), up(a.hi * w));
  return make(dn(a.hi * w), up(a.lo * w));
}

Interval mul(Interval a, Interval b) {
  const double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  double lo = p[0], hi = p[0];
  for (double v : p) {
    if (std::isnan(v)) return kEverything;  // 0 * inf
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return make(dn(lo), up(hi));
}

Interval div(Interval a, Interval b) {
  if (!(b.lo > 0.0 || b.hi < 0.0)) return kEverything;
  const double p[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
  double lo = p[0], hi = p[0];
  for (double v : p) {
    if (std::isnan(v)) return kEverything;  // inf / inf
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return make(dn(lo), up(hi));
}

Interval square(Interval a) {
  const double l = std::fabs(a.lo), h = std::fabs(a.hi);
  const double big = std::max(l, h);
  if (a.lo <= 0.0 && a.hi >= 0.0) return make(0.0, up(big * big));
  const double small = std::min(l, h);
  return make(std::max(0.0, dn(small * small)), up(big * big));
}

Interval sqrt(Interval a) {
  // sqrt is correctly rounded, so one ulp outward encloses it.
  const double lo = a.lo > 0.0 ? std::max(0.0, dn(std::sqrt(a.lo))) : 0.0;
  const double hi = a.hi > 0.0 ? up(std::sqrt(a.hi)) : 0.0;
  return make(lo, hi);
}

Interval exp(Interval a) {
  return make(exp_dir(a.lo, MPFR_RNDD), exp_dir(a.hi, MPFR_RNDU));
}

Interval tanh(Interval a) {
  return make(tanh_dir(a.lo, MPFR_RNDD), tanh_dir(a.hi, MPFR_RNDU));
}

Interval gelu(Interval x) {
  const Constants& k = constants();
  // u = C (x + A x^3) is increasing in x, and x + A x^3 is a sum of two
  // increasing terms, so the interval operations give u's range (up to
  // rounding) without dependency loss.
  const Interval x3 = mul(square(x), x);
  const Interval u = mul(k.gelu_c, add(x, mul(k.gelu_a, x3)));
  const Interval t = tanh(u);
  // x/2 (1 + t): exact range for x >= 0 (both factors increase with x);
  // for x < 0 the product loses the dependency between x and t.
  return mul(mul(x, add(point(1.0), t)), 0.5);
}

}  // namespace iv

using iv::add;
using iv::mul;
using iv::point;
using iv::sub;

namespace {

// sum_k h[k] r[k] for a binary32 row r.
Interval row_dot(const Interval* h, const float* r, int K) {
  double lo = 0.0, hi = 0.0;
  for (int k = 0; k < K; ++k) {
    const double w = r[k];
    const double pl = w >= 0.0 ? w * h[k].lo : w * h[k].hi;
    const double ph = w >= 0.0 ? w * h[k].hi : w * h[k].lo;
    lo = dn(lo + dn(pl));
    hi = up(hi + up(ph));
  }
  return Interval{lo, hi};
}

// The blocks run in MPFR intervals of P bits (P = 128 by default): each
// endpoint operation is one MPFR operation rounded down (lo) or up (hi),
// so every bound is valid by MPFR's directed rounding. Binary64 (P = 53,
// or the one-ulp widening above) is not enough for a trained model:
// docs/certify.md measures its widths.
using Mp = __mpfr_struct;

// n intervals of P bits: lo(i), hi(i).
class BigVec {
 public:
  BigVec(size_t n, mpfr_prec_t p) : lo_(n), hi_(n) {
    for (size_t i = 0; i < n; ++i) {
      mpfr_init2(&lo_[i], p);
      mpfr_init2(&hi_[i], p);
      mpfr_set_zero(&lo_[i], 1);
      mpfr_set_zero(&hi_[i], 1);
    }
  }
  ~BigVec() {
    for (size_t i = 0; i < lo_.size(); ++i) {
      mpfr_clear(&lo_[i]);
      mpfr_clear(&hi_[i]);
    }
  }
  BigVec(const BigVec&) = delete;
  BigVec& operator=(const BigVec&) = delete;
  Mp* lo(size_t i) { return &lo_[i]; }
  Mp* hi(size_t i) { return &hi_[i]; }
  size_t size() const { return lo_.size(); }

 private:
  std::vector<Mp> lo_, hi_;
};

// Scratch reals and the constants at P bits.
struct Big {
  mpfr_prec_t p;
  BigVec t;  // temporaries 0..7
  BigVec k;  // 0: sqrt(2/pi), 1: 0.044715, 2: eps, 3: sqrt(D)
  explicit Big(mpfr_prec_t prec, int head_width)
      : p(prec), t(8, prec), k(4, prec) {
    mpfr_const_pi(t.hi(0), MPFR_RNDU);
    mpfr_ui_div(k.lo(0), 2, t.hi(0), MPFR_RNDD);
    mpfr_sqrt(k.lo(0), k.lo(0), MPFR_RNDD);
    mpfr_const_pi(t.lo(0), MPFR_RNDD);
    mpfr_ui_div(k.hi(0), 2, t.lo(0), MPFR_RNDU);
    mpfr_sqrt(k.hi(0), k.hi(0), MPFR_RNDU);
    mpfr_set_str(k.lo(1), "0.044715", 10, MPFR_RNDD);
    mpfr_set_str(k.hi(1), "0.044715", 10, MPFR_RNDU);
    mpfr_set_str(k.lo(2), "1e-5", 10, MPFR_RNDD);
    mpfr_set_str(k.hi(2), "1e-5", 10, MPFR_RNDU);
    mpfr_set_si(k.lo(3), head_width, MPFR_RNDN);
    mpfr_sqrt(k.lo(3), k.lo(3), MPFR_RNDD);
    mpfr_set_si(k.hi(3), head_width, MPFR_RNDN);
    mpfr_sqrt(k.hi(3), k.hi(3), MPFR_RNDU);
  }
};

constexpr mpfr_rnd_t D = MPFR_RNDD, U = MPFR_RNDU;

// [lo, hi] of the product of [al, ah] and [bl, bh] (no aliasing of the
// outputs with the inputs): the least of the four products rounded down
// and the largest rounded up.
void mul_iv(Mp* lo, Mp* hi, const Mp* al, const Mp* ah, const Mp* bl,
            const Mp* bh, Big& g) {
  const Mp* a[2] = {al, ah};
  const Mp* b[2] = {bl, bh};
  bool first = true;
  for (const Mp* x : a) {
    for (const Mp* y : b) {
      mpfr_mul(g.t.lo(7), x, y, D);
      mpfr_mul(g.t.hi(7), x, y, U);
      if (first || mpfr_less_p(g.t.lo(7), lo)) mpfr_set(lo, g.t.lo(7), D);
      if (first || mpfr_greater_p(g.t.hi(7), hi)) mpfr_set(hi, g.t.hi(7), U);
      first = false;
    }
  }
}

// acc += x * w for a binary32 weight w (exact in MPFR).
inline void addmul_w(BigVec& acc, size_t o, BigVec& x, size_t k, double w,
                     Big& g) {
  Mp* t = g.t.lo(6);
  if (w >= 0.0) {
    mpfr_mul_d(t, x.lo(k), w, D);
    mpfr_add(acc.lo(o), acc.lo(o), t, D);
    mpfr_mul_d(t, x.hi(k), w, U);
    mpfr_add(acc.hi(o), acc.hi(o), t, U);
  } else {
    mpfr_mul_d(t, x.hi(k), w, D);
    mpfr_add(acc.lo(o), acc.lo(o), t, D);
    mpfr_mul_d(t, x.lo(k), w, U);
    mpfr_add(acc.hi(o), acc.hi(o), t, U);
  }
}

// y[yo + o] = b[o] + sum_k x[xo + k] W[k][o], W input-major [K][N].
void big_matvec(BigVec& x, size_t xo, const float* W, const float* bias, int K,
                int N, BigVec& y, size_t yo, Big& g) {
  for (int o = 0; o < N; ++o) {
    mpfr_set_d(y.lo(yo + size_t(o)), bias[o], D);
    mpfr_set_d(y.hi(yo + size_t(o)), bias[o], U);
  }
  for (int k = 0; k < K; ++k) {
    const float* row = W + size_t(k) * size_t(N);
    for (int o = 0; o < N; ++o) {
      addmul_w(y, yo + size_t(o), x, xo + size_t(k), row[o], g);
    }
  }
}

// Real LayerNorm, dependency-aware (docs/certify.md §2, item 8): with S =
// sum x, d_k = ((n-1) x_k - R_k) / n where R_k = S - x_k is formed from
// S's bounds (S.lo - x_k.lo is a lower bound of the other terms' sum), so
// x_k is not counted twice; var = sum d_k^2 / n (squares, not products);
// y = d / sqrt(var + eps) * g + b.
void big_layernorm(BigVec& x, const float* gain, const float* bias, int n,
                   BigVec& d, BigVec& y, Big& g) {
  Mp *Sl = g.t.lo(0), *Sh = g.t.hi(0), *Vl = g.t.lo(1), *Vh = g.t.hi(1);
  Mp *Rl = g.t.lo(2), *Rh = g.t.hi(2), *ql = g.t.lo(3), *qh = g.t.hi(3);
  mpfr_set_zero(Sl, 1), mpfr_set_zero(Sh, 1);
  for (int k = 0; k < n; ++k) {
    mpfr_add(Sl, Sl, x.lo(size_t(k)), D);
    mpfr_add(Sh, Sh, x.hi(size_t(k)), U);
  }
  mpfr_set_zero(Vl, 1), mpfr_set_zero(Vh, 1);
  for (int k = 0; k < n; ++k) {
    const size_t i = size_t(k);
    mpfr_sub(Rl, Sl, x.lo(i), D);
    mpfr_sub(Rh, Sh, x.hi(i), U);
    mpfr_mul_si(ql, x.lo(i), n - 1, D);
    mpfr_sub(d.lo(i), ql, Rh, D);
    mpfr_div_si(d.lo(i), d.lo(i), n, D);
    mpfr_mul_si(qh, x.hi(i), n - 1, U);
    mpfr_sub(d.hi(i), qh, Rl, U);
    mpfr_div_si(d.hi(i), d.hi(i), n, U);
    // d_k^2: 0 when d_k straddles 0.
    if (mpfr_sgn(d.lo(i)) >= 0) {
      mpfr_sqr(ql, d.lo(i), D), mpfr_sqr(qh, d.hi(i), U);
    } else if (mpfr_sgn(d.hi(i)) <= 0) {
      mpfr_sqr(ql, d.hi(i), D), mpfr_sqr(qh, d.lo(i), U);
    } else {
      mpfr_set_zero(ql, 1);
      if (mpfr_cmpabs(d.lo(i), d.hi(i)) > 0) {
        mpfr_sqr(qh, d.lo(i), U);
      } else {
        mpfr_sqr(qh, d.hi(i), U);
      }
    }
    mpfr_add(Vl, Vl, ql, D);
    mpfr_add(Vh, Vh, qh, U);
  }
  // sd = sqrt(var + eps), var = V / n.
  mpfr_div_si(Vl, Vl, n, D), mpfr_div_si(Vh, Vh, n, U);
  mpfr_add(Vl, Vl, g.k.lo(2), D), mpfr_add(Vh, Vh, g.k.hi(2), U);
  mpfr_sqrt(Vl, Vl, D), mpfr_sqrt(Vh, Vh, U);
  for (int k = 0; k < n; ++k) {
    const size_t i = size_t(k);
    // d / sd with sd > 0: the low end divides by sd.hi when d.lo >= 0.
    mpfr_div(ql, d.lo(i), mpfr_sgn(d.lo(i)) >= 0 ? Vh : Vl, D);
    mpfr_div(qh, d.hi(i), mpfr_sgn(d.hi(i)) >= 0 ? Vl : Vh, U);
    const double w = gain[k];
    if (w >= 0.0) {
      mpfr_mul_d(y.lo(i), ql, w, D), mpfr_mul_d(y.hi(i), qh, w, U);
    } else {
      mpfr_mul_d(y.lo(i), qh, w, D), mpfr_mul_d(y.hi(i), ql, w, U);
    }
    mpfr_add_d(y.lo(i), y.lo(i), bias[k], D);
    mpfr_add_d(y.hi(i), y.hi(i), bias[k], U);
  }
}

// The real GELU on [lo, hi] in place: u = C (x + A x^3) is increasing in
// x, so its bounds come from the endpoints (x^3 and the products by the
// positive constants rounded the asked way); then x/2 (1 + tanh(u)) as an
// interval product.
void big_gelu(Mp* lo, Mp* hi, Big& g) {
  Mp *ul = g.t.lo(4), *uh = g.t.hi(4), *tl = g.t.lo(5), *th = g.t.hi(5);
  // u's lower end from lo, rounding down; the constant taken at the end
  // that makes the product smaller.
  auto u_end = [&](Mp* u, const Mp* x, mpfr_rnd_t r) {
    const bool down = r == D;
    mpfr_pow_ui(u, x, 3, r);
    const bool neg = mpfr_sgn(u) < 0;
    mpfr_mul(u, u, (neg == down) ? g.k.hi(1) : g.k.lo(1), r);
    mpfr_add(u, u, x, r);
    const bool neg2 = mpfr_sgn(u) < 0;
    mpfr_mul(u, u, (neg2 == down) ? g.k.hi(0) : g.k.lo(0), r);
  };
  u_end(ul, lo, D);
  u_end(uh, hi, U);
  mpfr_tanh(tl, ul, D), mpfr_tanh(th, uh, U);
  mpfr_add_ui(tl, tl, 1, D), mpfr_add_ui(th, th, 1, U);
  if (mpfr_sgn(tl) < 0) mpfr_set_zero(tl, 1);  // 1 + tanh >= 0
  mpfr_set(ul, lo, D), mpfr_set(uh, hi, U);
  mul_iv(lo, hi, ul, uh, tl, th, g);
  mpfr_div_2ui(lo, lo, 1, D), mpfr_div_2ui(hi, hi, 1, U);
}

}  // namespace

// The model's working buffers and its keys and values, at P bits.
struct IntervalGpt2::Impl {
  Big g;
  BigVec x, h, qkv, a, y, f, d, score, v;
  std::vector<std::unique_ptr<BigVec>> kv;  // per position: [layer][2C]
  Impl(const ls_gpt2_config& c, mpfr_prec_t p)
      : g(p, c.n_embd / c.n_head),
        x(size_t(c.n_embd), p),
        h(size_t(c.n_embd), p),
        qkv(3 * size_t(c.n_embd), p),
        a(size_t(c.n_embd), p),
        y(size_t(c.n_embd), p),
        f(4 * size_t(c.n_embd), p),
        d(size_t(c.n_embd), p),
        score(size_t(c.n_ctx), p),
        v(1, p) {}
};

IntervalGpt2::IntervalGpt2(const ls_gpt2_config& config, const float* weights,
                           size_t words, int precision)
    : c_(config), w_(weights) {
  if (!ls_gpt2_config_valid(&c_)) throw Error("certify: invalid GPT-2 config");
  if (!weights || words != ls_gpt2_param_count(&c_)) {
    throw Error("certify: the weights hold " + std::to_string(words) +
                " words, the config needs " +
                std::to_string(ls_gpt2_param_count(&c_)));
  }
  if (precision < 53 || precision > 4096) {
    throw Error("certify: precision " + std::to_string(precision) +
                " bits is outside [53, 4096]");
  }
  impl_ = std::make_unique<Impl>(c_, mpfr_prec_t(precision));
  hidden_.resize(size_t(c_.n_embd));
  constants();
}

IntervalGpt2::~IntervalGpt2() {
  impl_.reset();
  mpfr_free_cache();
}

void IntervalGpt2::step(int32_t token, bool want_logits) {
  if (token < 0 || token >= c_.n_vocab) {
    throw Error("certify: token " + std::to_string(token) +
                " is outside the vocabulary of " + std::to_string(c_.n_vocab));
  }
  if (position_ >= c_.n_ctx) {
    throw Error("certify: the context of " + std::to_string(c_.n_ctx) +
                " positions is full");
  }
  Impl& m = *impl_;
  Big& g = m.g;
  const int C = c_.n_embd, H = c_.n_head, Dh = C / H, t = position_;
  const size_t SC = size_t(C);
  m.kv.push_back(std::make_unique<BigVec>(size_t(c_.n_layer) * 2 * SC, g.p));
  // Embedding: wte[token] + wpe[t], rounded outward.
  const float* te = w_ + size_t(token) * SC;
  const float* pe = w_ + ls_gpt2_wpe_offset(&c_) + size_t(t) * SC;
  for (size_t i = 0; i < SC; ++i) {
    mpfr_set_d(m.x.lo(i), te[i], D), mpfr_add_d(m.x.lo(i), m.x.lo(i), pe[i], D);
    mpfr_set_d(m.x.hi(i), te[i], U), mpfr_add_d(m.x.hi(i), m.x.hi(i), pe[i], U);
  }
  Mp *sl = g.t.lo(0), *sh = g.t.hi(0), *cl = g.t.lo(1), *ch = g.t.hi(1);
  Mp *el = g.t.lo(2), *eh = g.t.hi(2), *top = g.t.lo(3);
  for (int l = 0; l < c_.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
    // Attention inputs: h = LN(x; ln_1), qkv = h . c_attn + b.
    big_layernorm(m.x, w_ + b.ln1_g, w_ + b.ln1_b, C, m.d, m.h, g);
    big_matvec(m.h, 0, w_ + b.attn_w, w_ + b.attn_b, C, 3 * C, m.qkv, 0, g);
    BigVec& row = *m.kv.back();
    const size_t lo_kv = size_t(l) * 2 * SC;
    for (size_t i = 0; i < 2 * SC; ++i) {
      mpfr_set(row.lo(lo_kv + i), m.qkv.lo(SC + i), D);
      mpfr_set(row.hi(lo_kv + i), m.qkv.hi(SC + i), U);
    }
    for (int hd = 0; hd < H; ++hd) {
      const size_t off = size_t(hd) * size_t(Dh);
      // Scores s_j = q . k_j / sqrt(D).
      for (int j = 0; j <= t; ++j) {
        BigVec& kj = *m.kv[size_t(j)];
        Mp *s_lo = m.score.lo(size_t(j)), *s_hi = m.score.hi(size_t(j));
        mpfr_set_zero(s_lo, 1), mpfr_set_zero(s_hi, 1);
        for (int dd = 0; dd < Dh; ++dd) {
          const size_t qi = off + size_t(dd), ki = lo_kv + off + size_t(dd);
          mul_iv(sl, sh, m.qkv.lo(qi), m.qkv.hi(qi), kj.lo(ki), kj.hi(ki), g);
          mpfr_add(s_lo, s_lo, sl, D), mpfr_add(s_hi, s_hi, sh, U);
        }
        mpfr_div(s_lo, s_lo, mpfr_sgn(s_lo) >= 0 ? g.k.hi(3) : g.k.lo(3), D);
        mpfr_div(s_hi, s_hi, mpfr_sgn(s_hi) >= 0 ? g.k.lo(3) : g.k.hi(3), U);
        if (j == 0 || mpfr_greater_p(s_hi, top)) mpfr_set(top, s_hi, U);
      }
      // Real softmax, shifted by top: e_j = exp(s_j - top), p_j = e_j / S.
      mpfr_set_zero(sl, 1), mpfr_set_zero(sh, 1);
      for (int j = 0; j <= t; ++j) {
        Mp *s_lo = m.score.lo(size_t(j)), *s_hi = m.score.hi(size_t(j));
        mpfr_sub(s_lo, s_lo, top, D), mpfr_exp(s_lo, s_lo, D);
        mpfr_sub(s_hi, s_hi, top, U), mpfr_exp(s_hi, s_hi, U);
        mpfr_add(sl, sl, s_lo, D), mpfr_add(sh, sh, s_hi, U);
      }
      for (int j = 0; j <= t; ++j) {
        Mp *p_lo = m.score.lo(size_t(j)), *p_hi = m.score.hi(size_t(j));
        mpfr_div(p_lo, p_lo, sh, D);
        mpfr_div(p_hi, p_hi, sl, U);
        if (mpfr_cmp_ui(p_hi, 1) > 0) mpfr_set_ui(p_hi, 1, U);
      }
      // sum_j p_j v_j = c + sum_j p_j (v_j - c) for any real c (the real
      // p_j sum to 1): c near the result removes most of the dependency.
      for (int dd = 0; dd < Dh; ++dd) {
        const size_t vi = lo_kv + SC + off + size_t(dd);
        double c0 = 0.0;
        for (int j = 0; j <= t; ++j) {
          BigVec& kj = *m.kv[size_t(j)];
          c0 += mpfr_get_d(m.score.lo(size_t(j)), MPFR_RNDN) *
                mpfr_get_d(kj.lo(vi), MPFR_RNDN);
        }
        Mp *al = m.a.lo(off + size_t(dd)), *ah = m.a.hi(off + size_t(dd));
        mpfr_set_d(al, c0, D), mpfr_set_d(ah, c0, U);
        for (int j = 0; j <= t; ++j) {
          BigVec& kj = *m.kv[size_t(j)];
          mpfr_sub_d(el, kj.lo(vi), c0, D), mpfr_sub_d(eh, kj.hi(vi), c0, U);
          // p >= 0 times [el, eh].
          Mp *p_lo = m.score.lo(size_t(j)), *p_hi = m.score.hi(size_t(j));
          mpfr_mul(cl, mpfr_sgn(el) >= 0 ? p_lo : p_hi, el, D);
          mpfr_mul(ch, mpfr_sgn(eh) >= 0 ? p_hi : p_lo, eh, U);
          mpfr_add(al, al, cl, D), mpfr_add(ah, ah, ch, U);
        }
      }
    }
    // Block tail: x += a . c_proj + b; x += gelu(LN(x) . c_fc + b) . c_proj
    // + b.
    big_matvec(m.a, 0, w_ + b.proj_w, w_ + b.proj_b, C, C, m.y, 0, g);
    for (size_t i = 0; i < SC; ++i) {
      mpfr_add(m.x.lo(i), m.x.lo(i), m.y.lo(i), D);
      mpfr_add(m.x.hi(i), m.x.hi(i), m.y.hi(i), U);
    }
    big_layernorm(m.x, w_ + b.ln2_g, w_ + b.ln2_b, C, m.d, m.h, g);
    big_matvec(m.h, 0, w_ + b.fc_w, w_ + b.fc_b, C, 4 * C, m.f, 0, g);
    for (size_t i = 0; i < 4 * SC; ++i) big_gelu(m.f.lo(i), m.f.hi(i), g);
    big_matvec(m.f, 0, w_ + b.out_w, w_ + b.out_b, 4 * C, C, m.y, 0, g);
    for (size_t i = 0; i < SC; ++i) {
      mpfr_add(m.x.lo(i), m.x.lo(i), m.y.lo(i), D);
      mpfr_add(m.x.hi(i), m.x.hi(i), m.y.hi(i), U);
    }
  }
  ++position_;
  if (!want_logits) {
    logits_.clear();
    return;
  }
  // Output: h = LN(x; ln_f) at P bits, rounded outward to binary64; the
  // head logits[v] = h . wte[v] in binary64 intervals (its own rounding
  // adds about C ulps, far below the widths that reach it).
  const size_t lnf = ls_gpt2_lnf_offset(&c_);
  big_layernorm(m.x, w_ + lnf, w_ + lnf + C, C, m.d, m.h, g);
  for (size_t i = 0; i < SC; ++i) {
    hidden_[i] = {mpfr_get_d(m.h.lo(i), D), mpfr_get_d(m.h.hi(i), U)};
  }
  logits_.resize(size_t(c_.n_vocab));
  for (int v = 0; v < c_.n_vocab; ++v) {
    logits_[size_t(v)] = row_dot(hidden_.data(), w_ + size_t(v) * SC, C);
  }
}

Interval IntervalGpt2::logit_difference(int32_t a, int32_t b) const {
  const size_t C = size_t(c_.n_embd);
  const float* ra = w_ + size_t(a) * C;
  const float* rb = w_ + size_t(b) * C;
  Interval s = point(0.0);
  for (size_t k = 0; k < C; ++k) {
    s = add(s, mul(hidden_[k], sub(point(ra[k]), point(rb[k]))));
  }
  return s;
}

ChoiceCertificate certify_choice(const IntervalGpt2& model, int32_t chosen,
                                 int max_difference_checks) {
  const std::vector<Interval>& L = model.logits();
  if (L.empty()) throw Error("certify: the last step computed no logits");
  if (chosen < 0 || size_t(chosen) >= L.size()) {
    throw Error("certify: chosen token " + std::to_string(chosen) +
                " is outside the vocabulary");
  }
  ChoiceCertificate r;
  r.chosen = chosen;
  r.chosen_logit = L[size_t(chosen)];
  r.rival_hi = -kInf;
  std::vector<int32_t> overlap;
  const double clo = r.chosen_logit.lo;
  bool finite = true;
  for (size_t v = 0; v < L.size(); ++v) {
    finite = finite && std::isfinite(L[v].lo) && std::isfinite(L[v].hi);
    r.max_width = std::max(r.max_width, L[v].width());
    if (int32_t(v) == chosen) continue;
    if (L[v].hi > r.rival_hi || r.rival < 0) {
      r.rival = int32_t(v);
      r.rival_hi = L[v].hi;
    }
    if (!(L[v].hi < clo)) overlap.push_back(int32_t(v));
  }
  r.margin = clo - r.rival_hi;
  r.overlapping = int32_t(overlap.size());
  if (!finite) return r;  // an overflowed enclosure certifies nothing
  if (overlap.empty()) {
    r.certified = true;
    return r;
  }
  if (r.overlapping > max_difference_checks) return r;
  r.difference_margin = kInf;
  bool all = true;
  for (int32_t v : overlap) {
    const Interval d = model.logit_difference(chosen, v);
    r.difference_margin = std::min(r.difference_margin, d.lo);
    all = all && d.lo > 0.0;
  }
  r.certified = all;
  return r;
}

}  // namespace lockstep
