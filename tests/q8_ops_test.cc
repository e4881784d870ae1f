// docs/arithmetic.md §7.1-7.3 and 7.6: bfloat16 scales, group quantization
// and the int8 product, each compared byte for byte with the rule written
// out again here independently (double arithmetic and std::nearbyint for
// the rounding, the §7.6 index formula spelled out, 64-bit integer sums).
#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gpt2_test_util.h"
#include "ls_q8.h"

namespace {

using lockstep::test::BytesEqual;

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// §7.1 independently: the two bfloat16 neighbours of v in double, the
// nearer one, ties to the even significand.
uint16_t bf16_ref(float v) {
  const uint32_t u = bits(v);
  const uint16_t lo = uint16_t(u >> 16), hi = uint16_t(lo + 1);
  const double dv = v, dlo = from_bits(uint32_t(lo) << 16),
               dhi = from_bits(uint32_t(hi) << 16);
  if (dv - dlo < dhi - dv) return lo;
  if (dv - dlo > dhi - dv) return hi;
  return (lo & 1) ? hi : lo;
}

// §7.2 independently: max magnitude, scale, then each level through double
// and std::nearbyint (round to nearest even in the default mode).
struct Group {
  std::vector<int8_t> q;
  float s;
};
Group quantize_ref(const float* v, bool weights) {
  float m = 0.0f;
  for (int i = 0; i < 64; ++i) m = std::max(m, std::fabs(v[i]));
  float s = m / 127.0f;
  if (weights) s = from_bits(uint32_t(bf16_ref(s)) << 16);
  Group g{std::vector<int8_t>(64, 0), s};
  if (s == 0.0f) return g;
  for (int i = 0; i < 64; ++i) {
    const double r = std::clamp(double(v[i] / s), -127.0, 127.0);
    g.q[i] = int8_t(std::nearbyint(r));
  }
  return g;
}

::testing::AssertionResult SameLevels(const int8_t* got, const int8_t* want,
                                      size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      return ::testing::AssertionFailure()
             << "first difference at index " << i << ": got " << int(got[i])
             << ", want " << int(want[i]);
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(Bf16, ExactValuesRoundTripAndTiesGoToEven) {
  ASSERT_EQ(FE_TONEAREST, std::fegetround());
  EXPECT_EQ(0x3F80, ls_bf16_from_f32(1.0f));
  EXPECT_EQ(0x3F80, ls_bf16_from_f32(from_bits(0x3F808000)));  // tie, even
  EXPECT_EQ(0x3F82, ls_bf16_from_f32(from_bits(0x3F818000)));  // tie, up
  EXPECT_EQ(0x3F81, ls_bf16_from_f32(from_bits(0x3F808001)));  // above tie
  EXPECT_EQ(0x0000, ls_bf16_from_f32(0.0f));
  EXPECT_EQ(0x0001, ls_bf16_from_f32(from_bits(0x00010000)));  // subnormal
  EXPECT_EQ(0x7F80, ls_bf16_from_f32(from_bits(0x7F7F8000)));  // up to inf
  std::mt19937_64 rng(71);
  std::uniform_int_distribution<uint32_t> d(0, 0x7F7FFFFF);
  for (int i = 0; i < 100000; ++i) {
    const float v = from_bits(d(rng));
    ASSERT_EQ(bf16_ref(v), ls_bf16_from_f32(v)) << std::hexfloat << v;
  }
  for (uint32_t h = 0; h < 0x7F80; h += 7) {
    EXPECT_EQ(bits(ls_bf16_to_f32(uint16_t(h))), h << 16);
  }
}

// Quantizes one group with both rules and compares.
void CheckGroup(const std::vector<float>& v, const char* what) {
  SCOPED_TRACE(what);
  int8_t q[64];
  float s;
  ASSERT_EQ(LS_OK, ls_q8_quantize(v.data(), 64, q, &s));
  const Group a = quantize_ref(v.data(), false);
  EXPECT_TRUE(BytesEqual(&s, &a.s, 1));
  EXPECT_TRUE(SameLevels(q, a.q.data(), 64));
  uint16_t sb;
  ASSERT_EQ(LS_OK, ls_q8_quantize_weights(v.data(), 1, q, &sb));
  const Group w = quantize_ref(v.data(), true);
  const float sw = ls_bf16_to_f32(sb);
  EXPECT_TRUE(BytesEqual(&sw, &w.s, 1));
  EXPECT_TRUE(SameLevels(q, w.q.data(), 64));
}

TEST(Q8Quantize, SeededRandomGroupsOfEveryMagnitude) {
  std::mt19937_64 rng(72);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-150, 127);
  for (int t = 0; t < 2000; ++t) {
    std::vector<float> v(64);
    const float scale = std::ldexp(1.0f, e(rng));
    for (auto& x : v) x = u(rng) * scale;
    CheckGroup(v, "random");
  }
}

TEST(Q8Quantize, AllZeroTinyAndHugeGroups) {
  std::vector<float> z(64, 0.0f);
  z[3] = -0.0f;
  CheckGroup(z, "all zero");
  int8_t q[64];
  float s = 1.0f;
  ASSERT_EQ(LS_OK, ls_q8_quantize(z.data(), 64, q, &s));
  EXPECT_EQ(0u, bits(s));  // +0.0: no division happened
  for (int8_t x : q) EXPECT_EQ(0, x);

  // The smallest subnormal: m / 127 rounds to 0, so every level is 0.
  std::vector<float> tiny(64, 0.0f);
  tiny[5] = from_bits(1);
  tiny[9] = -from_bits(1);
  CheckGroup(tiny, "smallest subnormal");
  ASSERT_EQ(LS_OK, ls_q8_quantize(tiny.data(), 64, q, &s));
  EXPECT_EQ(0.0f, s);
  EXPECT_EQ(0, q[5]);

  std::vector<float> huge(64);
  std::mt19937_64 rng(73);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : huge) x = u(rng) * std::numeric_limits<float>::max();
  huge[0] = std::numeric_limits<float>::max();
  huge[1] = -std::numeric_limits<float>::max();
  CheckGroup(huge, "near FLT_MAX");
  ASSERT_EQ(LS_OK, ls_q8_quantize(huge.data(), 64, q, &s));
  EXPECT_EQ(127, q[0]);
  EXPECT_EQ(-127, q[1]);
}

TEST(Q8Quantize, TiesRoundToEven) {
  // m = 15.875 = 127 / 8, so s = 0.125 exactly (for activations, and for
  // weights: 0.125 is a bfloat16) and v = 0.125 * r puts r on a tie.
  std::vector<float> v(64, 0.0f);
  v[0] = 15.875f;
  const float r[] = {0.5f,  1.5f,   2.5f,   3.5f,    -0.5f, -1.5f,
                     -2.5f, 125.5f, 126.5f, -126.5f, 63.5f};
  const int want[] = {0, 2, 2, 4, 0, -2, -2, 126, 126, -126, 64};
  for (size_t i = 0; i < std::size(r); ++i) v[1 + i] = 0.125f * r[i];
  for (int pass = 0; pass < 2; ++pass) {
    int8_t q[64];
    if (pass == 0) {
      float s;
      ASSERT_EQ(LS_OK, ls_q8_quantize(v.data(), 64, q, &s));
      EXPECT_EQ(0.125f, s);
    } else {
      uint16_t s;
      ASSERT_EQ(LS_OK, ls_q8_quantize_weights(v.data(), 1, q, &s));
      EXPECT_EQ(0x3E00, s);
    }
    EXPECT_EQ(127, q[0]);
    for (size_t i = 0; i < std::size(r); ++i) {
      EXPECT_EQ(want[i], q[1 + i]) << "r = " << r[i] << ", pass " << pass;
    }
  }
  CheckGroup(v, "ties");
}

TEST(Q8Quantize, SaturatesAt127WhenTheScaleRoundsDown) {
  // m = 2^-140 is subnormal: m / 127 = 4.03 * 2^-149 rounds to 4 * 2^-149,
  // so m / s = 128 and the level is clamped to 127 (never -128 either).
  std::vector<float> v(64, 0.0f);
  v[0] = std::ldexp(1.0f, -140);
  v[1] = -v[0];
  int8_t q[64];
  float s;
  ASSERT_EQ(LS_OK, ls_q8_quantize(v.data(), 64, q, &s));
  EXPECT_EQ(4u, bits(s));
  EXPECT_EQ(127, q[0]);
  EXPECT_EQ(-127, q[1]);
  CheckGroup(v, "saturation");
}

TEST(Q8Quantize, NonFiniteValuesGiveAStatus) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> v(128, 0.5f);
    v[64 + 17] = bad;
    int8_t q[128];
    float s[2];
    EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE, ls_q8_quantize(v.data(), 128, q, s));
    uint16_t sb;
    EXPECT_EQ(LS_ERR_WEIGHT_NONFINITE,
              ls_q8_quantize_weights(v.data() + 64, 1, q, &sb));
  }
}

// §7.6 spelled out: panel p at 64p(K + 2G), group block g at g * 66 * pw in
// it, weight (kk, j) at ((kk/4) pw + j) 4 + kk % 4, scales after 64 pw.
size_t weight_at(size_t K, size_t N, size_t k, size_t o) {
  const size_t G = K / 64, p = o / 64, pw = std::min<size_t>(64, N - 64 * p);
  const size_t g = k / 64, kk = k % 64, j = o % 64;
  return 64 * p * (K + 2 * G) + g * 66 * pw + ((kk / 4) * pw + j) * 4 + kk % 4;
}
size_t scale_at(size_t K, size_t N, size_t o, size_t g) {
  const size_t G = K / 64, p = o / 64, pw = std::min<size_t>(64, N - 64 * p);
  return 64 * p * (K + 2 * G) + g * 66 * pw + 64 * pw + 2 * (o % 64);
}

// A packed matrix with seeded random levels and scales, built through the
// formula above, and its plain copy.
struct Plain {
  size_t K, N;
  std::vector<int8_t> q;    // [K][N]
  std::vector<uint16_t> s;  // [N][G]
  std::vector<uint8_t> packed;
};
Plain RandomMatrix(size_t K, size_t N, uint64_t seed, bool extremes) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> lv(-127, 127);
  std::uniform_real_distribution<float> sc(0.001f, 0.05f);
  Plain m{K, N, std::vector<int8_t>(K * N), std::vector<uint16_t>(N * K / 64),
          std::vector<uint8_t>(N * (K + 2 * K / 64), 0xEE)};
  for (auto& x : m.q)
    x = int8_t(extremes ? (lv(rng) < 0 ? -127 : 127) : lv(rng));
  for (auto& x : m.s) x = ls_bf16_from_f32(sc(rng));
  for (size_t k = 0; k < K; ++k) {
    for (size_t o = 0; o < N; ++o) {
      m.packed[weight_at(K, N, k, o)] = uint8_t(m.q[k * N + o]);
    }
  }
  for (size_t o = 0; o < N; ++o) {
    for (size_t g = 0; g < K / 64; ++g) {
      m.packed[scale_at(K, N, o, g)] = uint8_t(m.s[o * (K / 64) + g]);
      m.packed[scale_at(K, N, o, g) + 1] = uint8_t(m.s[o * (K / 64) + g] >> 8);
    }
  }
  return m;
}

TEST(Q8Layout, IndicesMatchTheSpecAndTileTheMatrix) {
  // docs/int8.md's worked example: 124M h0.mlp.c_fc.w, level (100, 70).
  EXPECT_EQ(57240u, ls_q8_weight_index(768, 3072, 100, 70));
  EXPECT_EQ(59020u, ls_q8_scale_index(768, 3072, 70, 1));
  for (auto [K, N] : {std::pair<size_t, size_t>{64, 1},
                      {64, 17},
                      {128, 64},
                      {192, 100},
                      {768, 130}}) {
    ASSERT_EQ(N * (K + 2 * K / 64), ls_q8_matrix_bytes(K, N));
    std::vector<int> hits(ls_q8_matrix_bytes(K, N), 0);
    for (size_t o = 0; o < N; ++o) {
      for (size_t k = 0; k < K; ++k) {
        ASSERT_EQ(weight_at(K, N, k, o), ls_q8_weight_index(K, N, k, o));
        ++hits[weight_at(K, N, k, o)];
      }
      for (size_t g = 0; g < K / 64; ++g) {
        ASSERT_EQ(scale_at(K, N, o, g), ls_q8_scale_index(K, N, o, g));
        ++hits[scale_at(K, N, o, g)], ++hits[scale_at(K, N, o, g) + 1];
      }
    }
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(1, hits[i]) << i;
  }
}

TEST(Q8Pack, QuantizesEveryGroupInPlaceAndColumnsDequantize) {
  std::mt19937_64 rng(74);
  std::uniform_real_distribution<float> u(-0.2f, 0.2f);
  const size_t K = 192, N = 130;
  std::vector<float> w(K * N);  // input-major W [K, N]
  for (auto& x : w) x = u(rng);
  for (size_t k = 64; k < 128; ++k) w[k * N + 7] = 0.0f;  // one zero group
  std::vector<uint8_t> packed(ls_q8_matrix_bytes(K, N), 0xEE);
  ASSERT_EQ(LS_OK, ls_q8_pack(w.data(), K, N, N, 1, 0, N, packed.data()));
  EXPECT_TRUE(ls_q8_matrix_valid(packed.data(), K, N));
  // The same matrix as the head of its transpose, one panel at a time.
  std::vector<float> wt(K * N);
  for (size_t k = 0; k < K; ++k) {
    for (size_t o = 0; o < N; ++o) wt[o * K + k] = w[k * N + o];
  }
  std::vector<uint8_t> by_panel(packed.size(), 0xEE);
  for (size_t o0 = 0; o0 < N; o0 += 64) {
    ASSERT_EQ(LS_OK, ls_q8_pack(wt.data() + o0 * K, K, N, 1, K, o0,
                                std::min(N, o0 + 64), by_panel.data()));
  }
  EXPECT_EQ(0, std::memcmp(packed.data(), by_panel.data(), packed.size()));
  std::vector<float> col(K), want(K);
  for (size_t o = 0; o < N; ++o) {
    std::vector<float> v(64);
    for (size_t g = 0; g < K / 64; ++g) {
      for (size_t kk = 0; kk < 64; ++kk) v[kk] = w[(g * 64 + kk) * N + o];
      const Group r = quantize_ref(v.data(), true);
      uint16_t sb;
      std::memcpy(&sb, &packed[scale_at(K, N, o, g)], 2);
      ASSERT_EQ(bf16_ref(std::max(0.0f, r.s)), sb);
      for (size_t kk = 0; kk < 64; ++kk) {
        ASSERT_EQ(r.q[kk], int8_t(packed[weight_at(K, N, g * 64 + kk, o)]));
        want[g * 64 + kk] = float(double(r.q[kk]) * double(r.s));
      }
    }
    ls_q8_column(packed.data(), K, N, o, col.data());
    ASSERT_TRUE(BytesEqual(col, want)) << "column " << o;
  }
  w[5 * N + 3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(LS_ERR_WEIGHT_NONFINITE,
            ls_q8_pack(w.data(), K, N, N, 1, 0, N, packed.data()));
}

TEST(Q8Matvec, EqualsTheSpecWrittenOutAgain) {
  std::mt19937_64 rng(75);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (auto [K, N, extremes] : {std::tuple<size_t, size_t, bool>{64, 1, false},
                                {64, 17, false},
                                {128, 64, true},
                                {192, 100, false},
                                {768, 130, false},
                                {3072, 65, true}}) {
    SCOPED_TRACE(::testing::Message() << "K " << K << " N " << N);
    const Plain m = RandomMatrix(K, N, 76 + K + N, extremes);
    const size_t G = K / 64;
    std::vector<float> x(K), b(N);
    for (auto& v : x) v = u(rng);
    for (auto& v : b) v = u(rng) * 0.01f;
    std::vector<int8_t> qx(K);
    std::vector<float> sx(G);
    if (extremes) {
      for (size_t k = 0; k < K; ++k) x[k] = (m.q[k * N] < 0) ? -2.0f : 2.0f;
    }
    ASSERT_EQ(LS_OK, ls_q8_quantize(x.data(), int(K), qx.data(), sx.data()));
    std::vector<float> want(N), want_nb(N), got(N), got_nb(N);
    for (size_t o = 0; o < N; ++o) {
      float acc = 0.0f;
      for (size_t g = 0; g < G; ++g) {
        int64_t isum = 0;
        for (size_t k = g * 64; k < g * 64 + 64; ++k) {
          isum += int64_t(qx[k]) * int64_t(m.q[k * N + o]);
        }
        ASSERT_LE(std::llabs(isum), 64 * 127 * 127);
        const float sw = from_bits(uint32_t(m.s[o * G + g]) << 16);
        const float scale = sx[g] * sw;
        acc = acc + float(isum) * scale;
      }
      want_nb[o] = acc;
      want[o] = acc + b[o];
    }
    ls_q8_matvec(qx.data(), sx.data(), m.packed.data(), int(K), int(N),
                 b.data(), got.data());
    ls_q8_matvec(qx.data(), sx.data(), m.packed.data(), int(K), int(N), nullptr,
                 got_nb.data());
    EXPECT_TRUE(BytesEqual(got, want));
    EXPECT_TRUE(BytesEqual(got_nb, want_nb));
  }
}

TEST(Q8Matvec, StartsFromPositiveZero) {
  // One group whose term is -0.0: the sum from +0.0 makes it +0.0.
  const Plain m = RandomMatrix(64, 1, 77, false);
  std::vector<int8_t> qx(64, 0);
  const float sx = 1.0f;
  float y;
  ls_q8_matvec(qx.data(), &sx, m.packed.data(), 64, 1, nullptr, &y);
  EXPECT_EQ(0u, bits(y));
  const float nsx = -1.0f;  // float(0) * -s = -0.0
  ls_q8_matvec(qx.data(), &nsx, m.packed.data(), 64, 1, nullptr, &y);
  EXPECT_EQ(0u, bits(y));
}

TEST(Q8Valid, RefusesMinus128AndBadScales) {
  Plain m = RandomMatrix(128, 70, 78, false);
  EXPECT_TRUE(ls_q8_matrix_valid(m.packed.data(), 128, 70));
  auto with = [&](size_t at, uint8_t v) {
    std::vector<uint8_t> p = m.packed;
    p[at] = v;
    return ls_q8_matrix_valid(p.data(), 128, 70);
  };
  EXPECT_FALSE(with(weight_at(128, 70, 100, 69), 0x80));
  EXPECT_FALSE(with(scale_at(128, 70, 3, 1) + 1,
                    0x80 | m.packed[scale_at(128, 70, 3, 1) + 1]));  // sign
  std::vector<uint8_t> p = m.packed;
  p[scale_at(128, 70, 66, 0)] = 0x80;
  p[scale_at(128, 70, 66, 0) + 1] = 0x7F;  // 0x7F80: +inf
  EXPECT_FALSE(ls_q8_matrix_valid(p.data(), 128, 70));
}

}  // namespace
