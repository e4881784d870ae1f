// docs/arithmetic.md §5: the PRNG's published outputs, greedy tie-breaking
// and top-k sampling's ranking, weights and determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "ls_arith.h"
#include "ls_sampler.h"
#include "test_util.h"

namespace {

TEST(SplitMix64, ReferenceOutputsForSeedZero) {
  // Outputs of Vigna's splitmix64.c for state 0.
  uint64_t s = 0;
  EXPECT_EQ(ls_splitmix64_next(&s), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(ls_splitmix64_next(&s), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(ls_splitmix64_next(&s), 0x06c45d188009454fULL);
}

TEST(Uniform64, Top53BitsTimesTwoToMinus53) {
  uint64_t s = 0;
  const double u = ls_uniform64(&s);
  EXPECT_EQ(u, double(0xe220a8397b1dcdafULL >> 11) * 0x1p-53);
  for (int i = 0; i < 10000; ++i) {
    const double v = ls_uniform64(&s);
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
  }
}

TEST(Argmax64, LowestIndexWinsTies) {
  const double l[6] = {1.0, 3.0, -2.0, 3.0, 0.5, 3.0};
  EXPECT_EQ(ls_argmax64(l, 6), 1);
}

TEST(TopK, RanksByValueThenIndexAndWeightsFollowTheSpec) {
  std::mt19937_64 rng(9);
  auto logits = lockstep::test::Uniform(rng, 256, -4, 4);
  logits[17] = logits[200] = 9.0;  // a tie at the top
  int rank[8];
  double weight[8];
  uint64_t state = 42;
  const double T = 0.7;
  const int tok =
      ls_sample_top_k64(logits.data(), 256, 8, T, &state, rank, weight);
  EXPECT_EQ(rank[0], 17);
  EXPECT_EQ(rank[1], 200);
  for (int r = 1; r < 8; ++r) {
    EXPECT_GE(logits[rank[r - 1]], logits[rank[r]]);
  }
  EXPECT_EQ(weight[0], 1.0);  // exp(0) exactly
  double sum = 0.0;
  for (int r = 0; r < 8; ++r) {
    const double w = ls_exp64(logits[rank[r]] / T - logits[rank[0]] / T);
    EXPECT_EQ(weight[r], w);
    sum = sum + w;
  }
  // Replay the draw: the chosen token is the first whose running sum
  // exceeds u * sum.
  uint64_t replay = 42;
  const double target = ls_uniform64(&replay) * sum;
  double c = 0.0;
  int want = rank[7];
  for (int r = 0; r < 8; ++r) {
    c = c + weight[r];
    if (target < c) {
      want = rank[r];
      break;
    }
  }
  EXPECT_EQ(tok, want);
  EXPECT_EQ(state, replay);  // exactly one draw per token
}

TEST(TopK, KOneIsGreedyAndSeedsAreReproducible) {
  std::mt19937_64 rng(10);
  auto logits = lockstep::test::Uniform(rng, 256, -4, 4);
  int rank[256];
  double weight[256];
  for (uint64_t seed = 0; seed < 20; ++seed) {
    uint64_t s = seed;
    EXPECT_EQ(ls_sample_top_k64(logits.data(), 256, 1, 1.0, &s, rank, weight),
              ls_argmax64(logits.data(), 256));
  }
  std::vector<int> a, b;
  uint64_t s1 = 1234, s2 = 1234;
  for (int i = 0; i < 100; ++i) {
    a.push_back(
        ls_sample_top_k64(logits.data(), 256, 40, 1.0, &s1, rank, weight));
    b.push_back(
        ls_sample_top_k64(logits.data(), 256, 40, 1.0, &s2, rank, weight));
  }
  EXPECT_EQ(a, b);
  EXPECT_GT(std::set<int>(a.begin(), a.end()).size(), 5u);  // it samples
}

}  // namespace
