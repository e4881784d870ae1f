// Certificates for the tiny binary64 models: docs/certify-tiny.md. Every
// interval operation below rounds to nearest (the default mode; the build
// has -ffp-contract=off) and then widens the result by one ulp each way:
// the exact result lies within half an ulp of the rounded one, so the
// widened interval contains it (also at overflow and in the subnormals).
#include "lib/tiny_certify.h"

#include <mpfr.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "lockstep/error.h"
#include "ls_arith.h"
#include "ls_ops64.h"
#include "ls_tiny.h"

namespace lockstep::tiny_certify {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kGoal = 1e-9;  // issue 14's goal per logit

// Inlined everywhere: the batched sweep's loops over lanes vectorize only
// when their bodies hold no calls.
#define LS_INLINE inline __attribute__((always_inline))

// The next binary64 above / below x (NaN stays NaN). Branch-free, so that
// the batched sweep's loops over 256 lanes vectorize: y = x + 0.0 turns
// -0 into +0 (round to nearest) and leaves every other x alone; for y >= 0
// the next binary64 up has the bit pattern plus one (+0 -> 2^-1074), for y
// < 0 minus one (-inf -> -DBL_MAX, -2^-1074 -> -0); +inf stays +inf.
LS_INLINE double up(double x) {
  const double y = x + 0.0;
  const int64_t b = std::bit_cast<int64_t>(y);
  const double r = std::bit_cast<double>(b + (y < 0.0 ? -1 : 1));
  return (x == kInf || x != x) ? x : r;
}
LS_INLINE double dn(double x) { return -up(-x); }

LS_INLINE Iv pt(double x) { return {x, x}; }
// Every real within one ulp of x (a constant rounded to nearest).
LS_INLINE Iv ulp1(double x) { return {dn(x), up(x)}; }
LS_INLINE Iv add(Iv a, Iv b) { return {dn(a.lo + b.lo), up(a.hi + b.hi)}; }
LS_INLINE Iv sub(Iv a, Iv b) { return {dn(a.lo - b.hi), up(a.hi - b.lo)}; }
LS_INLINE Iv mulw(Iv a, double w) {
  return w >= 0 ? Iv{dn(a.lo * w), up(a.hi * w)}
                : Iv{dn(a.hi * w), up(a.lo * w)};
}
LS_INLINE Iv mul(Iv a, Iv b) {
  const double p1 = a.lo * b.lo, p2 = a.lo * b.hi, p3 = a.hi * b.lo,
               p4 = a.hi * b.hi;
  return {dn(std::min(std::min(p1, p2), std::min(p3, p4))),
          up(std::max(std::max(p1, p2), std::max(p3, p4)))};
}
LS_INLINE Iv sqr(Iv a) {
  const double l = a.lo * a.lo, h = a.hi * a.hi;
  if (a.lo >= 0) return {dn(l), up(h)};
  if (a.hi <= 0) return {dn(h), up(l)};
  return {0.0, up(std::max(l, h))};
}
// a / b for b.lo > 0.
LS_INLINE Iv divp(Iv a, Iv b) {
  const double lo = a.lo >= 0 ? a.lo / b.hi : a.lo / b.lo;
  const double hi = a.hi >= 0 ? a.hi / b.lo : a.hi / b.hi;
  return {dn(lo), up(hi)};
}
LS_INLINE Iv sqrtp(Iv a) {  // a.lo >= 0; IEEE sqrt is correctly rounded
  return {dn(std::sqrt(a.lo)), up(std::sqrt(a.hi))};
}
LS_INLINE double mag(Iv a) { return std::max(-a.lo, a.hi); }

// Real constants: eps = 10^-5, sqrt(2), sqrt(2/pi), 0.044715. Each binary64
// below is the constant rounded to nearest (eps and sqrt(2) are the code's
// own; sqrt(2/pi) and 0.044715 the GELU's, docs/numerics.md §2.2), so the
// one-ulp interval around it contains the real constant.
const Iv kEps = ulp1(0x1.4f8b588e368f1p-17);
const Iv kSqrt2 = ulp1(0x1.6a09e667f3bcdp+0);
const Iv kGeluC = ulp1(0x1.9884533d43651p-1);
const Iv kGeluA = ulp1(0x1.6e4e26d4801f7p-5);
// Upper bound of sqrt(3): |D[k]| / F(D) <= sqrt(3) for a mean-zero 4-vector.
constexpr double kSqrt3Up = 0x1.bb67ae8584cabp+0;  // > sqrt(3)

// The real LayerNorm (n = 4) over intervals, naively: each deviation is
// written so that every input appears once, D[k] = (3 x[k] - sum_{i != k}
// x[i]) / 4. Returns the enclosure of F = sqrt(var + eps) over the box.
LS_INLINE Iv layernorm_naive(const Iv* x, const double* g, const double* b,
                             Iv* y) {
  Iv d[4];
  for (int k = 0; k < 4; ++k) {
    Iv others{0.0, 0.0};
    bool first = true;
    for (int i = 0; i < 4; ++i) {
      if (i == k) continue;
      others = first ? x[i] : add(others, x[i]);
      first = false;
    }
    d[k] = mulw(sub(mulw(x[k], 3.0), others), 0.25);
  }
  Iv s = sqr(d[0]);
  for (int k = 1; k < 4; ++k) s = add(s, sqr(d[k]));
  const Iv F = sqrtp(add(mulw(s, 0.25), kEps));
  for (int k = 0; k < 4; ++k) {
    Iv z = divp(d[k], F);
    z.lo = std::max(z.lo, -kSqrt3Up);
    z.hi = std::min(z.hi, kSqrt3Up);
    y[k] = add(mulw(z, g[k]), pt(b[k]));
  }
  return F;
}

// The real LayerNorm over a box: the naive enclosure intersected with the
// centred one. With c the box's centre and r its radii, z = D / F(D) and D
// = x - mean(x): the Jacobian of D -> D / F(D) is (I - z z^T / 4) / F, of
// 2-norm 1 / F, and x -> D is an orthogonal projection, so on the segment
// from c to any x of the box (where F >= F.lo) |z_k(x) - z_k(c)| <=
// ||x - c||_2 / F.lo (docs/certify-tiny.md, "LayerNorm's enclosure").
LS_INLINE void layernorm_iv(const Iv* x, const double* g, const double* b,
                            Iv* y) {
  const Iv F = layernorm_naive(x, g, b, y);
  Iv c[4], yc[4];
  double r2 = 0.0;
  for (int k = 0; k < 4; ++k) {
    const double m = 0.5 * x[k].lo + 0.5 * x[k].hi;
    const double r = std::max(up(x[k].hi - m), up(m - x[k].lo));
    r2 = up(r2 + up(r * r));
    c[k] = pt(m);
  }
  layernorm_naive(c, g, b, yc);
  const double rad = up(up(std::sqrt(r2)) / F.lo);
  for (int k = 0; k < 4; ++k) {
    const double e = up(rad * std::fabs(g[k]));
    y[k].lo = std::max(y[k].lo, dn(yc[k].lo - e));
    y[k].hi = std::min(y[k].hi, up(yc[k].hi + e));
  }
}

// y[o] = sum_k x[k] W[k][o] (+ b[o]) for a Conv1D W, in intervals.
LS_INLINE void matvec_iv(const Iv* x, const double* w, const double* b,
                         int n_in, int n_out, Iv* y) {
  for (int o = 0; o < n_out; ++o) {
    Iv s = mulw(x[0], w[o]);
    for (int k = 1; k < n_in; ++k) s = add(s, mulw(x[k], w[k * n_out + o]));
    y[o] = b ? add(s, pt(b[o])) : s;
  }
}

// The real softmax of interval scores: p[j] = E[j] / (E[j] + R[j]) with
// E[i] = exp(S[i] - c) for any real c (here the largest upper end) and
// R[j] = sum_{i != j} E[i]; increasing in E[j], decreasing in R[j].
void softmax_iv(const Iv* s, int n, Iv* p, Iv* e) {
  double c = s[0].hi;
  for (int j = 1; j < n; ++j) c = std::max(c, s[j].hi);
  double tlo = 0.0, thi = 0.0;
  for (int j = 0; j < n; ++j) {
    const Iv d = sub(s[j], pt(c));
    e[j] = exp_iv(d);
    tlo = dn(tlo + e[j].lo);
    thi = up(thi + e[j].hi);
  }
  for (int j = 0; j < n; ++j) {
    const double rlo = std::max(0.0, dn(tlo - e[j].lo));
    const double rhi = std::max(0.0, up(thi - e[j].hi));
    double lo = e[j].lo > 0 ? dn(e[j].lo / up(e[j].lo + rhi)) : 0.0;
    double hi = e[j].hi > 0 ? up(e[j].hi / dn(e[j].hi + rlo)) : 0.0;
    p[j] = {std::max(0.0, lo), std::min(1.0, hi)};
  }
}

// One position's embedding, ln_1 and q, k, v enclosed in MPFR intervals
// with directed roundings at 256 bits (lower ends rounded down, upper ends
// up, at every step), then converted to binary64 outward: the rows are
// within an ulp or two of the real values, however ill-conditioned ln_1
// is at them (a LayerNorm input of small variance). Same formulas as
// layernorm_naive.
class MpIv {
 public:
  MpIv() { mpfr_init2(lo, 256), mpfr_init2(hi, 256); }
  ~MpIv() { mpfr_clear(lo), mpfr_clear(hi); }
  MpIv(const MpIv&) = delete;
  MpIv& operator=(const MpIv&) = delete;
  mpfr_t lo, hi;
};
// r = a * w (+ b) for binary64 w (and b); r may be a.
void mp_mul_add(MpIv& r, const MpIv& a, double w, const double* b) {
  MpIv t;
  if (w >= 0) {
    mpfr_mul_d(t.lo, a.lo, w, MPFR_RNDD), mpfr_mul_d(t.hi, a.hi, w, MPFR_RNDU);
  } else {
    mpfr_mul_d(t.lo, a.hi, w, MPFR_RNDD), mpfr_mul_d(t.hi, a.lo, w, MPFR_RNDU);
  }
  if (b) {
    mpfr_add_d(t.lo, t.lo, *b, MPFR_RNDD),
        mpfr_add_d(t.hi, t.hi, *b, MPFR_RNDU);
  }
  mpfr_set(r.lo, t.lo, MPFR_RNDD), mpfr_set(r.hi, t.hi, MPFR_RNDU);
}
void row_enclosure(const double* te, const double* pe, const double* g,
                   const double* b, const double* W, Iv* X, Iv* QKV) {
  MpIv x[4], d[4], y[4], s, F, t, eps;
  mpfr_set_str(eps.lo, "1e-5", 10, MPFR_RNDD);
  mpfr_set_str(eps.hi, "1e-5", 10, MPFR_RNDU);
  for (int k = 0; k < 4; ++k) {
    mpfr_set_d(x[k].lo, te[k], MPFR_RNDD);
    mpfr_add_d(x[k].lo, x[k].lo, pe[k], MPFR_RNDD);
    mpfr_set_d(x[k].hi, te[k], MPFR_RNDU);
    mpfr_add_d(x[k].hi, x[k].hi, pe[k], MPFR_RNDU);
    X[k] = {mpfr_get_d(x[k].lo, MPFR_RNDD), mpfr_get_d(x[k].hi, MPFR_RNDU)};
  }
  mpfr_set_zero(s.lo, 1), mpfr_set_zero(s.hi, 1);
  for (int k = 0; k < 4; ++k) {
    // d = (3 x[k] - sum_{i != k} x[i]) / 4
    mpfr_mul_ui(d[k].lo, x[k].lo, 3, MPFR_RNDD);
    mpfr_mul_ui(d[k].hi, x[k].hi, 3, MPFR_RNDU);
    for (int i = 0; i < 4; ++i) {
      if (i == k) continue;
      mpfr_sub(d[k].lo, d[k].lo, x[i].hi, MPFR_RNDD);
      mpfr_sub(d[k].hi, d[k].hi, x[i].lo, MPFR_RNDU);
    }
    mpfr_div_ui(d[k].lo, d[k].lo, 4, MPFR_RNDD);
    mpfr_div_ui(d[k].hi, d[k].hi, 4, MPFR_RNDU);
    // s += d^2
    if (mpfr_sgn(d[k].lo) >= 0) {
      mpfr_sqr(t.lo, d[k].lo, MPFR_RNDD), mpfr_sqr(t.hi, d[k].hi, MPFR_RNDU);
    } else if (mpfr_sgn(d[k].hi) <= 0) {
      mpfr_sqr(t.lo, d[k].hi, MPFR_RNDD), mpfr_sqr(t.hi, d[k].lo, MPFR_RNDU);
    } else {
      mpfr_set_zero(t.lo, 1);
      mpfr_sqr(t.hi, d[k].lo, MPFR_RNDU), mpfr_sqr(F.hi, d[k].hi, MPFR_RNDU);
      mpfr_max(t.hi, t.hi, F.hi, MPFR_RNDU);
    }
    mpfr_add(s.lo, s.lo, t.lo, MPFR_RNDD),
        mpfr_add(s.hi, s.hi, t.hi, MPFR_RNDU);
  }
  mpfr_div_ui(F.lo, s.lo, 4, MPFR_RNDD), mpfr_div_ui(F.hi, s.hi, 4, MPFR_RNDU);
  mpfr_add(F.lo, F.lo, eps.lo, MPFR_RNDD),
      mpfr_add(F.hi, F.hi, eps.hi, MPFR_RNDU);
  mpfr_sqrt(F.lo, F.lo, MPFR_RNDD), mpfr_sqrt(F.hi, F.hi, MPFR_RNDU);
  for (int k = 0; k < 4; ++k) {  // y = (d / F) g + b, F > 0
    mpfr_div(y[k].lo, d[k].lo, mpfr_sgn(d[k].lo) >= 0 ? F.hi : F.lo, MPFR_RNDD);
    mpfr_div(y[k].hi, d[k].hi, mpfr_sgn(d[k].hi) >= 0 ? F.lo : F.hi, MPFR_RNDU);
    mp_mul_add(y[k], y[k], g[k], &b[k]);
  }
  for (int o = 0; o < 12; ++o) {
    MpIv acc, p;
    mpfr_set_zero(acc.lo, 1), mpfr_set_zero(acc.hi, 1);
    for (int k = 0; k < 4; ++k) {
      mp_mul_add(p, y[k], W[k * 12 + o], nullptr);
      mpfr_add(acc.lo, acc.lo, p.lo, MPFR_RNDD);
      mpfr_add(acc.hi, acc.hi, p.hi, MPFR_RNDU);
    }
    QKV[o] = {mpfr_get_d(acc.lo, MPFR_RNDD), mpfr_get_d(acc.hi, MPFR_RNDU)};
  }
}

// MPFR intervals with value semantics (256 bits, directed roundings),
// for the second pass: the whole model of one input, used where the
// binary64 boxes give a bound above the goal.
class MI {
 public:
  MI() { init(), mpfr_set_zero(lo, 1), mpfr_set_zero(hi, 1); }
  explicit MI(double a) {
    init(), mpfr_set_d(lo, a, MPFR_RNDD), mpfr_set_d(hi, a, MPFR_RNDU);
  }
  explicit MI(const char* dec) {
    init(), mpfr_set_str(lo, dec, 10, MPFR_RNDD);
    mpfr_set_str(hi, dec, 10, MPFR_RNDU);
  }
  MI(const MI& o) {
    init(), mpfr_set(lo, o.lo, MPFR_RNDD), mpfr_set(hi, o.hi, MPFR_RNDU);
  }
  MI& operator=(const MI& o) {
    if (this != &o)
      mpfr_set(lo, o.lo, MPFR_RNDD), mpfr_set(hi, o.hi, MPFR_RNDU);
    return *this;
  }
  ~MI() { mpfr_clear(lo), mpfr_clear(hi); }
  Iv iv() const {
    return {mpfr_get_d(lo, MPFR_RNDD), mpfr_get_d(hi, MPFR_RNDU)};
  }
  mpfr_t lo, hi;

 private:
  void init() { mpfr_init2(lo, 256), mpfr_init2(hi, 256); }
};
MI operator+(const MI& a, const MI& b) {
  MI r;
  mpfr_add(r.lo, a.lo, b.lo, MPFR_RNDD), mpfr_add(r.hi, a.hi, b.hi, MPFR_RNDU);
  return r;
}
MI operator-(const MI& a, const MI& b) {
  MI r;
  mpfr_sub(r.lo, a.lo, b.hi, MPFR_RNDD), mpfr_sub(r.hi, a.hi, b.lo, MPFR_RNDU);
  return r;
}
// Each end product enclosed by its two directed roundings; the range of
// a b over the box is within their min and max.
MI operator*(const MI& a, const MI& b) {
  MI r, t;
  const mpfr_srcptr x[2] = {a.lo, a.hi}, y[2] = {b.lo, b.hi};
  bool first = true;
  for (auto* u : x) {
    for (auto* v : y) {
      mpfr_mul(t.lo, u, v, MPFR_RNDD), mpfr_mul(t.hi, u, v, MPFR_RNDU);
      if (first || mpfr_less_p(t.lo, r.lo)) mpfr_set(r.lo, t.lo, MPFR_RNDD);
      if (first || mpfr_greater_p(t.hi, r.hi)) mpfr_set(r.hi, t.hi, MPFR_RNDU);
      first = false;
    }
  }
  return r;
}
MI divp(const MI& a, const MI& b) {  // b.lo > 0
  MI r;
  mpfr_div(r.lo, a.lo, mpfr_sgn(a.lo) >= 0 ? b.hi : b.lo, MPFR_RNDD);
  mpfr_div(r.hi, a.hi, mpfr_sgn(a.hi) >= 0 ? b.lo : b.hi, MPFR_RNDU);
  return r;
}
MI sqr(const MI& a) {
  MI r = a * a;
  if (mpfr_sgn(r.lo) < 0) mpfr_set_zero(r.lo, 1);
  return r;
}
MI sqrtm(const MI& a) {  // a.lo >= 0
  MI r;
  mpfr_sqrt(r.lo, a.lo, MPFR_RNDD), mpfr_sqrt(r.hi, a.hi, MPFR_RNDU);
  return r;
}
MI expm(const MI& a) {  // exp is increasing
  MI r;
  mpfr_exp(r.lo, a.lo, MPFR_RNDD), mpfr_exp(r.hi, a.hi, MPFR_RNDU);
  return r;
}
MI pi_mi() {
  MI r;
  mpfr_const_pi(r.lo, MPFR_RNDD), mpfr_const_pi(r.hi, MPFR_RNDU);
  return r;
}

void layernorm_mi(const MI* x, const double* g, const double* b, MI* y) {
  MI d[4], s;
  for (int k = 0; k < 4; ++k) {
    MI others;
    for (int i = 0; i < 4; ++i)
      if (i != k) others = others + x[i];
    d[k] = (MI(3.0) * x[k] - others) * MI(0.25);
    s = s + sqr(d[k]);
  }
  const MI F = sqrtm(s * MI(0.25) + MI("1e-5"));
  for (int k = 0; k < 4; ++k) y[k] = divp(d[k], F) * MI(g[k]) + MI(b[k]);
}
void matvec_mi(const MI* x, const double* w, const double* b, int n_in,
               int n_out, MI* y) {
  for (int o = 0; o < n_out; ++o) {
    MI s;
    for (int k = 0; k < n_in; ++k) s = s + x[k] * MI(w[k * n_out + o]);
    y[o] = b ? s + MI(b[o]) : s;
  }
}

// The real model of one input, the last position's ln_f output, in MPFR
// intervals (no shift is needed in the softmax: MPFR's exponent range).
void real_tail_mi(const double* w, int n_ctx, const int32_t* tok, int n,
                  MI* hf) {
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  std::vector<MI> X(size_t(n) * 4), QKV(size_t(n) * 12);
  MI h[4];
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < 4; ++i)
      X[size_t(t) * 4 + i] = MI(w[L.wte + size_t(tok[t]) * 4 + i]) +
                             MI(w[L.wpe + size_t(t) * 4 + i]);
    layernorm_mi(&X[size_t(t) * 4], w + L.ln1_g, w + L.ln1_b, h);
    matvec_mi(h, w + L.qkv_w, nullptr, 4, 12, &QKV[size_t(t) * 12]);
  }
  const int t = n - 1;
  const MI sqrt2 = sqrtm(MI(2.0));
  MI a[4];
  std::vector<MI> E(n);
  for (int head = 0; head < 2; ++head) {
    for (int j = 0; j < n; ++j)
      E[j] = expm(divp(
          QKV[size_t(t) * 12 + 2 * head] * QKV[size_t(j) * 12 + 4 + 2 * head] +
              QKV[size_t(t) * 12 + 2 * head + 1] *
                  QKV[size_t(j) * 12 + 4 + 2 * head + 1],
          sqrt2));
    MI total;
    for (int j = 0; j < n; ++j) total = total + E[j];
    for (int j = 0; j < n; ++j) {
      // p = E / (E + R), R = total - E at each end (R >= 0).
      MI R, p, den;
      mpfr_sub(R.lo, total.lo, E[j].lo, MPFR_RNDD);
      mpfr_sub(R.hi, total.hi, E[j].hi, MPFR_RNDU);
      if (mpfr_sgn(R.lo) < 0) mpfr_set_zero(R.lo, 1);
      mpfr_add(den.hi, E[j].lo, R.hi, MPFR_RNDU);
      mpfr_div(p.lo, E[j].lo, den.hi, MPFR_RNDD);
      mpfr_add(den.lo, E[j].hi, R.lo, MPFR_RNDD);
      mpfr_div(p.hi, E[j].hi, den.lo, MPFR_RNDU);
      for (int d = 0; d < 2; ++d)
        a[2 * head + d] =
            a[2 * head + d] + p * QKV[size_t(j) * 12 + 8 + 2 * head + d];
    }
  }
  MI y[4], x1[4], f[8];
  matvec_mi(a, w + L.proj_w, w + L.proj_b, 4, 4, y);
  for (int i = 0; i < 4; ++i) x1[i] = X[size_t(t) * 4 + i] + y[i];
  layernorm_mi(x1, w + L.ln2_g, w + L.ln2_b, h);
  matvec_mi(h, w + L.fc_w, w + L.fc_b, 4, 8, f);
  const MI C = sqrtm(divp(MI(2.0), pi_mi())), A("0.044715");
  for (MI& v : f) {
    // G = (x / 2) W, W = 2 / (1 + exp(-2U)) increasing in U.
    const MI U = C * (v + A * (v * v * v));
    MI W, e;
    mpfr_mul_si(e.hi, U.lo, -2, MPFR_RNDU);
    mpfr_exp(e.hi, e.hi, MPFR_RNDU);
    mpfr_add_ui(e.hi, e.hi, 1, MPFR_RNDU);
    mpfr_ui_div(W.lo, 2, e.hi, MPFR_RNDD);
    mpfr_mul_si(e.lo, U.hi, -2, MPFR_RNDD);
    mpfr_exp(e.lo, e.lo, MPFR_RNDD);
    mpfr_add_ui(e.lo, e.lo, 1, MPFR_RNDD);
    mpfr_ui_div(W.hi, 2, e.lo, MPFR_RNDU);
    v = (v * MI(0.5)) * W;
  }
  matvec_mi(f, w + L.out_w, w + L.out_b, 8, 4, y);
  for (int i = 0; i < 4; ++i) x1[i] = x1[i] + y[i];
  layernorm_mi(x1, w + L.lnf_g, w + L.lnf_b, hf);
}

// The clipped copy of validated weights (the checked entry's clipping).
std::vector<double> validated_clipped(int n_ctx, std::span<const double> w,
                                      double bound) {
  // The checked entry validates everything and reports any problem; a
  // one-token call costs little.
  const int32_t t0 = 0;
  (void)tiny_logits(n_ctx, w, std::span<const int32_t>(&t0, 1), bound);
  std::vector<double> c(w.begin(), w.end());
  for (double& v : c) v = v > bound ? bound : (v < -bound ? -bound : v);
  return c;
}

constexpr double kSqrtHeadDim = 0x1.6a09e667f3bcdp+0;  // ls_tiny.c's divisor

}  // namespace

double exp_lower(double z) {
  if (z > 709.0) z = 709.0;  // exp is increasing
  const double t = dn(ls_exp64(z) - 0x1p-1074);
  if (t <= 0) return 0.0;
  // exp(z) >= (c - eta) / (1 + rho) >= (c - eta)(1 - 2^-51).
  return std::max(0.0, dn(t * (1.0 - 0x1p-51)));
}

double exp_upper(double z) {
  if (z > 709.0) return kInf;
  // exp(z) <= (c + eta) / (1 - rho) <= (c + eta)(1 + 2^-51).
  return up(up(ls_exp64(z) + 0x1p-1074) * (1.0 + 0x1p-51));
}

// exp over [a, b]: for a narrow interval one ls_exp64 call, exp(b) =
// exp(a) e^w <= exp(a) (1 + 2w) for w = b - a <= 1.
Iv exp_iv(Iv d) {
  const double w = up(d.hi - d.lo);
  if (d.hi > 709.0 || !(w <= 0x1p-20))
    return {exp_lower(d.lo), exp_upper(d.hi)};
  const double c = ls_exp64(d.lo);
  const double t = dn(c - 0x1p-1074);
  const double lo = t <= 0 ? 0.0 : std::max(0.0, dn(t * (1.0 - 0x1p-51)));
  const double hi =
      up(up(up(c + 0x1p-1074) * (1.0 + 0x1p-51)) * up(1.0 + up(2.0 * w)));
  return {lo, hi};
}

// G(x) = (x / 2) W(U), W(U) = 1 + tanh(U) = 2 / (1 + exp(-2U)) increasing
// in U, U = C (x + A x^3).
Iv gelu_enclosure(Iv x) {
  const Iv x3 = mul(sqr(x), x);
  const Iv U = mul(kGeluC, add(x, mul(kGeluA, x3)));
  const Iv e = exp_iv({-2.0 * U.hi, -2.0 * U.lo});
  const double wlo = dn(2.0 / up(1.0 + e.hi));
  const double whi = up(2.0 / dn(1.0 + e.lo));
  const Iv W{std::max(0.0, wlo), std::min(whi, up(2.0))};
  return mul(mulw(x, 0.5), W);
}

Certificate certify_tiny(int n_ctx, std::span<const double> weights,
                         std::span<const int32_t> tokens, double bound) {
  Certificate c;
  c.computed = tiny_logits(n_ctx, weights, tokens, bound);  // validates
  const std::vector<double> w = validated_clipped(n_ctx, weights, bound);
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  const int n = int(tokens.size());
  std::vector<Iv> X(size_t(n) * 4), QKV(size_t(n) * 12);
  Iv h[4];
  for (int t = 0; t < n; ++t) {
    row_enclosure(&w[L.wte + size_t(tokens[t]) * 4], &w[L.wpe + size_t(t) * 4],
                  &w[L.ln1_g], &w[L.ln1_b], &w[L.qkv_w], &X[size_t(t) * 4],
                  &QKV[size_t(t) * 12]);
  }
  const int t = n - 1;
  const Iv* q = &QKV[size_t(t) * 12];
  std::vector<Iv> S(n), P(n), E(n);
  Iv a[4];
  for (int head = 0; head < 2; ++head) {
    for (int j = 0; j < n; ++j) {
      const Iv* k = &QKV[size_t(j) * 12 + 4 + head * 2];
      S[j] =
          divp(add(mul(q[head * 2], k[0]), mul(q[head * 2 + 1], k[1])), kSqrt2);
    }
    softmax_iv(S.data(), n, P.data(), E.data());
    for (int d = 0; d < 2; ++d) {
      Iv acc{0.0, 0.0};
      for (int j = 0; j < n; ++j)
        acc = add(acc, mul(P[j], QKV[size_t(j) * 12 + 8 + head * 2 + d]));
      a[head * 2 + d] = acc;
    }
  }
  Iv y[4], x1[4], f[8], x2[4], logit[256];
  matvec_iv(a, &w[L.proj_w], &w[L.proj_b], 4, 4, y);
  for (int i = 0; i < 4; ++i) x1[i] = add(X[size_t(t) * 4 + i], y[i]);
  layernorm_iv(x1, &w[L.ln2_g], &w[L.ln2_b], h);
  matvec_iv(h, &w[L.fc_w], &w[L.fc_b], 4, 8, f);
  for (Iv& v : f) v = gelu_enclosure(v);
  matvec_iv(f, &w[L.out_w], &w[L.out_b], 8, 4, y);
  for (int i = 0; i < 4; ++i) x2[i] = add(x1[i], y[i]);
  layernorm_iv(x2, &w[L.lnf_g], &w[L.lnf_b], h);
  matvec_iv(h, &w[L.head_w], &w[L.head_b], 4, 256, logit);
  // Second pass for an input above the goal: the whole model in MPFR
  // intervals; each logit keeps the tighter of the two enclosures'
  // intersection (both contain the real logit).
  bool refine = false;
  for (int o = 0; o < 256; ++o) {
    const double v = c.computed[o];
    refine |= std::max(v - logit[o].lo, logit[o].hi - v) > kGoal;
  }
  if (refine) {
    MI hf[4], lm[256];
    real_tail_mi(w.data(), n_ctx, tokens.data(), n, hf);
    matvec_mi(hf, &w[L.head_w], &w[L.head_b], 4, 256, lm);
    for (int o = 0; o < 256; ++o) {
      const Iv m = lm[o].iv();
      logit[o] = {std::max(logit[o].lo, m.lo), std::min(logit[o].hi, m.hi)};
    }
  }
  for (int o = 0; o < 256; ++o) {
    c.real[o] = logit[o];
    const double v = c.computed[o];
    c.bound[o] = std::max(up(v - logit[o].lo), up(logit[o].hi - v));
    c.max_bound = std::max(c.max_bound, c.bound[o]);
  }
  return c;
}

// ---------------------------------------------------------------- sweep

Tiny4Sweep::Tiny4Sweep(std::span<const double> weights, double bound)
    : w_(validated_clipped(4, weights, bound)), B_(bound), rows_(4 * 256) {
  const ls_tiny_layout L = ls_tiny_layout_for(4);
  const double* w = w_.data();
  for (int t = 0; t < 4; ++t) {
    for (int b = 0; b < 256; ++b) {
      Row& r = rows_[size_t(t) * 256 + b];
      // The engine's lines (core/ls_tiny.c §4.1-4.2), the same calls.
      double h[4], qkv[12];
      for (int i = 0; i < 4; ++i)
        r.x[i] = w[L.wte + size_t(b) * 4 + i] + w[L.wpe + size_t(t) * 4 + i];
      ls_layernorm64(r.x, w + L.ln1_g, w + L.ln1_b, 4, h);
      ls_matvec64(h, w + L.qkv_w, 0, 4, 12, qkv);
      for (int i = 0; i < 4; ++i) {
        r.q[i] = qkv[i], r.k[i] = qkv[4 + i], r.v[i] = qkv[8 + i];
      }
      Iv QKV[12];
      row_enclosure(w + L.wte + size_t(b) * 4, w + L.wpe + size_t(t) * 4,
                    w + L.ln1_g, w + L.ln1_b, w + L.qkv_w, r.X, QKV);
      for (int i = 0; i < 4; ++i) {
        r.Q[i] = QKV[i], r.K[i] = QKV[4 + i], r.V[i] = QKV[8 + i];
      }
    }
  }
  for (int k = 0; k < 4; ++k) {
    colmax_[k] = 0.0;
    for (int o = 0; o < 256; ++o)
      colmax_[k] = std::max(colmax_[k], std::fabs(w[L.head_w + k * 256 + o]));
  }
  bmax_ = 0.0;
  for (int o = 0; o < 256; ++o)
    bmax_ = std::max(bmax_, std::fabs(w[L.head_b + o]));
  build_soa();
}

// The last position (t = 3) from its rows: the engine's tail in
// core/ls_tiny.c's order and calls (h: ln_f's output), and the interval
// tail (H).
void Tiny4Sweep::tail(const Row* rows[4], double* h, Iv* H) const {
  const ls_tiny_layout L = ls_tiny_layout_for(4);
  const double* w = w_.data();
  const Row& last = *rows[3];
  // Computed.
  double v[16], score[4], a[4], y[4], x[4], f[8];
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 4; ++i) v[j * 4 + i] = rows[j]->v[i];
  for (int head = 0; head < 2; ++head) {
    for (int j = 0; j < 4; ++j)
      score[j] = ls_dot64(last.q + head * 2, rows[j]->k + head * 2, 2, 1) /
                 kSqrtHeadDim;
    ls_softmax64(score, 4, score);
    ls_weighted_sum64(score, v + head * 2, 4, 4, 2, a + head * 2);
  }
  ls_matvec64(a, w + L.proj_w, w + L.proj_b, 4, 4, y);
  for (int i = 0; i < 4; ++i) x[i] = last.x[i] + y[i];
  double hh[4];
  ls_layernorm64(x, w + L.ln2_g, w + L.ln2_b, 4, hh);
  ls_matvec64(hh, w + L.fc_w, w + L.fc_b, 4, 8, f);
  for (int i = 0; i < 8; ++i) f[i] = ls_gelu64(f[i]);
  ls_matvec64(f, w + L.out_w, w + L.out_b, 8, 4, y);
  for (int i = 0; i < 4; ++i) x[i] = x[i] + y[i];
  ls_layernorm64(x, w + L.lnf_g, w + L.lnf_b, 4, h);
  // Real, in intervals.
  Iv S[4], P[4], E[4], A[4], Y[4], X1[4], F[8], X2[4], HH[4];
  for (int head = 0; head < 2; ++head) {
    for (int j = 0; j < 4; ++j)
      S[j] = divp(add(mul(last.Q[head * 2], rows[j]->K[head * 2]),
                      mul(last.Q[head * 2 + 1], rows[j]->K[head * 2 + 1])),
                  kSqrt2);
    softmax_iv(S, 4, P, E);
    for (int d = 0; d < 2; ++d) {
      Iv acc{0.0, 0.0};
      for (int j = 0; j < 4; ++j)
        acc = add(acc, mul(P[j], rows[j]->V[head * 2 + d]));
      A[head * 2 + d] = acc;
    }
  }
  matvec_iv(A, w + L.proj_w, w + L.proj_b, 4, 4, Y);
  for (int i = 0; i < 4; ++i) X1[i] = add(last.X[i], Y[i]);
  layernorm_iv(X1, w + L.ln2_g, w + L.ln2_b, HH);
  matvec_iv(HH, w + L.fc_w, w + L.fc_b, 4, 8, F);
  for (Iv& z : F) z = gelu_enclosure(z);
  matvec_iv(F, w + L.out_w, w + L.out_b, 8, 4, Y);
  for (int i = 0; i < 4; ++i) X2[i] = add(X1[i], Y[i]);
  layernorm_iv(X2, w + L.lnf_g, w + L.lnf_b, H);
}

// The head, for all logits at once. With h~ the engine's ln_f output and
// H[k] an enclosure of the real one: |real_o - computed_o| <= sum_k
// |W[k][o]| |H_k - h~_k| + |computed_o - (h~ . W[:, o] + b_o)|, the second
// at most gamma(5) (sum_k |h~_k||W[k][o]| + |b_o|) (+ 5 * 2^-1074 for
// underflow; Higham §3.1, the bias as a fifth term). Bounding |W[k][o]| by
// its column maximum makes it one number for all o.
double Tiny4Sweep::input_bound(const std::array<int32_t, 4>& tok,
                               TinyLogits* logits, bool* refined) const {
  if (refined) *refined = false;
  const Row* rows[4];
  for (int t = 0; t < 4; ++t) rows[t] = &rows_[size_t(t) * 256 + tok[t]];
  double h[4];
  Iv H[4];
  tail(rows, h, H);
  if (logits) {
    const ls_tiny_layout L = ls_tiny_layout_for(4);
    ls_matvec64(h, w_.data() + L.head_w, w_.data() + L.head_b, 4, 256,
                logits->data());
  }
  constexpr double kGamma5 = 5.6e-16;  // >= 5u / (1 - 5u)
  const auto head_bound = [&](const Iv* HH) {
    double spread = 0.0, size = bmax_;
    for (int k = 0; k < 4; ++k) {
      const double r = std::max(up(HH[k].hi - h[k]), up(h[k] - HH[k].lo));
      spread = up(spread + up(r * colmax_[k]));
      size = up(size + up(std::fabs(h[k]) * colmax_[k]));
    }
    return up(up(spread + up(kGamma5 * size)) + 0x1p-1070);
  };
  const double e = head_bound(H);
  if (e <= kGoal) return e;
  if (refined) *refined = true;
  // Second pass: the real ln_f output in MPFR intervals.
  MI hf[4];
  real_tail_mi(w_.data(), 4, tok.data(), 4, hf);
  Iv HM[4];
  for (int k = 0; k < 4; ++k) HM[k] = hf[k].iv();
  return std::min(e, head_bound(HM));
}

// ------------------------------------------------------- batched sweep
//
// The 256 inputs prefix, b (b = 0..255, the lane) share the rows of their
// first t positions; position t's tail is computed kW lanes at a time in
// GCC/Clang vector types (V: kW binary64s, the width of the build's
// vector registers). Each vector operation is the
// IEEE operation of the scalar path applied to each element, and every
// function below is the scalar one (tail, input_bound, the Iv helpers;
// core/ls_ops64.c and core/ls_arith.c for the engine's side) with V for
// double, the same operations in the same order on the same operands: so
// every lane gets the scalar path's binary64 numbers
// (TinyCertify.BatchedSweepEqualsScalarPath checks this bit for bit).
// std::min(a, b) is (b < a ? b : a) and std::max(a, b) (a < b ? b : a),
// written out so with the same operand order.

namespace {

constexpr int kLanes = 256;
// The vector width follows the build's ISA: 4 binary64s where AVX is
// enabled (-march=x86-64-v3 and up), 2 otherwise (SSE2, NEON).
#if defined(__AVX__)
constexpr int kW = 4;
#else
constexpr int kW = 2;
#endif
using V = double __attribute__((vector_size(8 * kW)));
using VI = int64_t __attribute__((vector_size(8 * kW)));

LS_INLINE V bc(double x) {
  V v;
  for (int i = 0; i < kW; ++i) v[i] = x;
  return v;
}
LS_INLINE VI bci(int64_t x) {
  VI v;
  for (int i = 0; i < kW; ++i) v[i] = x;
  return v;
}
LS_INLINE bool any(VI m) {
  int64_t r = 0;
  for (int i = 0; i < kW; ++i) r |= m[i];
  return r != 0;
}
LS_INLINE V ld(const double* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
LS_INLINE VI bits(V x) { return std::bit_cast<VI>(x); }
LS_INLINE V from_bits(VI b) { return std::bit_cast<V>(b); }
LS_INLINE V vmin(V a, V b) { return b < a ? b : a; }  // std::min's order
LS_INLINE V vmax(V a, V b) { return a < b ? b : a; }  // std::max's order
LS_INLINE V vabs(V x) {  // std::fabs: clears the sign bit
  return from_bits(bits(x) & bci(INT64_MAX));
}
LS_INLINE V vsqrt(V x) {
  V r;
  for (int i = 0; i < kW; ++i) r[i] = std::sqrt(x[i]);
  return r;
}
// up and dn of each element (up's comment above).
LS_INLINE V upv(V x) {
  const V y = x + bc(0.0);
  const VI step = (y < bc(0.0)) | bci(1);  // -1 where y < 0, else 1
  const V r = from_bits(bits(y) + step);
  return ((x == bc(kInf)) | (x != x)) ? x : r;
}
LS_INLINE V dnv(V x) { return -upv(-x); }

struct IvV {
  V lo, hi;
};
LS_INLINE IvV ptv(V x) { return {x, x}; }
LS_INLINE IvV ivb(Iv a) { return {bc(a.lo), bc(a.hi)}; }
LS_INLINE IvV addv(IvV a, IvV b) {
  return {dnv(a.lo + b.lo), upv(a.hi + b.hi)};
}
LS_INLINE IvV subv(IvV a, IvV b) {
  return {dnv(a.lo - b.hi), upv(a.hi - b.lo)};
}
LS_INLINE IvV mulwv(IvV a, double w) {
  const V W = bc(w);
  return w >= 0 ? IvV{dnv(a.lo * W), upv(a.hi * W)}
                : IvV{dnv(a.hi * W), upv(a.lo * W)};
}
LS_INLINE IvV mulv(IvV a, IvV b) {
  const V p1 = a.lo * b.lo, p2 = a.lo * b.hi, p3 = a.hi * b.lo,
          p4 = a.hi * b.hi;
  return {dnv(vmin(vmin(p1, p2), vmin(p3, p4))),
          upv(vmax(vmax(p1, p2), vmax(p3, p4)))};
}
LS_INLINE IvV sqrv(IvV a) {
  const V l = a.lo * a.lo, h = a.hi * a.hi;
  const VI pos = a.lo >= bc(0.0), neg = a.hi <= bc(0.0);
  const V lo = pos ? dnv(l) : (neg ? dnv(h) : bc(0.0));
  const V hi = pos ? upv(h) : (neg ? upv(l) : upv(vmax(l, h)));
  return {lo, hi};
}
LS_INLINE IvV divpv(IvV a, IvV b) {  // b.lo > 0
  const V lo = a.lo >= bc(0.0) ? a.lo / b.hi : a.lo / b.lo;
  const V hi = a.hi >= bc(0.0) ? a.hi / b.lo : a.hi / b.hi;
  return {dnv(lo), upv(hi)};
}
LS_INLINE IvV sqrtpv(IvV a) { return {dnv(vsqrt(a.lo)), upv(vsqrt(a.hi))}; }

// layernorm_naive, layernorm_iv, matvec_iv, per element.
LS_INLINE IvV layernorm_naive_v(const IvV* x, const double* g, const double* b,
                                IvV* y) {
  IvV d[4];
  for (int k = 0; k < 4; ++k) {
    IvV others{bc(0.0), bc(0.0)};
    bool first = true;
    for (int i = 0; i < 4; ++i) {
      if (i == k) continue;
      others = first ? x[i] : addv(others, x[i]);
      first = false;
    }
    d[k] = mulwv(subv(mulwv(x[k], 3.0), others), 0.25);
  }
  IvV s = sqrv(d[0]);
  for (int k = 1; k < 4; ++k) s = addv(s, sqrv(d[k]));
  const IvV F = sqrtpv(addv(mulwv(s, 0.25), ivb(kEps)));
  for (int k = 0; k < 4; ++k) {
    IvV z = divpv(d[k], F);
    z.lo = vmax(z.lo, bc(-kSqrt3Up));
    z.hi = vmin(z.hi, bc(kSqrt3Up));
    y[k] = addv(mulwv(z, g[k]), ptv(bc(b[k])));
  }
  return F;
}
LS_INLINE void layernorm_iv_v(const IvV* x, const double* g, const double* b,
                              IvV* y) {
  const IvV F = layernorm_naive_v(x, g, b, y);
  IvV c[4], yc[4];
  V r2 = bc(0.0);
  for (int k = 0; k < 4; ++k) {
    const V m = bc(0.5) * x[k].lo + bc(0.5) * x[k].hi;
    const V r = vmax(upv(x[k].hi - m), upv(m - x[k].lo));
    r2 = upv(r2 + upv(r * r));
    c[k] = ptv(m);
  }
  layernorm_naive_v(c, g, b, yc);
  const V rad = upv(upv(vsqrt(r2)) / F.lo);
  for (int k = 0; k < 4; ++k) {
    const V e = upv(rad * bc(std::fabs(g[k])));
    y[k].lo = vmax(y[k].lo, dnv(yc[k].lo - e));
    y[k].hi = vmin(y[k].hi, upv(yc[k].hi + e));
  }
}
LS_INLINE void matvec_iv_v(const IvV* x, const double* w, const double* b,
                           int n_in, int n_out, IvV* y) {
  for (int o = 0; o < n_out; ++o) {
    IvV s = mulwv(x[0], w[o]);
    for (int k = 1; k < n_in; ++k) s = addv(s, mulwv(x[k], w[k * n_out + o]));
    y[o] = addv(s, ptv(bc(b[o])));
  }
}

constexpr double kE64InvLn2 = 0x1.71547652b82fep+0;
constexpr double kE64Ln2Hi = 0x1.62e42fee00000p-1;
constexpr double kE64Ln2Lo = 0x1.a39ef35793c76p-33;
constexpr double kE64Rounder = 0x1.8p52;
// core/ls_arith.c's ls_exp64_poly (the test compares the results).
constexpr double kE64Poly[14] = {
    0x1.0000000000000p+0,  0x1.0000000000000p+0,  0x1.0000000000000p-1,
    0x1.5555555555555p-3,  0x1.5555555555555p-5,  0x1.1111111111111p-7,
    0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-13, 0x1.a01a01a01a01ap-16,
    0x1.71de3a556c734p-19, 0x1.27e4fb7789f5cp-22, 0x1.ae64567f544e4p-26,
    0x1.1eed8eff8d898p-29, 0x1.6124613a86d09p-33};
constexpr double kGeluC64 = 0x1.9884533d43651p-1;  // ls_arith.c's constants
constexpr double kGeluA64 = 0x1.6e4e26d4801f7p-5;
constexpr double kLnEps64 = 0x1.4f8b588e368f1p-17;  // ls_ops64.c's eps

// ls_exp64 of each element. Its operations for x in [-708, 709], where
// its n = round(x / ln 2) lies in [-1021, 1023] and the result is p * 2^n
// directly; 2^n is built from nf's bits (nf + 1.5 * 2^52 is exact and its
// low bits are nf), the same number ls_pow2_64((int)nf) builds. Other
// elements (NaN, overflow, underflow, subnormal results) go to ls_exp64.
LS_INLINE V exp64v(V x) {
  V z = x < bc(-708.0) ? bc(-708.0) : x;
  z = z > bc(709.0) ? bc(709.0) : z;
  const V t = z * bc(kE64InvLn2);
  const V nf = (t + bc(kE64Rounder)) - bc(kE64Rounder);
  const V r = (z - nf * bc(kE64Ln2Hi)) - nf * bc(kE64Ln2Lo);
  V p = bc(kE64Poly[13]);
  for (int k = 12; k >= 0; --k) p = p * r + bc(kE64Poly[k]);
  const VI e = bits(nf + bc(kE64Rounder)) - bits(bc(kE64Rounder));
  V y = p * from_bits((e + 1023) << 52);
  const VI out = ~((x >= bc(-708.0)) & (x <= bc(709.0)));
  if (any(out))
    for (int i = 0; i < kW; ++i)
      if (out[i]) y[i] = ls_exp64(x[i]);
  return y;
}

// exp_iv of each element (its narrow case; the wide one per element).
LS_INLINE IvV exp_iv_v(IvV d) {
  const V w = upv(d.hi - d.lo);
  const V c = exp64v(d.lo);
  const V t = dnv(c - bc(0x1p-1074));
  const V lo =
      t <= bc(0.0) ? bc(0.0) : vmax(bc(0.0), dnv(t * bc(1.0 - 0x1p-51)));
  const V hi = upv(upv(upv(c + bc(0x1p-1074)) * bc(1.0 + 0x1p-51)) *
                   upv(bc(1.0) + upv(bc(2.0) * w)));
  IvV e{lo, hi};
  const VI wide = (d.hi > bc(709.0)) | ~(w <= bc(0x1p-20));
  if (any(wide))
    for (int i = 0; i < kW; ++i)
      if (wide[i]) e.lo[i] = exp_lower(d.lo[i]), e.hi[i] = exp_upper(d.hi[i]);
  return e;
}

// The engine's ls_layernorm64 for n = 4 (ls_sum64 and ls_dot64 are
// sequential from +0.0 below 16 terms) and ls_matvec64 for n_in < 16.
LS_INLINE void ln64v(const V* x, const double* g, const double* b, V* y) {
  V acc = bc(0.0);
  for (int k = 0; k < 4; ++k) acc = acc + x[k];
  const V mean = acc / bc(4.0);
  V d[4];
  for (int k = 0; k < 4; ++k) d[k] = x[k] - mean;
  V v = bc(0.0);
  for (int k = 0; k < 4; ++k) v = v + d[k] * d[k];
  const V var = v / bc(4.0);
  const V r = bc(1.0) / vsqrt(var + bc(kLnEps64));
  for (int k = 0; k < 4; ++k) y[k] = (d[k] * r) * bc(g[k]) + bc(b[k]);
}
LS_INLINE void mv64v(const V* x, const double* w, const double* b, int n_in,
                     int n_out, V* y) {
  for (int o = 0; o < n_out; ++o) {
    V s = bc(0.0);
    for (int k = 0; k < n_in; ++k) s = s + x[k] * bc(w[k * n_out + o]);
    y[o] = s + bc(b[o]);
  }
}
// ls_gelu64 (through ls_tanh64) of each element.
LS_INLINE V gelu64v(V x) {
  const V x3 = (x * x) * x;
  const V u = bc(kGeluC64) * (x + bc(kGeluA64) * x3);
  const VI neg = u < bc(0.0);
  const V a = neg ? -u : u;
  const V e = exp64v(a + a);
  V th = bc(1.0) - bc(2.0) / (e + bc(1.0));
  th = neg ? -th : th;
  return (bc(0.5) * x) * (bc(1.0) + th);
}
// gelu_enclosure of each element.
LS_INLINE IvV gelu_iv_v(IvV x) {
  const IvV x3 = mulv(sqrv(x), x);
  const IvV U = mulv(ivb(kGeluC), addv(x, mulv(ivb(kGeluA), x3)));
  const IvV e = exp_iv_v({bc(-2.0) * U.hi, bc(-2.0) * U.lo});
  const V wlo = dnv(bc(2.0) / upv(bc(1.0) + e.hi));
  const V whi = upv(bc(2.0) / dnv(bc(1.0) + e.lo));
  const IvV Wv{vmax(bc(0.0), wlo), vmin(whi, bc(up(2.0)))};
  return mulv(mulwv(x, 0.5), Wv);
}

}  // namespace

void exp64_batch(const double* x, double* y, int n) {
  int i = 0;
  for (; i + kW <= n; i += kW) {
    const V v = exp64v(ld(x + i));
    std::memcpy(y + i, &v, sizeof v);
  }
  for (; i < n; ++i) y[i] = ls_exp64(x[i]);
}

// The lanes' copies of the last position's rows, as structure of arrays:
// soa_[((t * 48 + f) * 256) + b], f: x, q, k, v (4 each), then the lower
// and upper ends of X, Q, K, V (4 each).
void Tiny4Sweep::build_soa() {
  soa_.assign(4 * 48 * 256, 0.0);
  for (int t = 0; t < 4; ++t)
    for (int b = 0; b < 256; ++b) {
      const Row& r = rows_[size_t(t) * 256 + b];
      const auto put = [&](int f, double v) {
        soa_[(size_t(t) * 48 + f) * 256 + b] = v;
      };
      for (int i = 0; i < 4; ++i) {
        put(i, r.x[i]), put(4 + i, r.q[i]), put(8 + i, r.k[i]);
        put(12 + i, r.v[i]);
        put(16 + i, r.X[i].lo), put(20 + i, r.X[i].hi);
        put(24 + i, r.Q[i].lo), put(28 + i, r.Q[i].hi);
        put(32 + i, r.K[i].lo), put(36 + i, r.K[i].hi);
        put(40 + i, r.V[i].lo), put(44 + i, r.V[i].hi);
      }
    }
}

template <int N>
void Tiny4Sweep::batch(const int32_t* prefix, double* bound, bool* refined,
                       double (*lnf)[4]) const {
  constexpr int t = N - 1;  // the position; N positions attended
  const ls_tiny_layout L = ls_tiny_layout_for(4);
  const double* w = w_.data();
  const Row* pre[4] = {};
  for (int j = 0; j < t; ++j) pre[j] = &rows_[size_t(j) * 256 + prefix[j]];
  constexpr double kGamma5 = 5.6e-16;  // >= 5u / (1 - 5u)
  for (int l0 = 0; l0 < kLanes; l0 += kW) {
    const auto f = [&](int field) {
      return ld(&soa_[(size_t(t) * 48 + field) * 256 + l0]);
    };
    V x[4], q[4], k[4], v[4];
    IvV X[4], Q[4], K[4], Vv[4];
    for (int i = 0; i < 4; ++i) {
      x[i] = f(i), q[i] = f(4 + i), k[i] = f(8 + i), v[i] = f(12 + i);
      X[i] = {f(16 + i), f(20 + i)}, Q[i] = {f(24 + i), f(28 + i)};
      K[i] = {f(32 + i), f(36 + i)}, Vv[i] = {f(40 + i), f(44 + i)};
    }
    // tail's computed part.
    V a[4];
    for (int head = 0; head < 2; ++head) {
      const int c0 = head * 2, c1 = head * 2 + 1;
      V score[N];
      for (int j = 0; j < N; ++j) {
        const V k0 = j < t ? bc(pre[j]->k[c0]) : k[c0];
        const V k1 = j < t ? bc(pre[j]->k[c1]) : k[c1];
        V acc = bc(0.0);
        acc = acc + q[c0] * k0;
        acc = acc + q[c1] * k1;
        score[j] = acc / bc(kSqrtHeadDim);
      }
      // ls_softmax64.
      V m = score[0];
      for (int j = 1; j < N; ++j) m = score[j] > m ? score[j] : m;
      V sum = bc(0.0), p[N];
      for (int j = 0; j < N; ++j) {
        p[j] = exp64v(score[j] - m);
        sum = sum + p[j];
      }
      for (int j = 0; j < N; ++j) p[j] = p[j] / sum;
      // ls_weighted_sum64.
      for (int d = 0; d < 2; ++d) {
        V acc = bc(0.0);
        for (int j = 0; j < N; ++j)
          acc = acc + p[j] * (j < t ? bc(pre[j]->v[c0 + d]) : v[c0 + d]);
        a[c0 + d] = acc;
      }
    }
    V y[4], x1[4], hh[4], ff[8], h[4];
    mv64v(a, w + L.proj_w, w + L.proj_b, 4, 4, y);
    for (int i = 0; i < 4; ++i) x1[i] = x[i] + y[i];
    ln64v(x1, w + L.ln2_g, w + L.ln2_b, hh);
    mv64v(hh, w + L.fc_w, w + L.fc_b, 4, 8, ff);
    for (int i = 0; i < 8; ++i) ff[i] = gelu64v(ff[i]);
    mv64v(ff, w + L.out_w, w + L.out_b, 8, 4, y);
    for (int i = 0; i < 4; ++i) x1[i] = x1[i] + y[i];
    ln64v(x1, w + L.lnf_g, w + L.lnf_b, h);
    // tail's interval part.
    IvV A[4];
    for (int head = 0; head < 2; ++head) {
      const int c0 = head * 2, c1 = head * 2 + 1;
      IvV S[N], P[N], E[N];
      for (int j = 0; j < N; ++j) {
        const IvV K0 = j < t ? ivb(pre[j]->K[c0]) : K[c0];
        const IvV K1 = j < t ? ivb(pre[j]->K[c1]) : K[c1];
        S[j] = divpv(addv(mulv(Q[c0], K0), mulv(Q[c1], K1)), ivb(kSqrt2));
      }
      // softmax_iv.
      V c = S[0].hi;
      for (int j = 1; j < N; ++j) c = vmax(c, S[j].hi);
      V tlo = bc(0.0), thi = bc(0.0);
      for (int j = 0; j < N; ++j) {
        E[j] = exp_iv_v(subv(S[j], ptv(c)));
        tlo = dnv(tlo + E[j].lo);
        thi = upv(thi + E[j].hi);
      }
      for (int j = 0; j < N; ++j) {
        const V rlo = vmax(bc(0.0), dnv(tlo - E[j].lo));
        const V rhi = vmax(bc(0.0), upv(thi - E[j].hi));
        const V lo =
            E[j].lo > bc(0.0) ? dnv(E[j].lo / upv(E[j].lo + rhi)) : bc(0.0);
        const V hi =
            E[j].hi > bc(0.0) ? upv(E[j].hi / dnv(E[j].hi + rlo)) : bc(0.0);
        P[j] = {vmax(bc(0.0), lo), vmin(bc(1.0), hi)};
      }
      for (int d = 0; d < 2; ++d) {
        IvV acc{bc(0.0), bc(0.0)};
        for (int j = 0; j < N; ++j)
          acc = addv(acc,
                     mulv(P[j], j < t ? ivb(pre[j]->V[c0 + d]) : Vv[c0 + d]));
        A[c0 + d] = acc;
      }
    }
    IvV Y[4], X1[4], HH[4], F[8], H[4];
    matvec_iv_v(A, w + L.proj_w, w + L.proj_b, 4, 4, Y);
    for (int i = 0; i < 4; ++i) X1[i] = addv(X[i], Y[i]);
    layernorm_iv_v(X1, w + L.ln2_g, w + L.ln2_b, HH);
    matvec_iv_v(HH, w + L.fc_w, w + L.fc_b, 4, 8, F);
    for (IvV& z : F) z = gelu_iv_v(z);
    matvec_iv_v(F, w + L.out_w, w + L.out_b, 8, 4, Y);
    for (int i = 0; i < 4; ++i) X1[i] = addv(X1[i], Y[i]);
    layernorm_iv_v(X1, w + L.lnf_g, w + L.lnf_b, H);
    // input_bound's head_bound.
    V spread = bc(0.0), size = bc(bmax_);
    for (int kk = 0; kk < 4; ++kk) {
      const V r = vmax(upv(H[kk].hi - h[kk]), upv(h[kk] - H[kk].lo));
      spread = upv(spread + upv(r * bc(colmax_[kk])));
      size = upv(size + upv(vabs(h[kk]) * bc(colmax_[kk])));
    }
    const V e = upv(upv(spread + upv(bc(kGamma5) * size)) + bc(0x1p-1070));
    for (int i = 0; i < kW; ++i) {
      bound[l0 + i] = e[i];
      if (lnf)
        for (int kk = 0; kk < 4; ++kk) lnf[l0 + i][kk] = h[kk][i];
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    double e = bound[l];
    bool ref = false;
    if (!(e <= kGoal)) {  // above the goal, or not a number: the scalar path
      ref = true;
      if (t == 3) {
        const std::array<int32_t, 4> tok{prefix[0], prefix[1], prefix[2], l};
        e = input_bound(tok, nullptr, &ref);
      } else {
        std::vector<int32_t> tok(prefix, prefix + t);
        tok.push_back(l);
        const double c = certify_tiny(4, w_, tok, B_).max_bound;
        e = (c < e || e != e) ? c : e;
      }
    }
    bound[l] = e;
    if (refined) refined[l] = ref;
  }
}

void Tiny4Sweep::batch_bounds(int t, const int32_t* prefix, double* bound,
                              bool* refined, double (*lnf)[4]) const {
  for (int j = 0; j < t; ++j)
    if (prefix[j] < 0 || prefix[j] > 255)
      throw Error("certify-tiny: a prefix byte is not in [0, 255]");
  switch (t) {
    case 0:
      return batch<1>(prefix, bound, refined, lnf);
    case 1:
      return batch<2>(prefix, bound, refined, lnf);
    case 2:
      return batch<3>(prefix, bound, refined, lnf);
    case 3:
      return batch<4>(prefix, bound, refined, lnf);
    default:
      throw Error("certify-tiny: the position must be 0, 1, 2 or 3");
  }
}

void Tiny4Sweep::Stats::add(const Stats& o) {
  if (o.inputs && (o.max_bound > max_bound || inputs == 0))
    max_bound = o.max_bound, worst = o.worst;
  inputs += o.inputs;
  sum_bound += o.sum_bound;
  over_goal += o.over_goal;
  refined += o.refined;
}

Tiny4Sweep::Result Tiny4Sweep::run(
    int first, int last, int stride, int offset, int threads,
    const std::function<void(long, long)>& progress, bool batched) const {
  if (first < 0 || last > 65536 || first > last || stride < 1 || offset < 0 ||
      offset >= stride || threads < 1)
    throw Error("certify-tiny: bad sweep range");
  std::vector<int> units;
  for (int u = first; u < last; ++u)
    if (u % stride == offset) units.push_back(u);
  std::atomic<size_t> next{0}, done{0};
  std::mutex mu;
  Result total;
  // Position 0's bounds (the 256 one-byte inputs), once.
  std::array<double, 256> pos0{};
  std::array<bool, 256> ref0{};
  if (batched) batch_bounds(0, nullptr, pos0.data(), ref0.data());
  const auto count = [](Stats& s, double e, bool refined,
                        const std::array<int32_t, 4>& tok) {
    ++s.inputs;
    s.refined += refined;
    s.sum_bound += e;
    if (e > kGoal) ++s.over_goal;
    if (e > s.max_bound || s.inputs == 1) s.max_bound = e, s.worst = tok;
  };
  auto worker = [&] {
    Result r;
    int cached_b0 = -1;  // position 1's bounds of first byte cached_b0
    std::array<double, 256> pos1{}, pos2{}, pos3{};
    std::array<bool, 256> ref1{}, ref2{}, ref3{};
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= units.size()) break;
      const int u = units[i];
      const int b0 = u >> 8, b1 = u & 255;
      std::array<int32_t, 4> tok{b0, b1, 0, 0};
      if (!batched) {
        for (int b2 = 0; b2 < 256; ++b2) {
          tok[2] = b2;
          for (int b3 = 0; b3 < 256; ++b3) {
            tok[3] = b3;
            bool refined = false;
            const double e = input_bound(tok, nullptr, &refined);
            count(r, e, refined, tok);
          }
        }
        done.fetch_add(1);
        continue;
      }
      if (b0 != cached_b0) {
        batch_bounds(1, tok.data(), pos1.data(), ref1.data());
        cached_b0 = b0;
      }
      // Positions 0 and 1 are counted once: in unit 0 and in unit (b0, 0).
      if (u == 0)
        for (int b = 0; b < 256; ++b) count(r.prefix[0], pos0[b], ref0[b], {b});
      if (b1 == 0)
        for (int b = 0; b < 256; ++b)
          count(r.prefix[1], pos1[b], ref1[b], {b0, b});
      batch_bounds(2, tok.data(), pos2.data(), ref2.data());
      const double e01 = std::max(pos0[b0], pos1[b1]);
      for (int b2 = 0; b2 < 256; ++b2) {
        tok[2] = b2;
        count(r.prefix[2], pos2[b2], ref2[b2], {b0, b1, b2});
        batch_bounds(3, tok.data(), pos3.data(), ref3.data());
        const double e012 = std::max(e01, pos2[b2]);
        for (int b3 = 0; b3 < 256; ++b3) {
          tok[3] = b3;
          count(r, pos3[b3], ref3[b3], tok);
          const double all = std::max(e012, pos3[b3]);
          r.max_all = std::max(r.max_all, all);
          r.sum_all += all;
        }
      }
      done.fetch_add(1);
    }
    std::lock_guard<std::mutex> lock(mu);
    total.add(r);
    for (int p = 0; p < 3; ++p) total.prefix[p].add(r.prefix[p]);
    total.max_all = std::max(total.max_all, r.max_all);
    total.sum_all += r.sum_all;
    // MPFR's per-thread caches (exp's tables) die with the thread: free
    // them here so LeakSanitizer sees no lost blocks.
    mpfr_free_cache();
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker);
  while (progress && done.load() < units.size()) {
    progress(long(done.load()), long(units.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& th : pool) th.join();
  if (progress) progress(long(units.size()), long(units.size()));
  if (!batched)
    total.max_all = total.max_bound, total.sum_all = total.sum_bound;
  return total;
}

// ------------------------------------------------------- a-priori bound

namespace {

// Upper-bound arithmetic on non-negative reals: each result rounded up.
struct Up {
  double v;
};
inline Up operator+(Up a, Up b) { return {up(a.v + b.v)}; }
inline Up operator*(Up a, Up b) { return {up(a.v * b.v)}; }
inline Up operator/(Up a, double lower) { return {up(a.v / lower)}; }
inline Up umin(Up a, Up b) { return {std::min(a.v, b.v)}; }

constexpr double kU = 0x1p-53;
Up gamma(int k) {  // k u / (1 - k u), rounded up
  return {up(up(k * kU) / dn(1.0 - k * kU))};
}

// sup |G'(x)| over the reals, certified: interval evaluation of G'(x) =
// W/2 + (x/2) W (2 - W) C (1 + 3 A x^2) (W = 1 + tanh U) on 2400 pieces of
// [-12, 12]; beyond, |G'| <= 1 + 2e-6 (hand: docs/certify-tiny.md).
double gelu_lipschitz() {
  double m = 1.0 + 2e-6;
  const int pieces = 2400;
  for (int i = 0; i < pieces; ++i) {
    const Iv x{-12.0 + 24.0 * i / pieces, -12.0 + 24.0 * (i + 1) / pieces};
    // The piece ends are within an ulp of the decimal ones; widen.
    const Iv xx{dn(x.lo), up(x.hi)};
    const Iv U = mul(kGeluC, add(xx, mul(kGeluA, mul(sqr(xx), xx))));
    const double wlo = dn(2.0 / up(1.0 + exp_upper(-2.0 * U.lo)));
    const double whi = up(2.0 / dn(1.0 + exp_lower(-2.0 * U.hi)));
    const Iv W{std::max(0.0, wlo), std::min(whi, 2.0)};
    const Iv Uprime =
        mul(kGeluC, add(pt(1.0), mulw(mul(kGeluA, sqr(xx)), 3.0)));
    const Iv term = mul(mul(mulw(xx, 0.5), mul(W, sub(pt(2.0), W))), Uprime);
    const Iv d = add(mulw(W, 0.5), term);
    m = std::max(m, mag(d));
  }
  return m;
}

}  // namespace

Apriori apriori_bound(double B, int n_ctx) {
  if (!(B >= 0.0 && B <= 10.0))
    throw Error("certify-tiny: the bound B must be in [0, 10]");
  if (n_ctx < 1 || n_ctx > 128)
    throw Error(
        "certify-tiny: n_ctx must be in [1, 128] for the a-priori "
        "bound (the softmax lemma's range)");
  Apriori out;
  const Up b{B}, u{kU}, zero{0.0};
  const Up sqrt3{kSqrt3Up};
  const double sqrt_eps_lo = dn(std::sqrt(dn(1e-5)));  // <= sqrt(10^-5)
  const Up inv_sqrt2{up(1.0 / dn(std::sqrt(2.0)))};
  auto stage = [&](const char* name, Up M, Up E) {
    out.stages.push_back({name, M.v, E.v});
  };
  // Generic matvec, n inputs, |W|, |b| <= B: y = x W (+ b).
  auto matvec = [&](Up M, Up E, int n, bool bias, Up* My) {
    const Up nn{double(n)};
    const Up Mc = M + E;  // computed input magnitude
    *My = nn * M * b + (bias ? b : zero);
    const Up round =
        gamma(bias ? n + 1 : n) * (nn * Mc * b + (bias ? b : zero));
    return (round + nn * b * E + Up{0x1p-1060});
  };
  // LayerNorm: M_out = (sqrt 3 + 1) B; error from the input error E (the
  // real Lipschitz bound 1.5 (1 + sqrt 3) B / sqrt(eps)) and the rounding
  // of the computed input of magnitude <= R (docs/certify-tiny.md, L1-L5).
  auto layernorm = [&](Up M, Up E, Up* Mo) {
    const Up R = M + E;
    const Up em = gamma(3) * R + Up{0x1p-1074};
    const Up e = em + u * (R + R + em);
    // L3 with the 2-norm Lipschitz bound of D -> D / F(D) (1 / sqrt(eps)):
    // ||d - D||_2 <= 2 e.
    const Up eZ = Up{2.0} * e / sqrt_eps_lo +
                  Up{2.0} * (Up{5.03e-16} + u + Up{5.03e-16} * u);
    const Up Zc = sqrt3 + eZ;
    const Up round = b * eZ + u * b * Zc + u * (b * Zc * Up{1.0 + 2 * kU} + b) +
                     Up{0x1p-1070};
    // The real LayerNorm is (B / sqrt(eps))-Lipschitz from the 2-norm to
    // the 2-norm, so 2 B / sqrt(eps) from the max-norm to the max-norm.
    const Up lip = Up{2.0} * b / sqrt_eps_lo;
    *Mo = (sqrt3 + Up{1.0}) * b;
    // The computed output is at most 3.0000001 B whatever its input
    // (|d~[k]| / F(d~) <= 2, then three roundings), the real one (1 +
    // sqrt 3) B: their difference at most the sum.
    return umin(round + lip * E, *Mo + Up{3.0000001} * b);
  };
  // x0 = wte + wpe.
  Up Mx0 = b + b, Ex0 = u * Mx0;
  stage("x0 = wte + wpe", Mx0, Ex0);
  Up Mh, Eh = layernorm(Mx0, Ex0, &Mh);
  stage("ln_1", Mh, Eh);
  Up Mq, Eq = matvec(Mh, Eh, 4, false, &Mq);
  stage("q, k, v", Mq, Eq);
  // Scores s = (q . k) / sqrt 2, computed RN(RN(RN(q0k0) + RN(q1k1)) / sq).
  const Up Mqc = Mq + Eq;
  const Up dotc = Up{2.0} * Mqc * Mqc * (Up{1.0} + gamma(2));
  const Up Es = (gamma(2) * Up{2.0} * Mqc * Mqc * inv_sqrt2 +
                 Up{3.0} * u * dotc * inv_sqrt2 +
                 Up{2.0} * (Eq * Mqc + Mq * Eq) * inv_sqrt2 + Up{0x1p-1070});
  stage("scores", Up{2.0} * Mq * Mq * inv_sqrt2, Es);
  // Softmax and the weighted sum of v.
  const Up esm{n_ctx <= 4 ? 1.228e-15 : 2.006e-14};
  const Up nn{double(n_ctx)};
  const Up Mvc = Mq + Eq;
  const Up Ea = (gamma(n_ctx) * (Up{1.0} + nn * esm) * Mvc + nn * esm * Mvc +
                 umin(Up{2.0} * Es, Up{2.0}) * Mvc + Eq + Up{0x1p-1060});
  stage("attention output", Mq, Ea);
  Up My, Ey = matvec(Mq, Ea, 4, true, &My);
  stage("c_proj", My, Ey);
  Up Mx1 = Mx0 + My;
  Up Ex1 = (Ex0 + Ey + u * (Mx0 + Ex0 + My + Ey));
  stage("x1 = x0 + c_proj", Mx1, Ex1);
  Up Mh2, Eh2 = layernorm(Mx1, Ex1, &Mh2);
  stage("ln_2", Mh2, Eh2);
  Up Mf, Ef = matvec(Mh2, Eh2, 4, true, &Mf);
  stage("c_fc", Mf, Ef);
  out.gelu_lipschitz = gelu_lipschitz();
  const Up Eg = (Up{1.5e-14} + Up{out.gelu_lipschitz} * Ef);
  stage("gelu", Mf, Eg);
  Up My2, Ey2 = matvec(Mf, Eg, 8, true, &My2);
  stage("mlp c_proj", My2, Ey2);
  Up Mx2 = Mx1 + My2;
  Up Ex2 = (Ex1 + Ey2 + u * (Mx1 + Ex1 + My2 + Ey2));
  stage("x2 = x1 + mlp", Mx2, Ex2);
  Up Mhf, Ehf = layernorm(Mx2, Ex2, &Mhf);
  stage("ln_f", Mhf, Ehf);
  Up Ml, El = matvec(Mhf, Ehf, 4, true, &Ml);
  stage("logits", Ml, El);
  out.bound = El.v;
  return out;
}

}  // namespace lockstep::tiny_certify
