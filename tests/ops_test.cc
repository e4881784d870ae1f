// docs/arithmetic.md §2: each operation equals the order the spec writes
// down, compared byte for byte with the same order spelled out here.
#include <gtest/gtest.h>

#include <cmath>

#include "ls_arith.h"
#include "ls_ops64.h"
#include "test_util.h"

namespace {

using lockstep::test::BytesEqual;
using lockstep::test::Uniform;

TEST(Dot64, ShortLengthsAreSequentialFromPositiveZero) {
  std::mt19937_64 rng(1);
  for (int n : {1, 2, 3, 4, 8, 12}) {
    auto x = Uniform(rng, n, -3, 3), w = Uniform(rng, n, -3, 3);
    double want = 0.0;
    for (int k = 0; k < n; ++k) want = want + x[k] * w[k];
    const double got = ls_dot64(x.data(), w.data(), n, 1);
    EXPECT_TRUE(BytesEqual(&got, &want, 1)) << "n = " << n;
  }
  // Starting from +0.0 turns a lone -0.0 product into +0.0.
  const double mz = -0.0, one = 1.0;
  EXPECT_FALSE(std::signbit(ls_dot64(&mz, &one, 1, 1)));
}

TEST(Dot64, MultiplesOf16UseSixteenBlocksAndTheHalvingTree) {
  std::mt19937_64 rng(2);
  int differs_from_sequential = 0;
  for (int n : {16, 32, 64, 768, 3072}) {
    auto x = Uniform(rng, n, -1, 1), w = Uniform(rng, size_t(n) * 3, -1, 1);
    const int stride = 3;  // a column of a [n, 3] input-major matrix
    double s[16];
    const int len = n / 16;
    for (int b = 0; b < 16; ++b) {
      s[b] = 0.0;
      for (int k = b * len; k < (b + 1) * len; ++k) {
        s[b] = s[b] + x[k] * w[size_t(k) * stride];
      }
    }
    for (int h : {8, 4, 2, 1}) {
      for (int i = 0; i < h; ++i) s[i] = s[i] + s[i + h];
    }
    const double got = ls_dot64(x.data(), w.data(), n, stride);
    EXPECT_TRUE(BytesEqual(&got, &s[0], 1)) << "n = " << n;
    double seq = 0.0;
    for (int k = 0; k < n; ++k) seq = seq + x[k] * w[size_t(k) * stride];
    differs_from_sequential += seq != got;
  }
  // The order is observable: plain sequential summation gives other bits.
  EXPECT_GT(differs_from_sequential, 0);
}

TEST(Matvec64, BiasIsAddedLastAndNullMeansNoAdd) {
  std::mt19937_64 rng(3);
  const int n_in = 8, n_out = 5;
  auto x = Uniform(rng, n_in, -2, 2), w = Uniform(rng, n_in * n_out, -2, 2),
       b = Uniform(rng, n_out, -2, 2);
  double y[n_out], yn[n_out];
  ls_matvec64(x.data(), w.data(), b.data(), n_in, n_out, y);
  ls_matvec64(x.data(), w.data(), nullptr, n_in, n_out, yn);
  for (int o = 0; o < n_out; ++o) {
    double want = ls_dot64(x.data(), w.data() + o, n_in, n_out);
    EXPECT_TRUE(BytesEqual(&yn[o], &want, 1));
    want = want + b[o];
    EXPECT_TRUE(BytesEqual(&y[o], &want, 1));
  }
}

TEST(LayerNorm64, FollowsTheStatedOrder) {
  std::mt19937_64 rng(4);
  for (int n : {4, 8, 64}) {
    auto x = Uniform(rng, n, -5, 5), g = Uniform(rng, n, -2, 2),
         b = Uniform(rng, n, -1, 1);
    std::vector<double> got(n), want(n), d(n);
    ls_layernorm64(x.data(), g.data(), b.data(), n, got.data());
    double ones_sum = 0.0;
    std::vector<double> ones(n, 1.0);
    // mean: the §2.1 order over x (a dot with ones has the same bits,
    // since x*1.0 is exact).
    ones_sum = ls_dot64(x.data(), ones.data(), n, 1);
    const double mean = ones_sum / n;
    for (int k = 0; k < n; ++k) d[k] = x[k] - mean;
    const double var = ls_dot64(d.data(), d.data(), n, 1) / n;
    const double r = 1.0 / std::sqrt(var + 1e-5);
    for (int k = 0; k < n; ++k) want[k] = (d[k] * r) * g[k] + b[k];
    EXPECT_TRUE(BytesEqual(got, want)) << "n = " << n;
  }
}

TEST(Softmax64, MaxExpSequentialSumDivide) {
  std::mt19937_64 rng(5);
  for (int n : {1, 2, 7, 128}) {
    auto s = Uniform(rng, n, -30, 30);
    std::vector<double> got(n), want(n);
    ls_softmax64(s.data(), n, got.data());
    double m = s[0];
    for (double v : s) m = std::fmax(m, v);
    double sum = 0.0;
    for (int j = 0; j < n; ++j) sum = sum + (want[j] = ls_exp64(s[j] - m));
    for (int j = 0; j < n; ++j) want[j] = want[j] / sum;
    EXPECT_TRUE(BytesEqual(got, want)) << "n = " << n;
    double total = 0;
    for (double p : got) total += p;
    EXPECT_NEAR(total, 1.0, 1e-15 * n);  // a sanity bound, not the spec
  }
}

TEST(WeightedSum64, SequentialOverPositions) {
  std::mt19937_64 rng(6);
  const int n = 37, stride = 16, w = 2;
  auto p = Uniform(rng, n, 0, 1), v = Uniform(rng, n * stride, -4, 4);
  double got[w];
  ls_weighted_sum64(p.data(), v.data() + 3, n, stride, w, got);
  for (int d = 0; d < w; ++d) {
    double want = 0.0;
    for (int j = 0; j < n; ++j) want = want + p[j] * v[j * stride + 3 + d];
    EXPECT_TRUE(BytesEqual(&got[d], &want, 1));
  }
}

}  // namespace
