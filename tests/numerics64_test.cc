// docs/numerics.md §2: the binary64 error bounds that numerics/run.sh
// certifies (Gappa and Sollya), checked against MPFR on seeded random inputs.
// Every observed error must lie below its certified bound: evidence that the
// Gappa scripts model what core/ computes (a script that left out a rounding
// or mistook an order would, somewhere, certify less than the code does).
// The observed maxima are printed next to the bounds.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "ls_arith.h"
#include "ls_ops64.h"

namespace {

// The certified bounds, as numerics/run.sh prints them (rounded up in the
// last digit shown). Keep in step with numerics/.
constexpr double kExpRel = 2.85e-16;      // exp64.g, results >= 2^-1022
constexpr double kGelu = 6.57e-15;        // gelu64_{pos,neg}.g, [-3, 3]
constexpr double kGeluAll = 1.5e-14;      // + *_wide.g and |x| >= 20
constexpr double kSoftmax4 = 1.23e-15;    // softmax64.g, n <= 4
constexpr double kSoftmax128 = 2.01e-14;  // softmax64.g, n <= 128
constexpr double kLayerNorm = 6.29e-7;    // layernorm64_tail.g
constexpr double kLnMaxInput = 140000.0;  // LayerNorm's stated domain
constexpr double kUnderflow = -0x1.74910d52d3052p+9;
constexpr mpfr_prec_t kPrec = 200;

void Report(const char* what, double observed, double bound) {
  std::printf("%-40s observed %.3e  certified %.3e  (%.0f%%)\n", what, observed,
              bound, 100.0 * observed / bound);
}

// |got - exact| with exact held in m (kPrec bits), as a double.
double AbsErr(double got, mpfr_srcptr m) {
  mpfr_t g;
  mpfr_init2(g, kPrec);
  mpfr_set_d(g, got, MPFR_RNDN);
  mpfr_sub(g, g, m, MPFR_RNDN);
  const double e = std::fabs(mpfr_get_d(g, MPFR_RNDU));
  mpfr_clear(g);
  return e;
}

double ExpRelErr(double x) {
  mpfr_t m;
  mpfr_init2(m, kPrec);
  mpfr_set_d(m, x, MPFR_RNDN);
  mpfr_exp(m, m, MPFR_RNDN);
  const double e = AbsErr(ls_exp64(x), m) / mpfr_get_d(m, MPFR_RNDD);
  mpfr_clear(m);
  return e;
}

TEST(Numerics64, ExpRelativeErrorBelowTheGappaBound) {
  std::mt19937_64 rng(1401);
  // Results >= 2^-1022 need x >= -708.39; 709 is exp64.g's upper end.
  std::uniform_real_distribution<double> wide(-708.39, 709.0);
  std::uniform_real_distribution<double> neg8(-8.0, 0.0);
  std::uniform_real_distribution<double> neg1(-1.0, 0.0);
  double worst = 0, worst8 = 0, worst1 = 0;
  for (int i = 0; i < 50000; ++i) {
    worst = std::max(worst, ExpRelErr(wide(rng)));
    worst8 = std::max(worst8, ExpRelErr(neg8(rng)));
    worst1 = std::max(worst1, ExpRelErr(neg1(rng)));
  }
  // Near the reduction's boundaries r = +-ln2/2 and around 0.
  for (int n = -12; n <= 12; ++n) {
    for (int k = -200; k <= 200; ++k) {
      const double x = (n + 0.5) * 0x1.62e42fefa39efp-1 + k * 0x1p-45;
      worst = std::max(worst, ExpRelErr(x));
    }
  }
  Report("exp relative, [-708.39, 709]", worst, kExpRel);
  Report("exp relative (= absolute bound), [-8, 0]", worst8, kExpRel);
  Report("exp relative (= absolute bound), [-1, 0]", worst1, kExpRel);
  EXPECT_LE(worst, kExpRel);
  EXPECT_LE(worst8, kExpRel);
  EXPECT_LE(worst1, kExpRel);
}

TEST(Numerics64, ExpBelowUnderflowWithinHalfTheSmallestSubnormal) {
  // The exp lemma's other part: results below 2^-1022 are within
  // kExpRel * exp(x) + 2^-1075, and 0 below UNDERFLOW. (2^-1075 is not a
  // double; the comparison takes the next one up, 2^-1074.)
  std::mt19937_64 rng(1402);
  std::uniform_real_distribution<double> low(kUnderflow - 5.0, -708.39);
  mpfr_t m;
  mpfr_init2(m, kPrec);
  for (int i = 0; i < 20000; ++i) {
    const double x = low(rng);
    mpfr_set_d(m, x, MPFR_RNDN);
    mpfr_exp(m, m, MPFR_RNDN);
    const double exact = mpfr_get_d(m, MPFR_RNDU);
    EXPECT_LE(AbsErr(ls_exp64(x), m), kExpRel * exact + 0x1p-1074)
        << std::hexfloat << x;
  }
  mpfr_clear(m);
}

// GELU's tanh form with the real constants sqrt(2/pi) and 0.044715.
double GeluAbsErr(double x) {
  mpfr_t m, c, a, t;
  mpfr_inits2(kPrec, m, c, a, t, (mpfr_ptr)0);
  mpfr_const_pi(c, MPFR_RNDN);
  mpfr_ui_div(c, 2, c, MPFR_RNDN);
  mpfr_sqrt(c, c, MPFR_RNDN);
  mpfr_set_str(a, "0.044715", 10, MPFR_RNDN);
  mpfr_set_d(m, x, MPFR_RNDN);
  mpfr_pow_ui(t, m, 3, MPFR_RNDN);
  mpfr_mul(t, t, a, MPFR_RNDN);
  mpfr_add(t, t, m, MPFR_RNDN);
  mpfr_mul(t, t, c, MPFR_RNDN);
  mpfr_tanh(t, t, MPFR_RNDN);
  mpfr_add_ui(t, t, 1, MPFR_RNDN);
  mpfr_mul(t, t, m, MPFR_RNDN);
  mpfr_div_ui(t, t, 2, MPFR_RNDN);
  const double e = AbsErr(ls_gelu64(x), t);
  mpfr_clears(m, c, a, t, (mpfr_ptr)0);
  return e;
}

TEST(Numerics64, GeluAbsoluteErrorBelowTheGappaBound) {
  std::mt19937_64 rng(1403);
  std::uniform_real_distribution<double> wide(-3.0, 3.0);
  std::uniform_real_distribution<double> near0(-1e-3, 1e-3);
  double worst = 0;
  for (int i = 0; i < 100000; ++i) {
    worst = std::max(worst, GeluAbsErr(i % 8 ? wide(rng) : near0(rng)));
  }
  worst = std::max({worst, GeluAbsErr(3.0), GeluAbsErr(-3.0)});
  Report("GELU absolute, [-3, 3]", worst, kGelu);
  EXPECT_LE(worst, kGelu);
  // Beyond: [-20, 20] by Gappa, |x| >= 20 by the saturation argument; the
  // large inputs are spread over the binades up to 2^1020.
  std::uniform_real_distribution<double> mid(-25.0, 25.0);
  std::uniform_real_distribution<double> binade(-1020.0, 1020.0);
  double worst_all = 0;
  for (int i = 0; i < 50000; ++i) {
    const double x =
        i % 4 ? mid(rng) : std::copysign(std::exp2(binade(rng)), wide(rng));
    worst_all = std::max(worst_all, GeluAbsErr(x));
  }
  Report("GELU absolute, every finite x", worst_all, kGeluAll);
  EXPECT_LE(worst_all, kGeluAll);
}

// The largest |p - exact| over one softmax of s[0..n).
double SoftmaxErr(const std::vector<double>& s) {
  const int n = (int)s.size();
  std::vector<double> p(n);
  ls_softmax64(s.data(), n, p.data());
  const double m = *std::max_element(s.begin(), s.end());
  std::unique_ptr<mpfr_t[]> e(new mpfr_t[n]);
  mpfr_t sum;
  mpfr_init2(sum, kPrec);
  mpfr_set_ui(sum, 0, MPFR_RNDN);
  for (int j = 0; j < n; ++j) {
    mpfr_init2(e[j], kPrec);
    mpfr_set_d(e[j], s[j], MPFR_RNDN);
    mpfr_sub_d(e[j], e[j], m, MPFR_RNDN);
    mpfr_exp(e[j], e[j], MPFR_RNDN);
    mpfr_add(sum, sum, e[j], MPFR_RNDN);
  }
  double worst = 0;
  for (int j = 0; j < n; ++j) {
    mpfr_div(e[j], e[j], sum, MPFR_RNDN);
    worst = std::max(worst, AbsErr(p[j], e[j]));
    mpfr_clear(e[j]);
  }
  mpfr_clear(sum);
  return worst;
}

TEST(Numerics64, SoftmaxAbsoluteErrorBelowTheBound) {
  std::mt19937_64 rng(1404);
  const double scales[] = {1e-3, 1.0, 10.0, 100.0, 1e4, 1.7e6};
  double worst4 = 0, worst128 = 0;
  for (int trial = 0; trial < 6000; ++trial) {
    const int n = trial % 2 ? 1 + (int)(rng() % 4) : 1 + (int)(rng() % 128);
    const double scale = scales[trial % 6];
    std::uniform_real_distribution<double> d(-scale, scale);
    std::vector<double> s(n);
    for (double& v : s) v = d(rng);
    // Near-ties: many scores close to the maximum, the sum then largest.
    if (trial % 3 == 0) {
      for (double& v : s) v = s[0] + d(rng) * 1e-6;
    }
    const double e = SoftmaxErr(s);
    (n <= 4 ? worst4 : worst128) = std::max(n <= 4 ? worst4 : worst128, e);
  }
  Report("softmax absolute, n <= 4", worst4, kSoftmax4);
  Report("softmax absolute, n <= 128", worst128, kSoftmax128);
  EXPECT_LE(worst4, kSoftmax4);
  EXPECT_LE(worst128, kSoftmax128);
}

// The largest |y - exact| over one LayerNorm of x[0..4).
double LayerNormErr(const double* x, const double* g, const double* b) {
  double y[4];
  ls_layernorm64(x, g, b, 4, y);
  mpfr_t mean, var, d, t, eps;
  mpfr_inits2(kPrec, mean, var, d, t, eps, (mpfr_ptr)0);
  mpfr_set_ui(mean, 0, MPFR_RNDN);
  for (int k = 0; k < 4; ++k) mpfr_add_d(mean, mean, x[k], MPFR_RNDN);
  mpfr_div_ui(mean, mean, 4, MPFR_RNDN);
  mpfr_set_ui(var, 0, MPFR_RNDN);
  for (int k = 0; k < 4; ++k) {
    mpfr_set_d(d, x[k], MPFR_RNDN);
    mpfr_sub(d, d, mean, MPFR_RNDN);
    mpfr_sqr(d, d, MPFR_RNDN);
    mpfr_add(var, var, d, MPFR_RNDN);
  }
  mpfr_div_ui(var, var, 4, MPFR_RNDN);
  mpfr_set_str(eps, "1e-5", 10, MPFR_RNDN);  // the real epsilon
  mpfr_add(var, var, eps, MPFR_RNDN);
  mpfr_rec_sqrt(var, var, MPFR_RNDN);
  double worst = 0;
  for (int k = 0; k < 4; ++k) {
    mpfr_set_d(t, x[k], MPFR_RNDN);
    mpfr_sub(t, t, mean, MPFR_RNDN);
    mpfr_mul(t, t, var, MPFR_RNDN);
    mpfr_mul_d(t, t, g[k], MPFR_RNDN);
    mpfr_add_d(t, t, b[k], MPFR_RNDN);
    worst = std::max(worst, AbsErr(y[k], t));
  }
  mpfr_clears(mean, var, d, t, eps, (mpfr_ptr)0);
  return worst;
}

TEST(Numerics64, LayerNormAbsoluteErrorBelowTheBound) {
  std::mt19937_64 rng(1405);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_real_distribution<double> gb(-10.0, 10.0);
  double worst = 0;
  for (int trial = 0; trial < 60000; ++trial) {
    double x[4], g[4], b[4];
    for (int k = 0; k < 4; ++k) g[k] = gb(rng), b[k] = gb(rng);
    if (trial % 2) {
      // Wide inputs, up to the stated domain.
      const double scale = trial % 4 == 1 ? kLnMaxInput : 20.0;
      for (double& v : x) v = unit(rng) * scale;
    } else {
      // Nearly equal large inputs: var near 0, the mean's error divided by
      // sqrt(eps). This is where the bound is approached.
      const double c = unit(rng) * kLnMaxInput;
      const double spread = std::ldexp(1.0, -(int)(rng() % 40));
      for (double& v : x) {
        v = std::clamp(c + unit(rng) * spread, -kLnMaxInput, kLnMaxInput);
      }
    }
    worst = std::max(worst, LayerNormErr(x, g, b));
  }
  Report("LayerNorm absolute, n = 4", worst, kLayerNorm);
  EXPECT_LE(worst, kLayerNorm);
}

}  // namespace
