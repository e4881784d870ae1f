// The tiny models' checked entry (docs/models.md) and the shipped
// checkpoints' recorded outputs.
#include <gtest/gtest.h>

#include <cmath>

#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep/tiny.h"
#include "ls_tiny.h"
#include "test_util.h"

namespace {

using lockstep::test::BytesEqual;
using lockstep::test::RandomBytes;
using lockstep::test::Uniform;

TEST(TinyLayout, ParameterCountsAreTheDocumentedOnes) {
  EXPECT_EQ(ls_tiny_layout_for(4).total, 2488u);
  EXPECT_EQ(ls_tiny_layout_for(64).total, 2728u);
  EXPECT_EQ(ls_tiny_layout_for(128).total, 2984u);
  EXPECT_EQ(ls_tiny_layout_for(0).total, 0u);
  EXPECT_EQ(ls_tiny_layout_for(1025).total, 0u);
  for (int n_ctx : {4, 64, 128}) {
    uint64_t next = 0;
    for (const auto& t : lockstep::tiny_tensors(n_ctx)) {
      EXPECT_EQ(t.offset, next) << t.name;
      next += t.words();
    }
    EXPECT_EQ(next, lockstep::tiny_param_count(n_ctx));
  }
}

struct Case {
  int n_ctx;
  std::vector<double> w;
  std::vector<int32_t> tokens;
};

Case RandomCase(uint64_t seed, int n_ctx, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  Case c{
      n_ctx, Uniform(rng, ls_tiny_layout_for(n_ctx).total, -scale, scale), {}};
  c.tokens = RandomBytes(rng, 1 + rng() % n_ctx);
  return c;
}

ls_status Checked(const Case& c, double bound, double* logits) {
  std::vector<double> scratch(ls_tiny_scratch_words(c.n_ctx));
  return ls_tiny_logits_checked(c.n_ctx, c.w.data(), c.w.size(),
                                c.tokens.data(), c.tokens.size(), bound,
                                scratch.data(), scratch.size(), logits);
}

TEST(TinyChecked, RejectsEachBadInputWithItsStatusAndWritesNothing) {
  const Case good = RandomCase(1, 64);
  double logits[256];
  const double sentinel = 0x1.5p-3;
  for (double& v : logits) v = sentinel;
  auto untouched = [&] {
    for (double v : logits) {
      if (v != sentinel) return false;
    }
    return true;
  };
  Case c = good;
  c.w.pop_back();
  EXPECT_EQ(Checked(c, 10, logits), LS_ERR_WEIGHT_COUNT);
  for (double bad : {double(NAN), double(INFINITY), -double(INFINITY)}) {
    c = good;
    c.w[1234] = bad;
    EXPECT_EQ(Checked(c, 10, logits), LS_ERR_WEIGHT_NONFINITE);
  }
  for (double b :
       {-1e-300, 10.000000000000002, double(NAN), double(INFINITY), -5.0}) {
    EXPECT_EQ(Checked(good, b, logits), LS_ERR_BOUND) << b;
  }
  c = good;
  c.tokens.clear();
  EXPECT_EQ(Checked(c, 10, logits), LS_ERR_EMPTY_SEQUENCE);
  c.tokens.assign(65, 7);
  EXPECT_EQ(Checked(c, 10, logits), LS_ERR_SEQUENCE_TOO_LONG);
  for (int32_t t : {-1, 256, 1 << 30}) {
    c = good;
    c.tokens.back() = t;
    EXPECT_EQ(Checked(c, 10, logits), LS_ERR_TOKEN);
  }
  std::vector<double> small(10);
  EXPECT_EQ(ls_tiny_logits_checked(64, good.w.data(), good.w.size(),
                                   good.tokens.data(), good.tokens.size(), 10,
                                   small.data(), small.size(), logits),
            LS_ERR_SCRATCH);
  EXPECT_EQ(ls_tiny_logits_checked(3000, good.w.data(), good.w.size(),
                                   good.tokens.data(), good.tokens.size(), 10,
                                   small.data(), small.size(), logits),
            LS_ERR_CONTEXT);
  EXPECT_TRUE(untouched());
  EXPECT_EQ(Checked(good, 10, logits), LS_OK);
  EXPECT_FALSE(untouched());
}

TEST(TinyChecked, CppEntryThrowsNamedErrors) {
  const Case c = RandomCase(2, 4);
  auto msg = [&](std::vector<int32_t> tokens, double bound) {
    try {
      lockstep::tiny_logits(4, c.w, tokens, bound);
    } catch (const lockstep::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({}, 10).find("empty"), std::string::npos);
  EXPECT_NE(msg({1, 2, 3, 4, 5}, 10).find("longer than the model's context"),
            std::string::npos);
  EXPECT_NE(msg({1}, 11).find("bound"), std::string::npos);
  EXPECT_NE(msg({300}, 10).find("vocabulary"), std::string::npos);
  EXPECT_EQ(msg({1, 2}, 10), "no error");
}

TEST(TinyChecked, ClipsToTheBoundWithoutTouchingTheCallersWeights) {
  for (int n_ctx : {4, 64, 128}) {
    Case c = RandomCase(100 + n_ctx, n_ctx, 6.0);
    const std::vector<double> original = c.w;
    for (double bound : {0.0, 0.75, 2.5, 10.0}) {
      double got[256], want[256];
      ASSERT_EQ(Checked(c, bound, got), LS_OK);
      EXPECT_TRUE(BytesEqual(c.w, original));
      Case clipped = c;
      for (double& v : clipped.w) v = std::fmin(bound, std::fmax(-bound, v));
      ASSERT_EQ(Checked(clipped, 10.0, want), LS_OK);
      EXPECT_TRUE(BytesEqual(got, want, 256)) << "B = " << bound;
    }
  }
}

TEST(TinyChecked, LogitsAreFiniteAndDependOnEveryToken) {
  for (int n_ctx : {4, 64, 128}) {
    Case c = RandomCase(200 + n_ctx, n_ctx);
    std::mt19937_64 rng(n_ctx);
    c.tokens = RandomBytes(rng, n_ctx);
    double a[256], b[256];
    ASSERT_EQ(Checked(c, 10, a), LS_OK);
    for (double v : a) ASSERT_TRUE(std::isfinite(v));
    // Changing the first token changes the last position's logits (through
    // attention): the whole window is read.
    c.tokens[0] ^= 0x55;
    ASSERT_EQ(Checked(c, 10, b), LS_OK);
    EXPECT_FALSE(BytesEqual(a, b, 256));
  }
}

}  // namespace
