// lockstep certify (issue 14, docs/certify.md): the interval forward of the
// real GPT-2 (lib/certify.h) against the same real model evaluated by MPFR
// at 256 bits, every logit of every position inside its interval; the
// certification decision on constructed ties and near-ties; bad input.
#include "lib/certify.h"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <random>
#include <vector>

#include "lockstep/error.h"
#include "ls_gpt2.h"

namespace lockstep {
namespace {

// A 256-bit real, round to nearest: the reference is far more precise than
// any interval width it is compared with (the comparison allows 2^-200
// relative).
class Big {
 public:
  Big() { mpfr_init2(v_, 256), mpfr_set_zero(v_, 1); }
  Big(double x) { mpfr_init2(v_, 256), mpfr_set_d(v_, x, MPFR_RNDN); }
  Big(const Big& o) { mpfr_init2(v_, 256), mpfr_set(v_, o.v_, MPFR_RNDN); }
  Big& operator=(const Big& o) {
    mpfr_set(v_, o.v_, MPFR_RNDN);
    return *this;
  }
  ~Big() { mpfr_clear(v_); }
  static Big str(const char* s) {
    Big b;
    mpfr_set_str(b.v_, s, 10, MPFR_RNDN);
    return b;
  }
  friend Big operator+(const Big& a, const Big& b) {
    return op(mpfr_add, a, b);
  }
  friend Big operator-(const Big& a, const Big& b) {
    return op(mpfr_sub, a, b);
  }
  friend Big operator*(const Big& a, const Big& b) {
    return op(mpfr_mul, a, b);
  }
  friend Big operator/(const Big& a, const Big& b) {
    return op(mpfr_div, a, b);
  }
  Big exp() const { return fn(mpfr_exp); }
  Big tanh() const { return fn(mpfr_tanh); }
  Big sqrt() const { return fn(mpfr_sqrt); }
  double d() const { return mpfr_get_d(v_, MPFR_RNDN); }
  mpfr_ptr raw() { return v_; }
  bool operator>(const Big& o) const { return mpfr_greater_p(v_, o.v_); }
  // Inside [lo, hi] widened by 2^-200 relative for the reference's own
  // rounding.
  bool inside(const Interval& i) const {
    const double slack = std::fabs(d()) * 0x1p-200 + 0x1p-1000;
    Big lo(i.lo), hi(i.hi);
    Big s(slack);
    return !mpfr_less_p(v_, (lo - s).v_) && !mpfr_greater_p(v_, (hi + s).v_);
  }

 private:
  template <typename F>
  static Big op(F f, const Big& a, const Big& b) {
    Big r;
    f(r.v_, a.v_, b.v_, MPFR_RNDN);
    return r;
  }
  template <typename F>
  Big fn(F f) const {
    Big r;
    f(r.v_, v_, MPFR_RNDN);
    return r;
  }
  mpfr_t v_;
};

std::vector<Big> ref_layernorm(const std::vector<Big>& x, const float* g,
                               const float* b) {
  const size_t n = x.size();
  Big s;
  for (const auto& v : x) s = s + v;
  const Big mean = s / Big(double(n));
  Big var;
  for (const auto& v : x) var = var + (v - mean) * (v - mean);
  var = var / Big(double(n));
  const Big sd = (var + Big::str("1e-5")).sqrt();
  std::vector<Big> y;
  for (size_t k = 0; k < n; ++k) {
    y.push_back((x[k] - mean) / sd * Big(g[k]) + Big(b[k]));
  }
  return y;
}

std::vector<Big> ref_matvec(const std::vector<Big>& x, const float* W,
                            const float* bias, int N) {
  std::vector<Big> y;
  for (int o = 0; o < N; ++o) {
    Big s(bias[o]);
    for (size_t k = 0; k < x.size(); ++k) s = s + x[k] * Big(W[k * N + o]);
    y.push_back(s);
  }
  return y;
}

Big pi() {
  Big p;
  mpfr_const_pi(p.raw(), MPFR_RNDN);
  return p;
}

// GELU with the real constants.
Big ref_gelu(const Big& x) {
  static const Big c = (Big(2.0) / pi()).sqrt();
  static const Big a = Big::str("0.044715");
  const Big u = c * (x + a * x * x * x);
  return Big(0.5) * x * (Big(1.0) + u.tanh());
}

// The real GPT-2 at every position of `tokens`: the logits of each.
std::vector<std::vector<Big>> ref_forward(const ls_gpt2_config& c,
                                          const std::vector<float>& w,
                                          const std::vector<int32_t>& tokens) {
  const int C = c.n_embd, H = c.n_head, D = C / H;
  const size_t n = tokens.size();
  std::vector<std::vector<Big>> x(n);
  for (size_t t = 0; t < n; ++t) {
    for (int i = 0; i < C; ++i) {
      x[t].push_back(Big(w[size_t(tokens[t]) * C + i]) +
                     Big(w[ls_gpt2_wpe_offset(&c) + t * C + i]));
    }
  }
  const Big sqrt_d = Big(double(D)).sqrt();
  for (int l = 0; l < c.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
    std::vector<std::vector<Big>> qkv(n);
    for (size_t t = 0; t < n; ++t) {
      qkv[t] = ref_matvec(ref_layernorm(x[t], &w[b.ln1_g], &w[b.ln1_b]),
                          &w[b.attn_w], &w[b.attn_b], 3 * C);
    }
    for (size_t t = 0; t < n; ++t) {
      std::vector<Big> a(static_cast<size_t>(C));
      for (int hd = 0; hd < H; ++hd) {
        std::vector<Big> e;
        Big S;
        for (size_t j = 0; j <= t; ++j) {
          Big s;
          for (int d = 0; d < D; ++d) {
            s = s + qkv[t][hd * D + d] * qkv[j][C + hd * D + d];
          }
          e.push_back((s / sqrt_d).exp());
          S = S + e.back();
        }
        for (int d = 0; d < D; ++d) {
          Big o;
          for (size_t j = 0; j <= t; ++j) {
            o = o + e[j] / S * qkv[j][2 * C + hd * D + d];
          }
          a[size_t(hd * D + d)] = o;
        }
      }
      std::vector<Big> y = ref_matvec(a, &w[b.proj_w], &w[b.proj_b], C);
      for (int i = 0; i < C; ++i) x[t][i] = x[t][i] + y[i];
      std::vector<Big> f =
          ref_matvec(ref_layernorm(x[t], &w[b.ln2_g], &w[b.ln2_b]), &w[b.fc_w],
                     &w[b.fc_b], 4 * C);
      for (auto& v : f) v = ref_gelu(v);
      y = ref_matvec(f, &w[b.out_w], &w[b.out_b], C);
      for (int i = 0; i < C; ++i) x[t][i] = x[t][i] + y[i];
    }
  }
  std::vector<std::vector<Big>> logits(n);
  const size_t lnf = ls_gpt2_lnf_offset(&c);
  for (size_t t = 0; t < n; ++t) {
    const std::vector<Big> h = ref_layernorm(x[t], &w[lnf], &w[lnf + C]);
    for (int v = 0; v < c.n_vocab; ++v) {
      Big s;
      for (int k = 0; k < C; ++k) s = s + h[k] * Big(w[size_t(v) * C + k]);
      logits[t].push_back(s);
    }
  }
  return logits;
}

// A small GPT-2 with random weights (gains near 1), as gpt2_core_test's.
std::vector<float> random_weights(const ls_gpt2_config& c, uint64_t seed,
                                  float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> w(ls_gpt2_param_count(&c));
  for (auto& v : w) v = u(rng);
  auto gains = [&](size_t off) {
    for (int i = 0; i < c.n_embd; ++i) w[off + size_t(i)] += 1.0f;
  };
  for (int l = 0; l < c.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
    gains(b.ln1_g);
    gains(b.ln2_g);
  }
  gains(ls_gpt2_lnf_offset(&c));
  return w;
}

TEST(CertifyInterval, OperationsEncloseMpfr) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-20, 20);
  for (int i = 0; i < 2000; ++i) {
    const double a = u(rng), b = u(rng);
    const Interval A = iv::point(a), B = iv::point(b);
    EXPECT_TRUE((Big(a) + Big(b)).inside(iv::add(A, B)));
    EXPECT_TRUE((Big(a) - Big(b)).inside(iv::sub(A, B)));
    EXPECT_TRUE((Big(a) * Big(b)).inside(iv::mul(A, B)));
    EXPECT_TRUE((Big(a) / Big(b)).inside(iv::div(A, B)));
    EXPECT_TRUE(Big(a).exp().inside(iv::exp(A)));
    EXPECT_TRUE(Big(a).tanh().inside(iv::tanh(A)));
    EXPECT_TRUE(ref_gelu(Big(a)).inside(iv::gelu(A))) << a;
    EXPECT_TRUE(
        Big(std::fabs(a)).sqrt().inside(iv::sqrt(iv::point(std::fabs(a)))));
    // Thin results: a few ulps wide.
    EXPECT_LE(iv::gelu(A).width(), 1e-14 * (1 + std::fabs(a)));
  }
  // GELU over a wide interval contains every point's value.
  const Interval wide = iv::gelu(Interval{-3.0, 2.0});
  for (double x = -3.0; x <= 2.0; x += 0.01) {
    EXPECT_TRUE(ref_gelu(Big(x)).inside(wide)) << x;
  }
  EXPECT_EQ(iv::next_up(0.0), 0x1p-1074);
  EXPECT_EQ(iv::next_down(1.0), 1.0 - 0x1p-53);
  EXPECT_EQ(iv::next_up(-INFINITY), -0x1.fffffffffffffp+1023);
  EXPECT_EQ(iv::next_up(INFINITY), INFINITY);
}

// Every logit of every position of two small random configs lies in its
// interval, the intervals are thin, and lockstep's binary32 logits are
// close to them.
TEST(CertifyInterval, ForwardEnclosesTheRealModelAt256Bits) {
  const ls_gpt2_config configs[] = {{61, 6, 16, 2, 2}, {40, 5, 32, 4, 1}};
  uint64_t seed = 3;
  for (const ls_gpt2_config& c : configs) {
    const std::vector<float> w = random_weights(c, seed++, 0.3f);
    std::mt19937_64 rng(seed);
    std::vector<int32_t> tokens(size_t(c.n_ctx));
    for (auto& t : tokens) t = int32_t(rng() % uint64_t(c.n_vocab));
    const auto ref = ref_forward(c, w, tokens);
    for (int precision : {128, 53}) {
      IntervalGpt2 m(c, w.data(), w.size(), precision);
      std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, c.n_ctx));
      std::vector<float> f(size_t(c.n_vocab));
      for (size_t t = 0; t < tokens.size(); ++t) {
        m.step(tokens[t]);
        ASSERT_EQ(
            ls_gpt2_infer(&c, w.data(), w.size(), tokens.data(), int(t + 1),
                          scratch.data(), scratch.size(), f.data()),
            LS_OK);
        for (int v = 0; v < c.n_vocab; ++v) {
          const Interval& L = m.logits()[size_t(v)];
          ASSERT_TRUE(ref[t][size_t(v)].inside(L))
              << "position " << t << " logit " << v << ": " << ref[t][v].d()
              << " not in [" << L.lo << ", " << L.hi << "]";
          EXPECT_LT(L.width(), precision == 128 ? 1e-12 : 1e-6)
              << t << " " << v;
          // binary32 is within 1e-4 of the real logit here.
          EXPECT_LT(std::fabs(double(f[size_t(v)]) - L.mid()), 1e-4);
        }
      }
    }
  }
}

// A constructed tie: tokens 1 and 2 have the same embedding row, so their
// real logits are equal and neither may be certified. Token 3's row is
// token 1's with one component one binary32 ulp larger: a near-tie of
// about 1e-7 that the intervals (about 1e-13 wide) do separate, in the
// right direction only.
TEST(CertifyChoice, TiesAreNeverCertifiedNearTiesAreSeparatedCorrectly) {
  const ls_gpt2_config c{16, 4, 16, 2, 1};
  std::vector<float> w = random_weights(c, 11, 0.3f);
  const int C = c.n_embd;
  // The final hidden state of token 0 does not depend on rows 1..3 (they
  // are only read by the head): rows 1..3 := that state make them the
  // clear favourites.
  IntervalGpt2 m(c, w.data(), w.size());
  m.step(0);
  int best = 0;
  for (int k = 0; k < C; ++k) {
    const float h = float(m.final_hidden()[size_t(k)].mid());
    for (int r = 1; r <= 3; ++r) w[size_t(r * C + k)] = h;
    if (std::fabs(m.final_hidden()[size_t(k)].mid()) >
        std::fabs(m.final_hidden()[size_t(best)].mid())) {
      best = k;
    }
  }
  // Token 3: one ulp more along the hidden component of largest magnitude.
  const bool positive = m.final_hidden()[size_t(best)].mid() > 0;
  float& r3 = w[size_t(3 * C + best)];
  r3 = std::nextafter(r3, positive ? INFINITY : -INFINITY);
  IntervalGpt2 m2(c, w.data(), w.size());
  m2.step(0);
  // Token 3 is now the real argmax by a hair, if rows 1..3 lead at all.
  const auto& L = m2.logits();
  int top = 0;
  for (int v = 0; v < c.n_vocab; ++v) {
    if (L[size_t(v)].mid() > L[size_t(top)].mid()) top = v;
  }
  ASSERT_EQ(top, 3) << "the constructed favourite does not lead";
  const double gap = L[3].mid() - L[1].mid();
  EXPECT_GT(gap, 0.0);
  EXPECT_LT(gap, 1e-5);
  const ChoiceCertificate c3 = certify_choice(m2, 3);
  EXPECT_TRUE(c3.certified) << c3.margin << " " << c3.difference_margin;
  EXPECT_TRUE(c3.overlapping == 0 ? c3.margin > 0 : c3.difference_margin > 0);
  // The tied pair and the wrong side of the near-tie: not certified.
  for (int32_t wrong : {1, 2}) {
    const ChoiceCertificate cw = certify_choice(m2, wrong);
    EXPECT_FALSE(cw.certified) << wrong;
    EXPECT_LT(cw.margin, 0.0);
  }
  // With the near-tie undone (3 == 1 == 2): no token is certified.
  r3 = w[size_t(1 * C + best)];
  IntervalGpt2 m4(c, w.data(), w.size());
  m4.step(0);
  for (int32_t v : {1, 2, 3}) EXPECT_FALSE(certify_choice(m4, v).certified);
  // At binary64's precision the blocks' intervals are wider but still
  // enclose: the wrong choices stay uncertified.
  IntervalGpt2 m5(c, w.data(), w.size(), 53);
  m5.step(0);
  for (int32_t v : {1, 2, 3}) EXPECT_FALSE(certify_choice(m5, v).certified);
}

TEST(CertifyChoice, BadInputIsAnError) {
  const ls_gpt2_config c{16, 2, 16, 2, 1};
  const std::vector<float> w = random_weights(c, 5, 0.3f);
  EXPECT_THROW(IntervalGpt2(c, w.data(), w.size() - 1), Error);
  EXPECT_THROW(IntervalGpt2(c, nullptr, w.size()), Error);
  EXPECT_THROW(IntervalGpt2(c, w.data(), w.size(), 52), Error);
  const ls_gpt2_config bad{16, 2, 16, 3, 1};  // 16 % 3 != 0
  EXPECT_THROW(IntervalGpt2(bad, w.data(), w.size()), Error);
  IntervalGpt2 m(c, w.data(), w.size());
  EXPECT_THROW(certify_choice(m, 0), Error);  // no logits yet
  EXPECT_THROW(m.step(16), Error);
  EXPECT_THROW(m.step(-1), Error);
  m.step(1);
  EXPECT_THROW(certify_choice(m, 16), Error);
  EXPECT_THROW(certify_choice(m, -1), Error);
  m.step(2, false);
  EXPECT_TRUE(m.logits().empty());
  EXPECT_THROW(m.step(3), Error);  // the context of 2 is full
}

}  // namespace
}  // namespace lockstep
