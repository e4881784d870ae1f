// Every GPT-2 backend (backends/backend.h) against the scalar reference
// (core/ls_gpt2.c), byte for byte: every logit and every cache word, via the
// cached step and via the full-prefix pass, for every ISA this machine can
// run and for 1, 2, 3, 4 and 8 threads (docs/arithmetic.md §1.7: vector width,
// thread count and tiling do not change the result). Also the kernels one
// by one against the core functions they replace, on inputs chosen to hit
// every branch.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "ls_arith.h"
#include "ls_gpt2.h"
#include "ls_ops32.h"
#include "tests/gpt2_test_util.h"

// Every allocation in this binary is counted, so a test can check that a
// step or a full pass allocates nothing.
std::atomic<long> g_allocations{0};

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// (GCC 12 sees the inlined free() of a replaced operator delete as a
// mismatch with new; it is the replacement pair, so it is not.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using lockstep::Gpt2Backend;
using lockstep::make_gpt2_backend;
using namespace lockstep::test;  // NOLINT: BytesEqual, Variant, ...

// Seeded random packed weights (formats/gpt2_checkpoint.h): every
// parameter nonzero and significant.
std::vector<float> RandomWeights(const ls_gpt2_config& c, uint64_t seed) {
  return lockstep::random_gpt2_weights(c, seed);
}

std::vector<Variant> FastVariants() {
  std::vector<Variant> v;
  for (const auto& isa : lockstep::cpu::supported_isas()) {
    for (int threads : kThreadCounts) v.push_back({"cpu-" + isa, threads});
  }
  return v;
}

// For the full-size 124M and the 1,024-step narrow model: every ISA with
// 1 and 2 threads, and the default ISA with the other counts (sanitizer
// builds are 10x slower, and each variant here is thousands of steps).
std::vector<Variant> FullSizeVariants() {
  std::vector<Variant> v;
  for (const auto& isa : lockstep::cpu::supported_isas()) {
    for (int threads : {1, 2}) v.push_back({"cpu-" + isa, threads});
  }
  for (int threads : kThreadCounts) {
    if (threads > 2) v.push_back({"cpu", threads});
  }
  return v;
}

std::vector<int> AllPrefixes(int n) {
  std::vector<int> p;
  for (int i = 1; i <= n; ++i) p.push_back(i);
  return p;
}

// ------------------------------------------------------------- kernels

class Kernels : public ::testing::TestWithParam<std::string> {
 protected:
  const lockstep::cpu::CpuKernels& k() const {
    return *lockstep::cpu::kernels_for(GetParam());
  }
};

std::vector<float> Uniform(std::mt19937_64& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Inputs for §3: a dense sweep, every range boundary and its neighbours,
// results in the subnormal range, signed zeros and infinities.
std::vector<float> ExpInputs() {
  std::vector<float> x;
  for (float v = -110.0f; v <= 100.0f; v += 0.0173f) x.push_back(v);
  for (float b : {0x1.62e42ep+6f, -0x1.9fe368p+6f, 0.0f, -87.33655f, -87.5f,
                  -88.0f, -100.0f, -103.27893f, 88.0f, 88.37626f, 88.72283f,
                  1e-30f, -1e-30f, 1e-45f, 0.5f, -0.5f}) {
    float lo = b, hi = b;
    for (int i = 0; i < 40; ++i) {
      x.push_back(lo), x.push_back(hi), x.push_back(-lo), x.push_back(-hi);
      lo = std::nextafter(lo, -INFINITY), hi = std::nextafter(hi, INFINITY);
    }
  }
  x.push_back(-0.0f);
  x.push_back(INFINITY);
  x.push_back(-INFINITY);
  x.push_back(3e38f);
  x.push_back(-3e38f);
  std::mt19937_64 rng(7);
  for (float v : Uniform(rng, 20000, -120.0f, 120.0f)) x.push_back(v);
  return x;
}

TEST_P(Kernels, ExpIsLsExp32BitForBit) {
  const auto x = ExpInputs();
  std::vector<float> got(x.size()), want(x.size());
  k().exp(x.data(), got.data(), int(x.size()));
  for (size_t i = 0; i < x.size(); ++i) want[i] = ls_exp32(x[i]);
  EXPECT_TRUE(BytesEqual(got, want));
}

TEST_P(Kernels, GeluIsLsGelu32BitForBit) {
  std::vector<float> x;
  for (float v = -30.0f; v <= 30.0f; v += 0.00731f) x.push_back(v);
  for (float v : ExpInputs()) x.push_back(v / 8.0f);
  for (float v : {0.0f, -0.0f, 1e-40f, -1e-40f, 1e10f, -1e10f, 1e13f, -1e13f,
                  3e38f, -3e38f, INFINITY, -INFINITY}) {
    x.push_back(v);
  }
  std::vector<float> got = x, want(x.size());
  k().gelu(got.data(), int(got.size()));
  for (size_t i = 0; i < x.size(); ++i) want[i] = ls_gelu32(x[i]);
  EXPECT_TRUE(BytesEqual(got, want));
}

TEST_P(Kernels, MatmulIsLsMatvec32PerPosition) {
  std::mt19937_64 rng(11);
  // n_in: blocked (multiple of 16, block lengths 1, 3, 48, 192) and
  // sequential; n_out: multiples of every tile and ragged; positions:
  // every remainder of every tile height.
  for (int n_in : {16, 48, 40, 64, 100, 768, 3072, 7}) {
    for (int n_out : {1, 5, 16, 40, 64, 128, 144, 200, 2304}) {
      if (size_t(n_in) * size_t(n_out) > 800000) continue;
      const auto w = Uniform(rng, size_t(n_in) * size_t(n_out), -1, 1);
      const auto bias = Uniform(rng, size_t(n_out), -1, 1);
      for (int n : {1, 2, 3, 5, 6, 7, 13, 20}) {
        const auto x = Uniform(rng, size_t(n) * size_t(n_in), -1, 1);
        for (const float* b :
             {bias.data(), static_cast<const float*>(nullptr)}) {
          std::vector<float> got(size_t(n) * size_t(n_out), NAN),
              want(got.size()), partial(16 * size_t(n_out));
          // Two column ranges, as two threads would split them.
          const int mid = std::min(n_out, (n_out / 2 + 15) / 16 * 16);
          k().matmul(x.data(), size_t(n_in), n, w.data(), b, n_in, n_out, 0,
                     mid, got.data(), size_t(n_out));
          k().matmul(x.data(), size_t(n_in), n, w.data(), b, n_in, n_out, mid,
                     n_out, got.data(), size_t(n_out));
          for (int t = 0; t < n; ++t) {
            ls_matvec32(x.data() + size_t(t) * size_t(n_in), w.data(), b, n_in,
                        n_out, partial.data(),
                        want.data() + size_t(t) * size_t(n_out));
          }
          ASSERT_TRUE(BytesEqual(got, want))
              << "n_in " << n_in << " n_out " << n_out << " n " << n
              << (b ? " with bias" : " without bias");
        }
      }
    }
  }
}

// The cached step's product over two repacked 64-column panels, and over
// one.
TEST_P(Kernels, MatvecPairIsLsMatvec32) {
  std::mt19937_64 rng(14);
  for (int n_in : {16, 40, 768, 3072}) {
    const auto w = Uniform(rng, size_t(n_in) * 128, -1, 1);  // [n_in][128]
    const auto bias = Uniform(rng, 128, -1, 1);
    const auto x = Uniform(rng, size_t(n_in), -1, 1);
    std::vector<float> p0(size_t(n_in) * 64), p1(p0.size()), partial(16 * 128);
    for (size_t k = 0; k < size_t(n_in); ++k) {
      for (size_t j = 0; j < 64; ++j) {
        p0[k * 64 + j] = w[k * 128 + j];
        p1[k * 64 + j] = w[k * 128 + 64 + j];
      }
    }
    for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
      std::vector<float> got(128, NAN), want(128);
      k().matvec_pair(x.data(), p0.data(), p1.data(), b, n_in, got.data());
      ls_matvec32(x.data(), w.data(), b, n_in, 128, partial.data(),
                  want.data());
      EXPECT_TRUE(BytesEqual(got, want)) << "n_in " << n_in;
      // One panel alone (p1 = nullptr): the first 64 outputs, nothing
      // written past them.
      std::vector<float> one(128, NAN);
      k().matvec_pair(x.data(), p0.data(), nullptr, b, n_in, one.data());
      EXPECT_TRUE(BytesEqual(one.data(), want.data(), 64)) << "n_in " << n_in;
      for (size_t j = 64; j < 128; ++j) EXPECT_TRUE(std::isnan(one[j])) << j;
    }
  }
}

// Split K: the block sums of any run of §2.1 blocks, combined by the §2.1
// tree and then the bias (as the backend does), are ls_matvec32's bits;
// nothing is written outside the blocks asked for.
TEST_P(Kernels, MatvecBlocksCombinedIsLsMatvec32) {
  ASSERT_NE(k().matvec_blocks, nullptr);
  std::mt19937_64 rng(15);
  for (int n_in : {16, 768, 3072}) {
    const auto w = Uniform(rng, size_t(n_in) * 64, -1, 1);  // one panel
    const auto bias = Uniform(rng, 64, -1, 1);
    const auto x = Uniform(rng, size_t(n_in), -1, 1);
    std::vector<float> partial(16 * 64), want(64);
    ls_matvec32(x.data(), w.data(), bias.data(), n_in, 64, partial.data(),
                want.data());
    for (int groups : {1, 2, 4, 8, 16}) {
      const int per = 16 / groups;
      std::vector<float> part(18 * 64, NAN);  // one guard block each side
      for (int g = groups - 1; g >= 0; --g) {
        k().matvec_blocks(x.data(), w.data(), n_in, g * per, g * per + per,
                          part.data() + 64 + size_t(g * per) * 64);
      }
      for (size_t j = 0; j < 64; ++j) {
        EXPECT_TRUE(std::isnan(part[j]) && std::isnan(part[17 * 64 + j]));
      }
      float* s = part.data() + 64;
      for (int h = 8; h >= 1; h /= 2) {
        for (int i = 0; i < h; ++i) {
          for (size_t j = 0; j < 64; ++j) {
            s[size_t(i) * 64 + j] =
                s[size_t(i) * 64 + j] + s[size_t(i + h) * 64 + j];
          }
        }
      }
      std::vector<float> got(64);
      for (size_t j = 0; j < 64; ++j) got[j] = s[j] + bias[j];
      EXPECT_TRUE(BytesEqual(got, want))
          << "n_in " << n_in << ", " << groups << " groups";
    }
  }
}

TEST_P(Kernels, AttendIsDotSoftmaxWeightedSum) {
  std::mt19937_64 rng(13);
  for (int D : {64, 16, 20, 48, 3}) {
    for (int heads : {1, 3}) {
      for (int n : {1, 2, 15, 16, 17, 40, 100}) {
        const size_t HD = size_t(heads) * size_t(D), un = size_t(n);
        const size_t stride = 2 * HD + 5;
        const auto q = Uniform(rng, HD, -3, 3);
        const auto kv = Uniform(rng, un * stride + 2 * HD, -3, 3);
        const float* keys = kv.data();
        const float* values = kv.data() + HD;
        const float scale = __builtin_sqrtf(float(D));
        std::vector<float> score(size_t(heads) * un), got(HD, NAN), want(HD),
            s(un);
        k().attend(q.data(), keys, values, stride, D, heads, n, scale,
                   score.data(), got.data());
        // core/ls_gpt2.c's ls_attend, head by head.
        for (int h = 0; h < heads; ++h) {
          const size_t off = size_t(h) * size_t(D);
          for (size_t j = 0; j < un; ++j) {
            s[j] =
                ls_dot32(q.data() + off, keys + j * stride + off, D, 1) / scale;
          }
          ls_softmax32(s.data(), n, s.data());
          for (size_t d = 0; d < size_t(D); ++d) {
            float acc = 0.0f;
            for (size_t j = 0; j < un; ++j) {
              acc = acc + s[j] * values[j * stride + off + d];
            }
            want[off + d] = acc;
          }
        }
        EXPECT_TRUE(BytesEqual(got, want))
            << "D " << D << " heads " << heads << " n " << n;
      }
    }
  }
}

// The cached step's split attention (cpu_backend.cc attend_split): scores
// by key range, softmax by head, weighted sums by vector of value elements,
// against the same scalar loop of the spec's order as above; 64-wide heads
// (the split's only width), key ranges that do and do not end on a vector.
TEST_P(Kernels, AttendPartsAreDotSoftmaxWeightedSum) {
  ASSERT_TRUE(k().attend_scores && k().softmax && k().attend_values_vec);
  std::mt19937_64 rng(17);
  const int D = 64, heads = 3, W = k().lanes;
  for (int n : {1, 17, 64, 65, 130, 300}) {
    const size_t HD = size_t(heads) * size_t(D), un = size_t(n);
    const size_t stride = 2 * HD + 7, sn = un + 16;
    const auto q = Uniform(rng, HD, -3, 3);
    const auto kv = Uniform(rng, un * stride + 2 * HD, -3, 3);
    const float* keys = kv.data();
    const float* values = kv.data() + HD;
    const float scale = __builtin_sqrtf(float(D));
    std::vector<float> score(size_t(heads) * sn), got(HD, NAN), want(HD), s(un);
    for (int j0 = 0; j0 < n; j0 += 29) {
      k().attend_scores(q.data(), keys, stride, D, heads, j0,
                        std::min(n, j0 + 29), scale, score.data(), sn);
    }
    for (int h = 0; h < heads; ++h) {
      k().softmax(score.data() + size_t(h) * sn, n);
      for (int e = 0; e < D; e += W) {
        const size_t o = size_t(h) * size_t(D) + size_t(e);
        k().attend_values_vec(score.data() + size_t(h) * sn, values + o, stride,
                              n, got.data() + o);
      }
    }
    for (int h = 0; h < heads; ++h) {
      const size_t off = size_t(h) * size_t(D);
      for (size_t j = 0; j < un; ++j) {
        s[j] = ls_dot32(q.data() + off, keys + j * stride + off, D, 1) / scale;
      }
      ls_softmax32(s.data(), n, s.data());
      for (size_t d = 0; d < size_t(D); ++d) {
        float acc = 0.0f;
        for (size_t j = 0; j < un; ++j) {
          acc = acc + s[j] * values[j * stride + off + d];
        }
        want[off + d] = acc;
      }
    }
    EXPECT_TRUE(BytesEqual(got, want)) << "n " << n;
  }
}

// The batched attention of a block of queries of one head: query r over
// keys 0 .. n0 + r - 1, keys transposed, values compact, against a scalar
// loop of the spec's order (ls_dot32, the division, ls_softmax32, the §2.5
// sum from +0.0 in key order); ragged row counts for every tile height,
// widths that are and are not multiples of 16 and of the vector width,
// scales that are and are not powers of two; nothing written between the
// output rows.
TEST_P(Kernels, AttendRowsIsDotSoftmaxWeightedSum) {
  ASSERT_NE(k().attend_rows, nullptr);
  std::mt19937_64 rng(17);
  for (int D : {64, 16, 20, 48, 3, 1, 128}) {
    for (int rows : {1, 2, 3, 5, 6, 7, 12, 13, 25}) {
      for (int n0 : {1, 2, 15, 16, 17, 40, 100}) {
        const int keys = n0 + rows - 1;
        const size_t kts = size_t(keys + 15) / 16 * 16 + (D == 20 ? 16 : 0);
        const size_t qs = size_t(D) + 7, vs = size_t(D) + (D == 64 ? 0 : 3);
        const size_t os = size_t(D) + 5;
        const float spread = D == 1 ? 30.0f : 3.0f;
        const auto q = Uniform(rng, size_t(rows) * qs, -spread, spread);
        const auto kk = Uniform(rng, size_t(keys) * size_t(D), -3, 3);
        const auto v = Uniform(rng, size_t(keys) * vs, -3, 3);
        // Padding columns of the transposed keys: anything finite.
        auto kt = Uniform(rng, size_t(D) * kts, -1, 1);
        for (int j = 0; j < keys; ++j) {
          for (int d = 0; d < D; ++d) {
            kt[size_t(d) * kts + size_t(j)] = kk[size_t(j) * size_t(D) + d];
          }
        }
        const float scale = __builtin_sqrtf(float(D));
        std::vector<float> score(size_t(rows) * kts, NAN),
            got(size_t(rows) * os, NAN), want(got.size(), NAN);
        std::vector<float> sr(static_cast<size_t>(keys));
        k().attend_rows(q.data(), qs, rows, n0, kt.data(), kts, v.data(), vs, D,
                        scale, score.data(), got.data(), os);
        for (int r = 0; r < rows; ++r) {
          const int n = n0 + r;
          const float* qr = q.data() + size_t(r) * qs;
          for (int j = 0; j < n; ++j) {
            sr[size_t(j)] =
                ls_dot32(qr, kk.data() + size_t(j) * size_t(D), D, 1) / scale;
          }
          ls_softmax32(sr.data(), n, sr.data());
          for (int d = 0; d < D; ++d) {
            float acc = 0.0f;
            for (int j = 0; j < n; ++j) {
              acc = acc + sr[size_t(j)] * v[size_t(j) * vs + size_t(d)];
            }
            want[size_t(r) * os + size_t(d)] = acc;
          }
        }
        for (int r = 0; r < rows; ++r) {
          ASSERT_TRUE(BytesEqual(got.data() + size_t(r) * os,
                                 want.data() + size_t(r) * os, size_t(D)))
              << "D " << D << " rows " << rows << " n0 " << n0 << " row " << r;
          for (size_t e = size_t(D); e < os && r + 1 < rows; ++e) {
            ASSERT_TRUE(std::isnan(got[size_t(r) * os + e]))
                << "written between rows: D " << D << " row " << r;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, Kernels,
                         ::testing::ValuesIn(lockstep::cpu::supported_isas()),
                         [](const auto& i) { return i.param; });

// ------------------------------------------------------------- backends

class Backend : public ::testing::TestWithParam<Variant> {
 protected:
  std::unique_ptr<Gpt2Backend> Make(const ls_gpt2_config& c, const float* w,
                                    size_t words, int max_prefix = 0) const {
    return make_gpt2_backend(GetParam().name, c, w, words, GetParam().threads,
                             max_prefix);
  }
};

// (a) Hugging Face's fixture: every position of both cases, cached and full.
TEST_P(Backend, HfFixtureEveryPositionBytesEqualToReference) {
  const std::string dir = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(dir);
  std::ifstream in(dir + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  ASSERT_EQ(cases.size(), 2u);
  auto ref =
      make_gpt2_backend("reference", w.config, w.data(), w.words(), 1, 0);
  auto fast = Make(w.config, w.data(), w.words());
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const std::vector<int32_t> ids = cases[ci]["input_ids"];
    const auto prefixes = AllPrefixes(int(ids.size()));
    const Trace want = RunTrace(*ref, w.config, ids, prefixes);
    const Trace got = RunTrace(*fast, w.config, ids, prefixes);
    ExpectSameTrace(got, want, fast->name() + " case " + std::to_string(ci));
  }
}

// (b) Small random configs: widths that are not multiples of 16 (n_embd 40:
// the sequential §2.1 branch everywhere but c_proj of the MLP; head widths
// 16, 20, 8), and vector tails in every product.
TEST_P(Backend, SmallConfigsBytesEqualToReference) {
  const ls_gpt2_config configs[] = {
      {300, 24, 48, 3, 2},   // D = 16: blocks of one element
      {301, 20, 40, 2, 2},   // n_embd 40, D = 20: sequential dots
      {257, 18, 64, 4, 3},   // D = 16, three layers
      {97, 140, 128, 2, 1},  // D = 64: the blocked head dot; 140 positions
                             // (from 128 keys, with 3 threads or more, the
                             // step's split attention)
      {131, 16, 24, 3, 1},   // D = 8
      {250, 12, 48, 3, 1},   // head: 4 panels, the last 58 wide (even count)
  };
  uint64_t seed = 100;
  for (const auto& c : configs) {
    const auto w = RandomWeights(c, ++seed);
    const auto tokens = RandomTokens(c, c.n_ctx, seed);
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    auto fast = Make(c, w.data(), w.size());
    const std::vector<int> prefixes = {1, 2, 3, 7, c.n_ctx / 2 + 1, c.n_ctx};
    const Trace want = RunTrace(*ref, c, tokens, prefixes);
    const Trace got = RunTrace(*fast, c, tokens, prefixes);
    ExpectSameTrace(got, want,
                    fast->name() + " n_embd " + std::to_string(c.n_embd));
  }
}

// (c) Batched prefill far into the cache with a small max_prefix: the
// batched attention's scratch (5 * max_prefix * n_embd floats) holds the
// transposed keys and the compact values of the first chunks, only the
// keys of the next ones (values read in the cache), and not even those
// later (each position by itself): every chunk's every logit and the cache
// words equal the reference's cached steps. Chunks of 16 (max_prefix),
// 13, 1 and 7 positions; D = 64 and D = 20.
TEST_P(Backend, PrefillFarIntoTheCacheBytesEqualToReference) {
  const ls_gpt2_config configs[] = {
      {97, 160, 128, 2, 2},  // D = 64
      {89, 120, 40, 2, 1},   // D = 20
  };
  uint64_t seed = 300;
  for (const auto& c : configs) {
    const auto w = RandomWeights(c, ++seed);
    const auto tokens = RandomTokens(c, c.n_ctx, seed);
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    const Trace want = RunTrace(*ref, c, tokens, {});
    auto fast = Make(c, w.data(), w.size(), 16);
    const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
    std::vector<float> cache(size_t(c.n_ctx) * row, NAN), logits(16 * V, NAN);
    const int sizes[] = {16, 16, 13, 1, 16, 7, 16, 16};
    int pos = 0;
    for (size_t i = 0; pos < c.n_ctx; ++i) {
      const int n = std::min(sizes[i % 8], c.n_ctx - pos);
      ASSERT_EQ(fast->prefill(cache.data(), cache.size(), size_t(pos) * row,
                              tokens.data() + pos, n, pos, true, logits.data()),
                LS_OK)
          << fast->name() << " chunk at " << pos;
      for (int t = 0; t < n; ++t) {
        ASSERT_TRUE(BytesEqual(logits.data() + size_t(t) * V,
                               want.step_logits[size_t(pos + t)].data(), V))
            << fast->name() << " n_embd " << c.n_embd << ": logits at "
            << pos + t << " (chunk of " << n << " at " << pos << ")";
      }
      pos += n;
    }
    EXPECT_TRUE(BytesEqual(cache, want.cache))
        << fast->name() << " n_embd " << c.n_embd << ": cache words";
  }
}

// The checks and status codes of ls_gpt2_step / ls_gpt2_infer, in order.
TEST_P(Backend, StatusCodesAreTheReferences) {
  const ls_gpt2_config c = {50, 8, 32, 2, 1};
  const auto w = RandomWeights(c, 5);
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 4);
  auto fast = Make(c, w.data(), w.size(), 4);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(50);
  struct StepCase {
    float* cache;
    size_t cap, len;
    int32_t token, position;
    float* logits;
  };
  const StepCase steps[] = {
      {nullptr, cache.size(), 0, 1, 0, logits.data()},
      {cache.data(), cache.size(), 0, 1, 0, nullptr},
      {cache.data(), cache.size(), 0, 50, 0, logits.data()},
      {cache.data(), cache.size(), 0, -1, 0, logits.data()},
      {cache.data(), cache.size(), 8 * row, 1, 8, logits.data()},
      {cache.data(), cache.size(), row, 1, 0, logits.data()},
      {cache.data(), row - 1, 0, 1, 0, logits.data()},
  };
  for (const auto& s : steps) {
    EXPECT_EQ(fast->step(s.cache, s.cap, s.len, s.token, s.position, s.logits),
              ref->step(s.cache, s.cap, s.len, s.token, s.position, s.logits));
  }
  const int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int32_t bad[2] = {1, 77};
  EXPECT_EQ(fast->infer(toks, 0, logits.data()), LS_ERR_EMPTY_SEQUENCE);
  EXPECT_EQ(fast->infer(toks, 9, logits.data()), LS_ERR_SEQUENCE_TOO_LONG);
  EXPECT_EQ(fast->infer(toks, 5, logits.data()), LS_ERR_SCRATCH);
  EXPECT_EQ(ref->infer(toks, 5, logits.data()), LS_ERR_SCRATCH);
  EXPECT_EQ(fast->infer(bad, 2, logits.data()), LS_ERR_TOKEN);
  EXPECT_EQ(fast->infer(nullptr, 2, logits.data()), LS_ERR_NULL);
  EXPECT_EQ(fast->infer(toks, 4, nullptr), LS_ERR_NULL);
  EXPECT_EQ(fast->infer(toks, 4, logits.data()), LS_OK);
}

// Overflowing weights give LS_ERR_OUTPUT_NONFINITE, as the reference does.
TEST_P(Backend, NonFiniteLogitsAreAnError) {
  const ls_gpt2_config c = {40, 4, 16, 1, 1};
  auto w = RandomWeights(c, 6);
  for (int i = 0; i < 16; ++i) w[size_t(i)] = 3e38f;  // wte[0]
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
  auto fast = Make(c, w.data(), w.size());
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(40);
  const int32_t t = 0;
  EXPECT_EQ(ref->infer(&t, 1, logits.data()), LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(fast->infer(&t, 1, logits.data()), LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(fast->step(cache.data(), cache.size(), 0, 0, 0, logits.data()),
            LS_ERR_OUTPUT_NONFINITE);
}

// The memory a backend holds is computed from the config alone: the
// repacked matrices and head plus the scratch of the layout in
// cpu/cpu_backend.cc, in whole 2 MB pages.
TEST_P(Backend, ReportsItsMemoryAndName) {
  const ls_gpt2_config c = {1000, 64, 96, 2, 2};
  const auto w = RandomWeights(c, 8);
  auto b = Make(c, w.data(), w.size(), 32);
  EXPECT_EQ(b->extra_memory_bytes(),
            lockstep::backends::cpu_backend_memory_bytes(
                c, GetParam().name.substr(4), GetParam().threads, 32));
  const size_t copies = (1000 * 96 + 2 * 12 * 96 * 96) * 4;
  const size_t scratch = 32 * 11 * 96 * 4;
  EXPECT_GT(b->extra_memory_bytes(), copies + scratch);
  EXPECT_LT(b->extra_memory_bytes(), copies + scratch + (3 << 20));
  EXPECT_EQ(b->name(),
            GetParam().name + " x" + std::to_string(GetParam().threads));
}

// "No allocation inside a step": the counting operator new above sees none
// during steps and full passes (after the first, which warms up gtest's
// own bookkeeping, not the backend's).
TEST_P(Backend, AllocatesNothingInsideStepOrInfer) {
  const ls_gpt2_config c = {300, 16, 64, 4, 2};
  const auto w = RandomWeights(c, 9);
  auto b = Make(c, w.data(), w.size(), 8);
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(300);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  const int32_t toks[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(b->step(cache.data(), cache.size(), 0, 1, 0, logits.data()), LS_OK);
  const long before = g_allocations.load();
  for (int p = 1; p < 8; ++p) {
    ASSERT_EQ(b->step(cache.data(), cache.size(), size_t(p) * row, toks[p], p,
                      logits.data()),
              LS_OK);
  }
  ASSERT_EQ(b->infer(toks, 8, logits.data()), LS_OK);
  EXPECT_EQ(g_allocations.load(), before);
}

INSTANTIATE_TEST_SUITE_P(Cpu, Backend, ::testing::ValuesIn(FastVariants()),
                         VariantName);

TEST(BackendFactory, RejectsWhatItCannotRun) {
  const ls_gpt2_config c = {40, 4, 16, 1, 1};
  const auto w = RandomWeights(c, 1);
  EXPECT_THROW(make_gpt2_backend("gpu", c, w.data(), w.size(), 1, 0),
               lockstep::Error);
  EXPECT_THROW(make_gpt2_backend("cpu-sse9", c, w.data(), w.size(), 1, 0),
               lockstep::Error);
  EXPECT_THROW(make_gpt2_backend("cpu", c, w.data(), w.size(), 0, 0),
               lockstep::Error);
  EXPECT_THROW(make_gpt2_backend("cpu", c, w.data(), w.size(), 257, 0),
               lockstep::Error);
  EXPECT_THROW(make_gpt2_backend("reference", c, w.data(), w.size(), 2, 0),
               lockstep::Error);
  EXPECT_THROW(make_gpt2_backend("cpu", c, w.data(), w.size() - 1, 1, 0),
               lockstep::Error);
  for (const char* isa : {"avx512", "avx2"}) {
    if (!lockstep::cpu::isa_supported(isa)) {
      EXPECT_THROW(make_gpt2_backend(std::string("cpu-") + isa, c, w.data(),
                                     w.size(), 1, 0),
                   lockstep::Error);
    }
  }
  EXPECT_NE(make_gpt2_backend("cpu", c, w.data(), w.size(), 2, 0)->name(), "");
}

// (c) Full-size GPT-2 124M with seeded random weights: 8 cached steps, a
// full pass over 8 tokens, and one step at position 40 (positions 8..39
// filled by the fast path), every backend and thread count against the
// reference. One test, so the weights and the reference run once (about
// 20 s of the reference's time in Release).
TEST(Gpt2_124M, EveryBackendBytesEqualToReference) {
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const auto w = RandomWeights(c, 124);
  const auto tokens = RandomTokens(c, 41, 124);
  const std::vector<int32_t> first8(tokens.begin(), tokens.begin() + 8);
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 8);
  const Trace want = RunTrace(*ref, c, first8, {8});

  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  const int late = 40;
  std::vector<float> late_cache, late_want(V);
  for (const auto& v : FullSizeVariants()) {
    auto fast = make_gpt2_backend(v.name, c, w.data(), w.size(), v.threads, 8);
    const Trace got = RunTrace(*fast, c, first8, {8});
    ExpectSameTrace(got, want, fast->name() + " (124M)");
    if (late_cache.empty()) {
      // Fill positions 8 .. late-1 with this (already checked) fast path.
      late_cache.assign(size_t(late + 1) * row, 0.0f);
      std::copy(want.cache.begin(), want.cache.end(), late_cache.begin());
      std::vector<float> logits(V);
      for (int p = 8; p < late; ++p) {
        ASSERT_EQ(
            fast->step(late_cache.data(), late_cache.size(), size_t(p) * row,
                       tokens[size_t(p)], p, logits.data()),
            LS_OK);
      }
      ASSERT_EQ(
          ref->step(late_cache.data(), late_cache.size(), size_t(late) * row,
                    tokens[size_t(late)], late, late_want.data()),
          LS_OK);
    }
    std::vector<float> cache = late_cache, logits(V);
    std::fill(cache.begin() + std::ptrdiff_t(size_t(late) * row), cache.end(),
              NAN);
    ASSERT_EQ(fast->step(cache.data(), cache.size(), size_t(late) * row,
                         tokens[size_t(late)], late, logits.data()),
              LS_OK);
    EXPECT_TRUE(BytesEqual(logits, late_want))
        << fast->name() << ": step logits at position " << late;
    EXPECT_TRUE(BytesEqual(cache, late_cache))
        << fast->name() << ": cache words after the step at " << late;
  }
}

// The widths and head counts of the larger GPT-2 sizes (355M: 1024 / 16,
// 774M: 1280 / 20, 1.5B: 1600 / 25, all with 64-wide heads), one layer and
// a small vocabulary each: odd numbers of 64-column panels (1.5B's c_proj
// has 25), so the last unit of a decode product holds one panel. Every
// fast backend against the reference, steps and full passes.
TEST(LargerSizes, BlockShapesBytesEqualToReference) {
  for (const auto& big :
       {lockstep::kGpt2_355M, lockstep::kGpt2_774M, lockstep::kGpt2_1558M}) {
    const ls_gpt2_config c = {301, 6, big.n_embd, big.n_head, 1};
    const auto w = RandomWeights(c, uint64_t(big.n_embd));
    const auto tokens = RandomTokens(c, c.n_ctx, uint64_t(big.n_head));
    const std::vector<int> prefixes = {1, 5, 6};
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    const Trace want = RunTrace(*ref, c, tokens, prefixes);
    for (const auto& v : FastVariants()) {
      auto fast =
          make_gpt2_backend(v.name, c, w.data(), w.size(), v.threads, 0);
      ExpectSameTrace(RunTrace(*fast, c, tokens, prefixes), want,
                      fast->name() + " n_embd " + std::to_string(c.n_embd));
    }
  }
}

// ------------------------------------------------------ long contexts

// Cached and full-prefix results agree at late positions too (GPT-2 runs
// to n_ctx - 1 = 1023): `logits[i]` is the cached step's at position
// prefixes[i] - 1; each full pass over prefixes[i] tokens must equal it.
void ExpectFullEqualsCached(Gpt2Backend& b, const std::vector<int32_t>& tokens,
                            const std::vector<int>& prefixes,
                            const std::vector<std::vector<float>>& logits) {
  std::vector<float> full(logits[0].size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    ASSERT_EQ(b.infer(tokens.data(), prefixes[i], full.data()), LS_OK);
    EXPECT_TRUE(BytesEqual(full, logits[i]))
        << b.name() << ": full pass over " << prefixes[i]
        << " tokens against the cached step at position " << prefixes[i] - 1;
  }
}

// A narrow model with GPT-2's 1,024 positions (cheap enough for the
// sanitizer build): every cached step of the fast paths against the
// reference's, every logit and cache word, and full passes at late
// lengths against the cached steps.
TEST(LongContext, NarrowModelEveryPositionTo1023) {
  const ls_gpt2_config c = {512, 1024, 64, 4, 2};
  const auto w = RandomWeights(c, 1024);
  const auto tokens = RandomTokens(c, c.n_ctx, 1024);
  const std::vector<int> prefixes = {1, 2, 129, 513, 1000, 1023, 1024};
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
  const Trace want = RunTrace(*ref, c, tokens, prefixes);
  for (size_t i = 0; i < prefixes.size(); ++i) {
    EXPECT_TRUE(BytesEqual(want.infer_logits[i],
                           want.step_logits[size_t(prefixes[i] - 1)]))
        << "reference: full pass over " << prefixes[i]
        << " tokens against its cached step";
  }
  for (const auto& v : FullSizeVariants()) {
    auto fast = make_gpt2_backend(v.name, c, w.data(), w.size(), v.threads, 0);
    ExpectSameTrace(RunTrace(*fast, c, tokens, prefixes), want, fast->name());
  }
}

// Full-size 124M at positions up to 1,023: the fast path (already equal to
// the reference above) steps through all 1,024 positions; its full passes
// over 128, 512 and 1,024 tokens equal its cached steps at 127, 511 and
// 1,023; and the reference's own step at 1,023, on that cache, gives the
// same logits and cache row. About 30 s in Release; under the sanitizers
// (10x slower) the narrow model above covers the same late-position code.
TEST(LongContext, Gpt2_124MCachedEqualsFullTo1023) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
  GTEST_SKIP() << "too slow under the sanitizers; NarrowModelEveryPosition"
                  "To1023 covers late positions there";
#endif
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const auto w = RandomWeights(c, 1023);
  const auto tokens = RandomTokens(c, c.n_ctx, 1023);
  const std::vector<int> prefixes = {128, 512, 1024};
  auto fast = make_gpt2_backend("cpu", c, w.data(), w.size(), 2, 0);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> cache(ls_gpt2_cache_floats(&c), NAN), logits(V);
  std::vector<std::vector<float>> kept;
  for (int p = 0; p < c.n_ctx; ++p) {
    ASSERT_EQ(fast->step(cache.data(), cache.size(), size_t(p) * row,
                         tokens[size_t(p)], p, logits.data()),
              LS_OK)
        << "position " << p;
    if (std::find(prefixes.begin(), prefixes.end(), p + 1) != prefixes.end()) {
      kept.push_back(logits);
    }
  }
  ExpectFullEqualsCached(*fast, tokens, prefixes, kept);

  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 1);
  const int last = c.n_ctx - 1;
  std::vector<float> ref_cache = cache, ref_logits(V);
  std::fill(ref_cache.begin() + std::ptrdiff_t(size_t(last) * row),
            ref_cache.end(), NAN);
  ASSERT_EQ(ref->step(ref_cache.data(), ref_cache.size(), size_t(last) * row,
                      tokens[size_t(last)], last, ref_logits.data()),
            LS_OK);
  EXPECT_TRUE(BytesEqual(ref_logits, kept.back()))
      << "reference step at position " << last;
  EXPECT_TRUE(BytesEqual(ref_cache, cache))
      << "cache words after the reference's step at " << last;
}

}  // namespace
