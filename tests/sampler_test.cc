// docs/arithmetic.md §5: the PRNG's published outputs, greedy tie-breaking,
// top-k sampling's ranking, weights and determinism, and top-p (§5.4): its
// prefix rule, a hand-computed case and a pinned token stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include "lockstep/error.h"
#include "lockstep/sampling.h"
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

// Logits that are the same bits everywhere (std::uniform_real_distribution
// is not): SplitMix64 uniforms scaled to [-4, 4), exactly.
std::vector<double> PortableLogits(uint64_t seed, int n) {
  std::vector<double> l(static_cast<size_t>(n));
  for (auto& v : l) v = ls_uniform64(&seed) * 8.0 - 4.0;
  return l;
}

TEST(RankTopK, MatchesASortByLogitThenIndex) {
  for (int n : {1, 2, 7, 256, 1000}) {
    auto logits = PortableLogits(uint64_t(n), n);
    // Many ties: round to a coarse grid.
    for (auto& v : logits) v = std::floor(v * 2.0) / 2.0;
    std::vector<int> want(static_cast<size_t>(n));
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](int a, int b) {
      return logits[size_t(a)] > logits[size_t(b)];
    });
    for (int k : {1, 2, 3, n / 2, n - 1, n}) {
      if (k < 1 || k > n) continue;
      std::vector<int> rank(static_cast<size_t>(k));
      ls_rank_top_k64(logits.data(), n, k, rank.data());
      EXPECT_EQ(rank, std::vector<int>(want.begin(), want.begin() + k))
          << "n " << n << " k " << k;
    }
  }
}

// Hand-computed (§5.4): logits 0, 2, -1, 1 rank as tokens 1, 3, 0, 2 with
// weights 1, e^-1, e^-2, e^-3 (about 1, 0.368, 0.135, 0.050; S = 1.553).
// Seed 0's first uniform is 0xe220a8397b1dcdaf >> 11 times 2^-53 = 0.8833.
TEST(TopP, HandComputedCase) {
  const double logits[4] = {0.0, 2.0, -1.0, 1.0};
  int rank[4], kept = 0;
  double weight[4];
  const auto draw = [&](double p) {
    uint64_t s = 0;
    return ls_sample_top_p64(logits, 4, 4, 1.0, p, &s, rank, weight, &kept);
  };
  // P = 0.5: P*S = 0.78 is reached by the first weight alone.
  EXPECT_EQ(draw(0.5), 1);
  EXPECT_EQ(kept, 1);
  EXPECT_EQ(rank[0], 1);
  EXPECT_EQ(rank[1], 3);
  EXPECT_EQ(rank[2], 0);
  EXPECT_EQ(rank[3], 2);
  EXPECT_EQ(weight[0], 1.0);
  // P = 0.7: P*S = 1.087 needs two (1.368); target 0.8833 * 1.368 = 1.208
  // lies past the first weight: token 3.
  EXPECT_EQ(draw(0.7), 3);
  EXPECT_EQ(kept, 2);
  // P = 0.9: P*S = 1.398 needs three (1.503); target 0.8833 * 1.503 = 1.328
  // lies in the second: token 3 again.
  EXPECT_EQ(draw(0.9), 3);
  EXPECT_EQ(kept, 3);
  // P = 1 keeps all four; target 0.8833 * 1.553 = 1.372 lies past 1.368,
  // in the third: token 0, as plain top-k chooses.
  EXPECT_EQ(draw(1.0), 0);
  EXPECT_EQ(kept, 4);
  uint64_t s = 0;
  EXPECT_EQ(ls_sample_top_k64(logits, 4, 4, 1.0, &s, rank, weight), 0);
}

TEST(TopP, ThePrefixStopsWhereTheSumReachesPTimesS) {
  // Equal logits: every weight is exactly 1, S = 4, so P*S is exact and
  // the comparison "c >= P*S" decides at equality.
  const double logits[4] = {0.5, 0.5, 0.5, 0.5};
  int rank[4], kept = 0;
  double weight[4];
  const auto kept_for = [&](double p) {
    uint64_t s = 99;
    ls_sample_top_p64(logits, 4, 4, 0.6, p, &s, rank, weight, &kept);
    return kept;
  };
  EXPECT_EQ(kept_for(0.25), 1);  // c = 1 reaches 1
  EXPECT_EQ(kept_for(0.5), 2);   // c = 2 reaches 2
  EXPECT_EQ(kept_for(std::nextafter(0.5, 1.0)), 3);
  EXPECT_EQ(kept_for(std::nextafter(0.25, 0.0)), 1);
  EXPECT_EQ(kept_for(0.75), 3);
  EXPECT_EQ(kept_for(1.0), 4);
  EXPECT_EQ(kept_for(0x1p-60), 1);
  EXPECT_EQ(rank[0], 0);  // ties: lower index first
  EXPECT_EQ(rank[3], 3);
}

TEST(TopP, OneIsTopKAndEveryDrawUsesOneUniform) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const auto logits = PortableLogits(seed + 100, 300);
    for (int k : {1, 5, 40, 300}) {
      std::vector<int> r1(static_cast<size_t>(k)), r2(static_cast<size_t>(k));
      std::vector<double> w1(static_cast<size_t>(k)),
          w2(static_cast<size_t>(k));
      uint64_t s1 = seed, s2 = seed, s3 = seed;
      const int a = ls_sample_top_k64(logits.data(), 300, k, 0.9, &s1,
                                      r1.data(), w1.data());
      const int b = ls_sample_top_p64(logits.data(), 300, k, 0.9, 1.0, &s2,
                                      r2.data(), w2.data(), nullptr);
      EXPECT_EQ(a, b);
      EXPECT_EQ(r1, r2);
      EXPECT_TRUE(lockstep::test::BytesEqual(w1, w2));
      EXPECT_EQ(s1, s2);
      ls_uniform64(&s3);
      EXPECT_EQ(s2, s3);  // exactly one draw
      // A smaller P chooses within the kept prefix.
      int kept = 0;
      uint64_t s4 = seed;
      const int c = ls_sample_top_p64(logits.data(), 300, k, 0.9, 0.3, &s4,
                                      r2.data(), w2.data(), &kept);
      ASSERT_GE(kept, 1);
      ASSERT_LE(kept, k);
      EXPECT_NE(std::find(r2.begin(), r2.begin() + kept, c), r2.begin() + kept);
      EXPECT_EQ(s4, s3);
    }
  }
}

TEST(TopP, PinnedTokenStream) {
  // The tokens §5.4 chooses for fixed logits and seed: any change to the
  // order of operations (or to §5.1, §3.1) shows here. The list was
  // computed by a separate Python transcription of §3.1, §5.1 and §5.4
  // (binary64 floats, no shared code) and agrees with this implementation.
  const auto logits = PortableLogits(2026, 1000);
  std::vector<int> rank(1000);
  std::vector<double> weight(1000);
  uint64_t s = 7;
  std::vector<int> got;
  for (int i = 0; i < 24; ++i) {
    got.push_back(ls_sample_top_p64(logits.data(), 1000, 1000, 0.8, 0.9, &s,
                                    rank.data(), weight.data(), nullptr));
  }
  const std::vector<int> pinned = {81,  714, 979, 161, 842, 27,  862, 227,
                                   320, 783, 646, 784, 936, 736, 593, 125,
                                   464, 227, 609, 691, 555, 667, 217, 508};
  EXPECT_EQ(got, pinned);
}

// GPT-2's logits are binary32: the sampler ranks the whole vocabulary by
// integer keys then (core/ls_sampler.c). The ranking must be §5.3's:
// compared here with the heap ranking, with ties, -0.0 beside +0.0, and
// values that are not binary32 (the heap path itself).
TEST(TopP, WholeVocabularyRankingOfBinary32Logits) {
  for (int n : {1, 2, 17, 256, 50257}) {
    uint64_t seed = uint64_t(n) * 7;
    std::vector<double> logits(static_cast<size_t>(n));
    for (auto& v : logits) {
      const double u = ls_uniform64(&seed);
      // A coarse grid (many ties) for half of them, zeros of both signs.
      v = u < 0.5 ? double(float(u * 30.0 - 15.0)) : std::floor(u * 8.0) - 6.0;
      if (u > 0.9) v = u > 0.95 ? 0.0 : -0.0;
    }
    std::vector<int> heap(static_cast<size_t>(n));
    ls_rank_top_k64(logits.data(), n, n, heap.data());
    std::vector<int> rank(static_cast<size_t>(n));
    std::vector<double> weight(static_cast<size_t>(n));
    uint64_t s = 1;
    ls_sample_top_k64(logits.data(), n, n, 1.0, &s, rank.data(), weight.data());
    EXPECT_EQ(rank, heap) << "n " << n;
    s = 1;
    ls_sample_top_p64(logits.data(), n, n, 0.7, 0.5, &s, rank.data(),
                      weight.data(), nullptr);
    EXPECT_EQ(rank, heap) << "n " << n;
  }
}

TEST(TopP, PinnedTokenStreamOverAGpt2SizedBinary32Vocabulary) {
  // As PinnedTokenStream, with 50,257 binary32 logits (the key-sort path),
  // also computed by the Python transcription.
  uint64_t seed = 31;
  std::vector<double> logits(50257);
  for (auto& v : logits) v = double(float(ls_uniform64(&seed) * 8.0 - 4.0));
  lockstep::SamplerOptions o;
  o.top_p = 0.95;
  o.temperature = 1.1;
  o.seed = 12;
  lockstep::Sampler sampler(o, 50257);
  std::vector<int> got;
  for (int i = 0; i < 12; ++i) {
    got.push_back(sampler.next(std::span<const double>(logits)));
  }
  const std::vector<int> pinned = {24026, 23527, 15012, 4187,  42860, 22247,
                                   23625, 13333, 25876, 30436, 19854, 6308};
  EXPECT_EQ(got, pinned);
}

TEST(Sampler, TopPOptionsAreCheckedAndSampleTheWholeVocabulary) {
  using lockstep::Sampler;
  using lockstep::SamplerOptions;
  for (double p : {0.0, -0.5, 1.5, std::nan(""),
                   std::numeric_limits<double>::infinity()}) {
    SamplerOptions o;
    o.top_p = p;
    EXPECT_THROW(Sampler(o, 256), lockstep::Error) << p;
  }
  const auto logits = PortableLogits(5, 256);
  SamplerOptions o;
  o.top_p = 0.95;
  o.temperature = 1.3;
  o.seed = 11;
  Sampler nucleus(o, 256);  // top_k 0: the whole vocabulary
  std::vector<int> rank(256);
  std::vector<double> weight(256);
  uint64_t s = 11;
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) {
    const int want = ls_sample_top_p64(logits.data(), 256, 256, 1.3, 0.95, &s,
                                       rank.data(), weight.data(), nullptr);
    EXPECT_EQ(nucleus.next(std::span<const double>(logits)), want);
    seen.insert(want);
  }
  EXPECT_GT(seen.size(), 20u);  // it samples
  // With top-k, the nucleus is taken within the k best.
  o.top_k = 3;
  Sampler both(o, 256);
  std::vector<int> r3(3);
  ls_rank_top_k64(logits.data(), 256, 3, r3.data());
  for (int i = 0; i < 50; ++i) {
    const int t = both.next(std::span<const double>(logits));
    EXPECT_NE(std::find(r3.begin(), r3.end(), t), r3.end());
  }
}

}  // namespace
