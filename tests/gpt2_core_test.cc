// core/ls_gpt2 and core/ls_ops32 (docs/arithmetic.md §2 in binary32, §6):
// the binary32 operations follow the stated order byte for byte, and the
// cached step and the full-prefix pass give identical bits at every
// position.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "ls_arith.h"
#include "ls_ops32.h"

namespace {

::testing::AssertionResult FloatBytesEqual(const float* a, const float* b,
                                           size_t n) {
  if (n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0) {
    return ::testing::AssertionSuccess();
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "first difference at index %zu: %a vs %a",
                    i, double(a[i]), double(b[i]));
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionFailure();
}

std::vector<float> UniformF(std::mt19937_64& rng, size_t n, float lo,
                            float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Ops32, MatvecStreamsRowsButKeepsEachOutputsOrder) {
  std::mt19937_64 rng(31);
  for (auto [n_in, n_out] : {std::pair{64, 48}, {768, 96}, {12, 7}}) {
    auto x = UniformF(rng, n_in, -1, 1), w = UniformF(rng, n_in * n_out, -1, 1),
         b = UniformF(rng, n_out, -1, 1);
    std::vector<float> partial(16 * size_t(n_out)), y(n_out), want(n_out);
    ls_matvec32(x.data(), w.data(), b.data(), n_in, n_out, partial.data(),
                y.data());
    for (int o = 0; o < n_out; ++o) {
      want[o] = ls_dot32(x.data(), w.data() + o, n_in, n_out) + b[o];
    }
    EXPECT_TRUE(FloatBytesEqual(y.data(), want.data(), n_out)) << n_in;
  }
}

TEST(Ops32, DotBlockedOrderSpelledOut) {
  std::mt19937_64 rng(32);
  const int n = 768;
  auto x = UniformF(rng, n, -1, 1), w = UniformF(rng, n, -1, 1);
  float s[16];
  for (int b = 0; b < 16; ++b) {
    s[b] = 0.0f;
    for (int k = b * 48; k < (b + 1) * 48; ++k) s[b] = s[b] + x[k] * w[k];
  }
  for (int h : {8, 4, 2, 1}) {
    for (int i = 0; i < h; ++i) s[i] = s[i] + s[i + h];
  }
  const float got = ls_dot32(x.data(), w.data(), n, 1);
  EXPECT_TRUE(FloatBytesEqual(&got, &s[0], 1));
}

TEST(Ops32, LayerNormAndSoftmaxFollowTheStatedOrder) {
  std::mt19937_64 rng(33);
  const int n = 64;
  auto x = UniformF(rng, n, -3, 3), g = UniformF(rng, n, 0.5, 1.5),
       b = UniformF(rng, n, -0.5, 0.5);
  std::vector<float> y(n), want(n), d(n);
  ls_layernorm32(x.data(), g.data(), b.data(), n, y.data());
  float s[16];
  for (int blk = 0; blk < 16; ++blk) {
    s[blk] = 0.0f;
    for (int k = blk * 4; k < blk * 4 + 4; ++k) s[blk] = s[blk] + x[k];
  }
  for (int h : {8, 4, 2, 1}) {
    for (int i = 0; i < h; ++i) s[i] = s[i] + s[i + h];
  }
  const float mean = s[0] / 64.0f;
  for (int k = 0; k < n; ++k) d[k] = x[k] - mean;
  const float var = ls_dot32(d.data(), d.data(), n, 1) / 64.0f;
  const float r = 1.0f / std::sqrt(var + 0x1.4f8b58p-17f);
  for (int k = 0; k < n; ++k) want[k] = (d[k] * r) * g[k] + b[k];
  EXPECT_TRUE(FloatBytesEqual(y.data(), want.data(), n));

  auto sc = UniformF(rng, 37, -20, 20);
  std::vector<float> p(37), pw(37);
  ls_softmax32(sc.data(), 37, p.data());
  float m = sc[0], sum = 0.0f;
  for (float v : sc) m = v > m ? v : m;
  for (int j = 0; j < 37; ++j) sum = sum + (pw[j] = ls_exp32(sc[j] - m));
  for (int j = 0; j < 37; ++j) pw[j] = pw[j] / sum;
  EXPECT_TRUE(FloatBytesEqual(p.data(), pw.data(), 37));
}

// A small GPT-2 with random weights: every parameter non-zero.
struct Model {
  ls_gpt2_config c;
  std::vector<float> w;
};

Model RandomModel(uint64_t seed, ls_gpt2_config c) {
  std::mt19937_64 rng(seed);
  Model m{c, UniformF(rng, ls_gpt2_param_count(&c), -0.2f, 0.2f)};
  // LayerNorm gains near 1, so activations keep their scale.
  auto gains = [&](size_t off) {
    for (int i = 0; i < c.n_embd; ++i) m.w[off + i] += 1.0f;
  };
  for (int l = 0; l < c.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
    gains(b.ln1_g);
    gains(b.ln2_g);
  }
  gains(ls_gpt2_lnf_offset(&c));
  return m;
}

TEST(Gpt2Core, ParameterCountOf124M) {
  const ls_gpt2_config c{50257, 1024, 768, 12, 12};
  EXPECT_EQ(ls_gpt2_param_count(&c), 124439808u);
  EXPECT_EQ(ls_gpt2_cache_row_floats(&c), 12u * 2 * 768);
  const ls_gpt2_config bad{50257, 1024, 768, 7, 12};
  EXPECT_EQ(ls_gpt2_param_count(&bad), 0u);
}

TEST(Gpt2Core, CachedStepEqualsFullPrefixAtEveryPosition) {
  for (auto cfg :
       {ls_gpt2_config{300, 40, 64, 4, 2}, ls_gpt2_config{97, 20, 48, 3, 3}}) {
    const Model m = RandomModel(cfg.n_embd, cfg);
    const lockstep::Gpt2View view{m.c, m.w.data(), m.w.size()};
    // The reference backend: this file tests core/ls_gpt2.c itself.
    lockstep::Gpt2Session cached(view, {"reference"}),
        full(view, {"reference"});
    std::mt19937_64 rng(5);
    std::vector<int32_t> tokens;
    for (int t = 0; t < cfg.n_ctx; ++t) {
      tokens.push_back(int32_t(rng() % uint64_t(cfg.n_vocab)));
      const auto a = cached.step(tokens.back());
      std::vector<float> step_logits(a.begin(), a.end());
      const auto b = full.infer(tokens);
      ASSERT_TRUE(FloatBytesEqual(step_logits.data(), b.data(), b.size()))
          << "position " << t << ", n_embd " << cfg.n_embd;
      for (float v : step_logits) ASSERT_TRUE(std::isfinite(v));
    }
    EXPECT_THROW(cached.step(1), lockstep::Error);  // context full
  }
}

TEST(Gpt2Core, CacheRowsAreAppendedInPlaceAndEarlierRowsNeverChange) {
  const ls_gpt2_config cfg{300, 16, 32, 2, 2};
  const Model m = RandomModel(9, cfg);
  const size_t row = ls_gpt2_cache_row_floats(&cfg);
  std::vector<float> cache(ls_gpt2_cache_floats(&cfg), 0x1.5p-3f);
  std::vector<float> scratch(ls_gpt2_step_scratch_floats(&cfg));
  std::vector<float> logits(cfg.n_vocab);
  std::vector<float> before;
  for (int t = 0; t < 8; ++t) {
    before.assign(cache.begin(), cache.begin() + long(t * row));
    ASSERT_EQ(ls_gpt2_step(&cfg, m.w.data(), m.w.size(), cache.data(),
                           cache.size(), t * row, 7 + t, t, scratch.data(),
                           scratch.size(), logits.data()),
              LS_OK);
    EXPECT_TRUE(FloatBytesEqual(before.data(), cache.data(), t * row));
    // Untouched rows after this one keep their fill.
    EXPECT_EQ(cache[(t + 1) * row], 0x1.5p-3f);
  }
}

TEST(Gpt2Core, BadInputsGetTheirStatus) {
  const ls_gpt2_config cfg{300, 16, 32, 2, 2};
  const Model m = RandomModel(10, cfg);
  const size_t row = ls_gpt2_cache_row_floats(&cfg);
  std::vector<float> cache(ls_gpt2_cache_floats(&cfg));
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&cfg, 16));
  std::vector<float> logits(cfg.n_vocab);
  auto step = [&](size_t n_w, size_t len, int32_t tok, int32_t pos) {
    return ls_gpt2_step(&cfg, m.w.data(), n_w, cache.data(), cache.size(), len,
                        tok, pos, scratch.data(), scratch.size(),
                        logits.data());
  };
  EXPECT_EQ(step(m.w.size() - 1, 0, 1, 0), LS_ERR_WEIGHT_COUNT);
  EXPECT_EQ(step(m.w.size(), 0, 300, 0), LS_ERR_TOKEN);
  EXPECT_EQ(step(m.w.size(), 0, -1, 0), LS_ERR_TOKEN);
  EXPECT_EQ(step(m.w.size(), 16 * row, 1, 16), LS_ERR_POSITION);
  EXPECT_EQ(step(m.w.size(), 0, 1, -1), LS_ERR_POSITION);
  EXPECT_EQ(step(m.w.size(), row, 1, 0), LS_ERR_CACHE_LENGTH);
  EXPECT_EQ(step(m.w.size(), row - 1, 1, 1), LS_ERR_CACHE_LENGTH);
  const ls_gpt2_config bad{300, 16, 30, 4, 2};
  EXPECT_EQ(
      ls_gpt2_step(&bad, m.w.data(), m.w.size(), cache.data(), cache.size(), 0,
                   1, 0, scratch.data(), scratch.size(), logits.data()),
      LS_ERR_CONFIG);
  std::vector<int32_t> toks(17, 3);
  EXPECT_EQ(ls_gpt2_infer(&cfg, m.w.data(), m.w.size(), toks.data(), 17,
                          scratch.data(), scratch.size(), logits.data()),
            LS_ERR_SEQUENCE_TOO_LONG);
  EXPECT_EQ(ls_gpt2_infer(&cfg, m.w.data(), m.w.size(), toks.data(), 0,
                          scratch.data(), scratch.size(), logits.data()),
            LS_ERR_EMPTY_SEQUENCE);
  EXPECT_EQ(ls_gpt2_infer(&cfg, m.w.data(), m.w.size(), toks.data(), 4,
                          scratch.data(), 10, logits.data()),
            LS_ERR_SCRATCH);
}

}  // namespace
