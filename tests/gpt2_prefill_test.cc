// Batched prefill (ls_gpt2_prefill, Gpt2Backend::prefill,
// Gpt2Session::prefill) against cached steps, byte for byte: every backend
// and thread count, every logit and cache word, from an empty cache and
// from a partly filled one, in one call and in chunks, last-position and
// every-position logits, plain and PANEL64 weights. The oracle is always
// the reference's cached step (core/ls_gpt2.c), which the other backend
// tests tie to the full-prefix pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_isa.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"
#include "tests/gpt2_test_util.h"

namespace {

using lockstep::Gpt2Backend;
using lockstep::make_gpt2_backend;
using namespace lockstep::test;  // NOLINT: BytesEqual, Variant, ...

// The oracle: the reference's cached steps over every token, each
// position's logits and the whole cache.
struct Steps {
  std::vector<float> logits;  // [n][V]
  std::vector<float> cache;   // [n][row]
};

Steps ReferenceSteps(const ls_gpt2_config& c, const float* w, size_t words,
                     const std::vector<int32_t>& tokens) {
  auto ref = make_gpt2_backend("reference", c, w, words, 1, 1);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  Steps s;
  s.cache.assign(tokens.size() * row, std::numeric_limits<float>::quiet_NaN());
  s.logits.resize(tokens.size() * V);
  for (size_t p = 0; p < tokens.size(); ++p) {
    EXPECT_EQ(ref->step(s.cache.data(), s.cache.size(), p * row, tokens[p],
                        int32_t(p), s.logits.data() + p * V),
              LS_OK)
        << "reference step at " << p;
  }
  return s;
}

std::vector<Variant> AllVariants() {
  std::vector<Variant> v{{"reference", 1}};
  for (const auto& isa : lockstep::cpu::supported_isas()) {
    for (int threads : kThreadCounts) {
      v.push_back({"cpu-" + isa, threads});
    }
  }
  return v;
}

// Runs `tokens` through `b` as prefill chunks of the given sizes (a chunk
// of 1 may also go through step() when `step_ones`), checking after each
// chunk its logits (last position, or every position with `all`) and, at
// the end, the whole cache against the oracle.
void ExpectChunksMatch(Gpt2Backend& b, const ls_gpt2_config& c,
                       const std::vector<int32_t>& tokens, const Steps& want,
                       const std::vector<int>& chunks, bool all, bool step_ones,
                       const std::string& what) {
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> cache(size_t(c.n_ctx) * row,
                           std::numeric_limits<float>::quiet_NaN());
  size_t pos = 0;
  for (int n : chunks) {
    ASSERT_LE(pos + size_t(n), tokens.size());
    std::vector<float> logits((all ? size_t(n) : 1) * V);
    ls_status s;
    if (n == 1 && step_ones) {
      s = b.step(cache.data(), cache.size(), pos * row, tokens[pos],
                 int32_t(pos), logits.data());
    } else {
      s = b.prefill(cache.data(), cache.size(), pos * row, tokens.data() + pos,
                    n, int32_t(pos), all, logits.data());
    }
    ASSERT_EQ(s, LS_OK) << what << ": chunk of " << n << " at " << pos;
    if (all) {
      EXPECT_TRUE(BytesEqual(logits.data(), want.logits.data() + pos * V,
                             size_t(n) * V))
          << what << ": every-position logits of the chunk of " << n << " at "
          << pos;
    } else {
      EXPECT_TRUE(BytesEqual(logits.data(),
                             want.logits.data() + (pos + size_t(n) - 1) * V, V))
          << what << ": last logits of the chunk of " << n << " at " << pos;
    }
    pos += size_t(n);
  }
  EXPECT_TRUE(BytesEqual(cache.data(), want.cache.data(), pos * row))
      << what << ": cache words of " << pos << " positions";
  // Rows past the last position are never written.
  for (size_t i = pos * row; i < cache.size(); ++i) {
    ASSERT_TRUE(std::isnan(cache[i]))
        << what << ": wrote past the end at " << i;
  }
}

class Prefill : public ::testing::TestWithParam<Variant> {
 protected:
  std::unique_ptr<Gpt2Backend> Make(
      const ls_gpt2_config& c, const float* w, size_t words, int max_prefix,
      ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN) const {
    return make_gpt2_backend(GetParam().name, c, w, words, GetParam().threads,
                             max_prefix, layout);
  }
};

// Hugging Face's fixture: both cases, whole, in chunks, after steps, and
// every position's logits.
TEST_P(Prefill, HfFixtureEqualsCachedSteps) {
  const std::string dir = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(dir);
  std::ifstream in(dir + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  ASSERT_EQ(cases.size(), 2u);
  auto b = Make(w.config, w.data(), w.words(), 0);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const std::vector<int32_t> ids = cases[ci]["input_ids"];
    const int n = int(ids.size());
    ASSERT_GE(n, 6);
    const Steps want = ReferenceSteps(w.config, w.data(), w.words(), ids);
    const std::string what = b->name() + " case " + std::to_string(ci);
    ExpectChunksMatch(*b, w.config, ids, want, {n}, false, false, what);
    ExpectChunksMatch(*b, w.config, ids, want, {n}, true, false, what);
    ExpectChunksMatch(*b, w.config, ids, want, {1, 4, n - 5}, false, false,
                      what);
    ExpectChunksMatch(*b, w.config, ids, want, {1, 1, 1, n - 3}, true, true,
                      what);
    ExpectChunksMatch(*b, w.config, ids, want, {n - 2, 1, 1}, false, true,
                      what);
  }
}

// Small random configs (sequential §2.1 dots at widths not a multiple of
// 16, head widths 8 .. 64, vector tails, ragged head panels), seeded
// chunkings, both layouts.
TEST_P(Prefill, SmallConfigsEqualCachedSteps) {
  const ls_gpt2_config configs[] = {
      {300, 24, 48, 3, 2},  // D = 16
      {301, 20, 40, 2, 2},  // n_embd 40, D = 20: sequential dots
      {257, 18, 64, 4, 3},  // three layers
      {97, 70, 128, 2, 1},  // D = 64, 70 positions
      {131, 16, 24, 3, 1},  // D = 8
      {250, 12, 48, 3, 1},  // head: the last panel 58 wide
  };
  uint64_t seed = 700;
  for (const auto& c : configs) {
    const auto w = lockstep::random_gpt2_weights(c, ++seed);
    std::vector<float> panels(w.size());
    ls_gpt2_to_panels(&c, w.data(), panels.data());
    const auto tokens = RandomTokens(c, c.n_ctx, seed);
    const Steps want = ReferenceSteps(c, w.data(), w.size(), tokens);
    // Random chunkings that cover the whole context.
    std::mt19937_64 rng(seed);
    std::vector<std::vector<int>> chunkings = {{c.n_ctx}};
    for (int k = 0; k < 3; ++k) {
      std::vector<int> ch;
      for (int left = c.n_ctx; left > 0;) {
        const int n = std::min(left, 1 + int(rng() % 9));
        ch.push_back(n);
        left -= n;
      }
      chunkings.push_back(ch);
    }
    for (auto layout : {LS_GPT2_LAYOUT_PLAIN, LS_GPT2_LAYOUT_PANEL64}) {
      const float* wp =
          layout == LS_GPT2_LAYOUT_PLAIN ? w.data() : panels.data();
      auto b = Make(c, wp, w.size(), 0, layout);
      const std::string what =
          b->name() + " n_embd " + std::to_string(c.n_embd) +
          (layout == LS_GPT2_LAYOUT_PLAIN ? " plain" : " panel64");
      for (size_t i = 0; i < chunkings.size(); ++i) {
        ExpectChunksMatch(*b, c, tokens, want, chunkings[i], i % 2 == 1, i == 2,
                          what + " chunking " + std::to_string(i));
      }
    }
  }
}

// The checks and status codes of ls_gpt2_prefill, in order, with nothing
// written on failure.
TEST_P(Prefill, StatusCodesAreTheReferences) {
  const ls_gpt2_config c = {50, 8, 32, 2, 1};
  const auto w = lockstep::random_gpt2_weights(c, 5);
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 4);
  auto b = Make(c, w.data(), w.size(), 4);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(8 * 50);
  const int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int32_t bad[2] = {1, 77};
  struct Case {
    float* cache;
    size_t cap, len;
    const int32_t* tokens;
    int n;
    int32_t position;
    float* logits;
    ls_status want;
  };
  float* C = cache.data();
  float* L = logits.data();
  const size_t cap = cache.size();
  const Case cases[] = {
      {nullptr, cap, 0, toks, 2, 0, L, LS_ERR_NULL},
      {C, cap, 0, toks, 2, 0, nullptr, LS_ERR_NULL},
      {C, cap, 0, nullptr, 2, 0, L, LS_ERR_NULL},
      {C, cap, 0, toks, 0, 0, L, LS_ERR_EMPTY_SEQUENCE},
      {C, cap, 8 * row, toks, 1, 8, L, LS_ERR_POSITION},
      {C, cap, 0, toks, 2, -1, L, LS_ERR_POSITION},
      {C, cap, 6 * row, toks, 3, 6, L, LS_ERR_SEQUENCE_TOO_LONG},
      {C, cap, 0, bad, 2, 0, L, LS_ERR_TOKEN},
      {C, cap, row, toks, 2, 0, L, LS_ERR_CACHE_LENGTH},
      {C, 2 * row, row, toks, 2, 1, L, LS_ERR_CACHE_LENGTH},
      {C, cap, 0, toks, 5, 0, L, LS_ERR_SCRATCH},
      {C, cap, 0, toks, 4, 0, L, LS_OK},
  };
  for (const auto& k : cases) {
    for (bool all : {false, true}) {
      EXPECT_EQ(b->prefill(k.cache, k.cap, k.len, k.tokens, k.n, k.position,
                           all, k.logits),
                k.want)
          << b->name() << " n " << k.n << " at " << k.position;
      EXPECT_EQ(ref->prefill(k.cache, k.cap, k.len, k.tokens, k.n, k.position,
                             all, k.logits),
                k.want)
          << "reference n " << k.n << " at " << k.position;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Prefill, ::testing::ValuesIn(AllVariants()),
                         VariantName);

// The session chunks a prompt longer than max_prefix, goes on from a partly
// filled cache, and keeps position() and cache() in step; prompts that do
// not fit are refused without consuming anything.
TEST(SessionPrefill, ChunkedByMaxPrefixEqualsSteps) {
  const ls_gpt2_config c = {211, 40, 48, 3, 2};
  const auto w = lockstep::random_gpt2_weights(c, 31);
  const auto tokens = RandomTokens(c, c.n_ctx, 31);
  const Steps want = ReferenceSteps(c, w.data(), w.size(), tokens);
  const size_t V = size_t(c.n_vocab), row = ls_gpt2_cache_row_floats(&c);
  for (const char* backend : {"reference", "cpu"}) {
    lockstep::Gpt2Session s(
        {c, w.data(), w.size()},
        {backend, std::string(backend) == "cpu" ? 2 : 1, 7});
    auto l = s.step(tokens[0]);
    EXPECT_TRUE(BytesEqual(l.data(), want.logits.data(), V));
    // 1 .. 23: four chunks of at most 7.
    l = s.prefill({tokens.data() + 1, 22});
    EXPECT_EQ(s.position(), 23);
    EXPECT_TRUE(BytesEqual(l.data(), want.logits.data() + 22 * V, V));
    // 23 .. 39 with every position's logits.
    l = s.prefill({tokens.data() + 23, 16}, true);
    ASSERT_EQ(l.size(), 16 * V);
    EXPECT_TRUE(BytesEqual(l.data(), want.logits.data() + 23 * V, 16 * V));
    EXPECT_EQ(s.position(), 39);
    EXPECT_TRUE(BytesEqual(s.cache().data(), want.cache.data(), 39 * row));
    EXPECT_THROW(s.prefill({tokens.data(), 2}), lockstep::Error);
    EXPECT_EQ(s.position(), 39);
    const int32_t bad = c.n_vocab;
    EXPECT_THROW(s.prefill({&bad, 1}), lockstep::Error);
    EXPECT_THROW(s.prefill({}), lockstep::Error);
    l = s.prefill({tokens.data() + 39, 1});
    EXPECT_TRUE(BytesEqual(l.data(), want.logits.data() + 39 * V, V));
    EXPECT_TRUE(BytesEqual(s.cache().data(), want.cache.data(), 40 * row));
  }
}

// Gpt2SessionOptions::threads = 0 (the default) is one thread per
// hardware thread; the reference runs on one whatever is asked.
TEST(SessionThreads, ZeroMeansEveryCore) {
  const ls_gpt2_config c = {50, 8, 32, 2, 1};
  const auto w = lockstep::random_gpt2_weights(c, 3);
  const unsigned hw = std::thread::hardware_concurrency();
  const std::string all = std::to_string(hw == 0 ? 1u : hw);
  EXPECT_EQ(lockstep::Gpt2SessionOptions{}.threads, 0);
  lockstep::Gpt2Session s({c, w.data(), w.size()});
  EXPECT_TRUE(s.backend_name().ends_with(" x" + all)) << s.backend_name();
  lockstep::Gpt2Session r({c, w.data(), w.size()}, {"reference", 0, 0});
  lockstep::Gpt2Session three({c, w.data(), w.size()}, {"cpu", 3, 0});
  EXPECT_TRUE(three.backend_name().ends_with(" x3")) << three.backend_name();
  EXPECT_THROW(lockstep::Gpt2Session({c, w.data(), w.size()}, {"cpu", -1, 0}),
               lockstep::Error);
}

// Full-size GPT-2 124M (seeded random weights): the reference's 40 cached
// steps against every fast backend's prefill of 17 then 23 tokens (a
// partly filled cache), every logit of the second chunk and every cache
// word.
TEST(Prefill124M, EveryFastBackendEqualsReferenceSteps) {
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const auto w = lockstep::random_gpt2_weights(c, 4124);
  const auto tokens = RandomTokens(c, 40, 4124);
  const Steps want = ReferenceSteps(c, w.data(), w.size(), tokens);
  std::vector<float> panels(w.size());
  ls_gpt2_to_panels(&c, w.data(), panels.data());
  for (const auto& isa : lockstep::cpu::supported_isas()) {
    for (int threads : {1, 2}) {
      for (auto layout : {LS_GPT2_LAYOUT_PLAIN, LS_GPT2_LAYOUT_PANEL64}) {
        const float* wp =
            layout == LS_GPT2_LAYOUT_PLAIN ? w.data() : panels.data();
        auto b = make_gpt2_backend("cpu-" + isa, c, wp, w.size(), threads, 64,
                                   layout);
        ExpectChunksMatch(
            *b, c, tokens, want, {17, 23}, true, false,
            b->name() + (layout == LS_GPT2_LAYOUT_PLAIN ? "" : " panel64"));
      }
    }
  }
}

}  // namespace
