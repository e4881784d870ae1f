// The CUDA backend (backends/cuda/, docs/cuda.md) against the scalar
// reference (core/ls_gpt2.c) and the CPU engine, byte for byte: the §3
// functions on the device against the core's, then every logit and every
// cache word of cached steps, full-prefix passes and batched prefills, on
// small seeded random configs, the Hugging Face fixture, the larger
// GPT-2 block shapes and the full-size random 124M (128 contexts, and the
// last positions of a 1,024-token context), the grouped int8 model against
// the int8 reference (core/ls_gpt2_q8.c), and the trained model
// (models/shakespeare-gpt2) in both. Built only with LOCKSTEP_CUDA;
// every test skips where no CUDA device is found. Runs on the GPU machine
// through scripts/cuda.sh.
#include "backends/cuda/cuda_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lockstep/error.h"
#include "ls_arith.h"
#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"
#include "ls_gpt2_q8.h"
#include "tests/cuda_test_util.h"
#include "tests/gpt2_test_util.h"

namespace {

using lockstep::Gpt2Backend;
using lockstep::make_gpt2_backend;
using namespace lockstep::test;  // NOLINT: BytesEqual, CountDifferent, ...

std::unique_ptr<Gpt2Backend> Cuda(const ls_gpt2_config& c,
                                  const std::vector<float>& w,
                                  int max_prefix = 0) {
  return make_gpt2_backend("cuda", c, w.data(), w.size(), 1, max_prefix);
}

// ------------------------------------------------------------- §3

// exp, tanh and GELU on the device equal the core's on every 251st bit
// pattern of binary32 (17 million inputs: every sign, exponent, both
// zeros, subnormals, infinities and NaNs) and on the boundaries of §3.1.
TEST(CudaArith, ExpTanhGeluEqualTheCoreBitForBit) {
  SKIP_WITHOUT_DEVICE();
  std::vector<float> x;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 251) {
    const uint32_t b = uint32_t(u);
    float f;
    std::memcpy(&f, &b, 4);
    x.push_back(f);
  }
  for (float b : {0x1.62e42ep+6f, -0x1.9fe368p+6f, 0.0f, -87.33655f, 88.0f,
                  88.72283f, 1e-30f, 0.5f, 9.0f, 10.0f, 44.0f}) {
    float lo = b, hi = b;
    for (int i = 0; i < 64; ++i) {
      x.push_back(lo), x.push_back(hi), x.push_back(-lo), x.push_back(-hi);
      lo = std::nextafter(lo, -INFINITY), hi = std::nextafter(hi, INFINITY);
    }
  }
  std::vector<float> got(x.size()), want(x.size());
  const char* names[] = {"exp", "tanh", "gelu"};
  for (int op = 0; op < 3; ++op) {
    lockstep::backends::cuda::device_elementwise(x.data(), got.data(), x.size(),
                                                 op);
    for (size_t i = 0; i < x.size(); ++i) {
      want[i] = op == 0   ? ls_exp32(x[i])
                : op == 1 ? ls_tanh32(x[i])
                          : ls_gelu32(x[i]);
    }
    EXPECT_TRUE(BytesEqual(got, want)) << names[op];
    std::printf("cuda %s: %zu inputs compared, %zu differ\n", names[op],
                x.size(), CountDifferent(got.data(), want.data(), x.size()));
  }
}

// ------------------------------------------------------------- small models

// Widths that are not multiples of 16 (the sequential §2.1 branch), head
// widths 16, 20, 8 and 64, several layers, 70 positions (more than one
// 64-row tile of the batched products), vocabularies not a multiple of 16.
TEST(CudaBackend, SmallConfigsBytesEqualToReference) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config configs[] = {
      {300, 24, 48, 3, 2},  // D = 16
      {301, 20, 40, 2, 2},  // n_embd 40, D = 20: sequential dots
      {257, 18, 64, 4, 3},  // three layers
      {97, 70, 128, 2, 1},  // D = 64; 70 positions
      {131, 16, 24, 3, 1},  // D = 8
      {250, 12, 48, 3, 1},
  };
  uint64_t seed = 100;
  for (const auto& c : configs) {
    const auto w = lockstep::random_gpt2_weights(c, ++seed);
    const auto tokens = RandomTokens(c, c.n_ctx, seed);
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    auto gpu = Cuda(c, w);
    const std::vector<int> prefixes = {1, 2, 3, 7, c.n_ctx / 2 + 1, c.n_ctx};
    ExpectSameTrace(RunTrace(*gpu, c, tokens, prefixes),
                    RunTrace(*ref, c, tokens, prefixes),
                    gpu->name() + " n_embd " + std::to_string(c.n_embd));
  }
}

// Hugging Face's fixture (tests/data/hf-gpt2-A): every position of both
// cases, cached and full.
TEST(CudaBackend, HfFixtureEveryPositionBytesEqualToReference) {
  SKIP_WITHOUT_DEVICE();
  const std::string dir = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(dir);
  std::ifstream in(dir + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  ASSERT_EQ(cases.size(), 2u);
  auto ref =
      make_gpt2_backend("reference", w.config, w.data(), w.words(), 1, 0);
  auto gpu = make_gpt2_backend("cuda", w.config, w.data(), w.words(), 1, 0);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const std::vector<int32_t> ids = cases[ci]["input_ids"];
    std::vector<int> prefixes;
    for (int i = 1; i <= int(ids.size()); ++i) prefixes.push_back(i);
    ExpectSameTrace(RunTrace(*gpu, w.config, ids, prefixes),
                    RunTrace(*ref, w.config, ids, prefixes),
                    gpu->name() + " case " + std::to_string(ci));
  }
}

// The widths and head counts of GPT-2 355M, 774M and 1.5B (D = 64), one
// layer and a small vocabulary each.
TEST(CudaBackend, LargerSizesBlockShapesBytesEqualToReference) {
  SKIP_WITHOUT_DEVICE();
  for (const auto& big :
       {lockstep::kGpt2_355M, lockstep::kGpt2_774M, lockstep::kGpt2_1558M}) {
    const ls_gpt2_config c = {301, 6, big.n_embd, big.n_head, 1};
    const auto w = lockstep::random_gpt2_weights(c, uint64_t(big.n_embd));
    const auto tokens = RandomTokens(c, c.n_ctx, uint64_t(big.n_head));
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    auto gpu = Cuda(c, w);
    ExpectSameTrace(RunTrace(*gpu, c, tokens, {1, 5, 6}),
                    RunTrace(*ref, c, tokens, {1, 5, 6}),
                    gpu->name() + " n_embd " + std::to_string(c.n_embd));
  }
}

// The passes' variants: the default product (matmul3_kernel) with each
// split (LOCKSTEP_CUDA_SPLIT 1, 2, 4; the default picks one by shape),
// matmul_kernel (LOCKSTEP_CUDA_MATMUL=1) or matmul2_kernel (2) instead,
// attention_kernel instead of attention_pass2_kernel (LOCKSTEP_CUDA_ATTN=1)
// or attention_pass_kernel (2), attention_pass2_kernel with 32 queries per
// block (LOCKSTEP_CUDA_ATTN_Q=32), attention_kernel for the decode step
// (LOCKSTEP_CUDA_ATTN_STEP=1), layernorm_kernel (LOCKSTEP_CUDA_LN=1), the
// products' splits swapped (LOCKSTEP_CUDA_SPLITS),
// logits_kernel instead of logits2_kernel
// (LOCKSTEP_CUDA_LOGITS=1), the step's copies back not overlapped
// (LOCKSTEP_CUDA_OVERLAP=0), the decode attention letting its successor
// start early (LOCKSTEP_CUDA_ATTN_EARLY) and every kernel launched plainly
// (LOCKSTEP_CUDA_PDL=0): full passes, one prefill of every position (all
// positions' logits, the cache) and cached steps over every position
// equal the reference's bytes.
TEST(CudaBackend, BatchedProductVariantsBytesEqualToReference) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config configs[] = {
      {97, 160, 128, 2, 2},   // 2.5 row tiles of 64
      {130, 140, 48, 3, 1},   // 48 outputs: a part-filled column tile
      {64, 130, 768, 12, 1},  // 124M's widths, one layer
      {70, 40, 40, 2, 1},     // n_embd 40: the sequential §2.1 branch
  };
  struct Variant {
    const char* var;
    const char* val;
  };
  const Variant variants[] = {{nullptr, nullptr},
                              {"LOCKSTEP_CUDA_SPLIT", "1"},
                              {"LOCKSTEP_CUDA_SPLIT", "2"},
                              {"LOCKSTEP_CUDA_SPLIT", "4"},
                              {"LOCKSTEP_CUDA_MATMUL", "1"},
                              {"LOCKSTEP_CUDA_MATMUL", "2"},
                              {"LOCKSTEP_CUDA_ATTN", "1"},
                              {"LOCKSTEP_CUDA_ATTN", "2"},
                              {"LOCKSTEP_CUDA_ATTN_Q", "32"},
                              {"LOCKSTEP_CUDA_ATTN_STEP", "1"},
                              {"LOCKSTEP_CUDA_LN", "1"},
                              {"LOCKSTEP_CUDA_SPLITS", "4,2,4,2"},
                              {"LOCKSTEP_CUDA_LOGITS", "1"},
                              {"LOCKSTEP_CUDA_OVERLAP", "0"},
                              {"LOCKSTEP_CUDA_ATTN_EARLY", "1024"},
                              {"LOCKSTEP_CUDA_ATTN_EARLY", "0"},
                              {"LOCKSTEP_CUDA_PDL", "0"}};
  uint64_t seed = 900;
  size_t compared = 0, differ = 0;
  for (const auto& c : configs) {
    const auto w = lockstep::random_gpt2_weights(c, ++seed);
    const auto tokens = RandomTokens(c, c.n_ctx, seed);
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    const std::vector<int> prefixes = {2, c.n_ctx / 2 + 1, c.n_ctx};
    const Trace want = RunTrace(*ref, c, tokens, prefixes);
    const size_t V = size_t(c.n_vocab);
    for (const auto& v : variants) {
      if (v.var) setenv(v.var, v.val, 1);
      auto gpu = Cuda(c, w);
      if (v.var) unsetenv(v.var);
      const std::string what =
          gpu->name() + " n_embd " + std::to_string(c.n_embd);
      std::vector<float> logits(V);
      for (size_t i = 0; i < prefixes.size(); ++i) {
        ASSERT_EQ(gpu->infer(tokens.data(), prefixes[i], logits.data()), LS_OK);
        EXPECT_TRUE(BytesEqual(logits, want.infer_logits[i]))
            << what << ": infer over " << prefixes[i];
        compared += V;
        differ += CountDifferent(logits.data(), want.infer_logits[i].data(), V);
      }
      std::vector<float> cache(want.cache.size(),
                               std::numeric_limits<float>::quiet_NaN());
      std::vector<float> all(size_t(c.n_ctx) * V);
      ASSERT_EQ(gpu->prefill(cache.data(), cache.size(), 0, tokens.data(),
                             c.n_ctx, 0, true, all.data()),
                LS_OK);
      for (int p = 0; p < c.n_ctx; ++p) {
        EXPECT_TRUE(BytesEqual(all.data() + size_t(p) * V,
                               want.step_logits[size_t(p)].data(), V))
            << what << ": prefill logits at position " << p;
        differ += CountDifferent(all.data() + size_t(p) * V,
                                 want.step_logits[size_t(p)].data(), V);
      }
      compared += all.size();
      EXPECT_TRUE(BytesEqual(cache, want.cache)) << what << ": cache words";
      compared += cache.size();
      differ += CountDifferent(cache.data(), want.cache.data(), cache.size());
      // Cached steps (the decode graph, its copies back, the decode
      // attention and logits).
      const Trace steps = RunTrace(*gpu, c, tokens, {});
      for (int p = 0; p < c.n_ctx; ++p) {
        EXPECT_TRUE(BytesEqual(steps.step_logits[size_t(p)],
                               want.step_logits[size_t(p)]))
            << what << ": step logits at position " << p;
        differ += CountDifferent(steps.step_logits[size_t(p)].data(),
                                 want.step_logits[size_t(p)].data(), V);
        compared += V;
      }
      EXPECT_TRUE(BytesEqual(steps.cache, want.cache))
          << what << ": cache words after the steps";
      compared += steps.cache.size();
      differ += CountDifferent(steps.cache.data(), want.cache.data(),
                               steps.cache.size());
    }
  }
  std::printf("cuda batched product variants: %zu words compared, %zu differ\n",
              compared, differ);
}

// Batched prefill in chunks (max_prefix 16: chunks of 16, 13, 1 and 7,
// all positions' logits) far into the cache: every logit and the cache
// words equal the reference's cached steps.
TEST(CudaBackend, PrefillChunksBytesEqualToReferenceSteps) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config configs[] = {
      {97, 160, 128, 2, 2},  // D = 64
      {89, 120, 40, 2, 1},   // D = 20
  };
  uint64_t seed = 300;
  for (const auto& c : configs) {
    const auto w = lockstep::random_gpt2_weights(c, ++seed);
    const auto tokens = RandomTokens(c, c.n_ctx, seed);
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    const Trace want = RunTrace(*ref, c, tokens, {});
    auto gpu = Cuda(c, w, 16);
    const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
    std::vector<float> cache(size_t(c.n_ctx) * row, NAN), logits(16 * V, NAN);
    const int sizes[] = {16, 16, 13, 1, 16, 7, 16, 16};
    int pos = 0;
    for (size_t i = 0; pos < c.n_ctx; ++i) {
      const int n = std::min(sizes[i % 8], c.n_ctx - pos);
      const bool all = i % 3 != 2;  // some chunks: the last logits only
      ASSERT_EQ(gpu->prefill(cache.data(), cache.size(), size_t(pos) * row,
                             tokens.data() + pos, n, pos, all, logits.data()),
                LS_OK)
          << "chunk at " << pos;
      for (int t = all ? 0 : n - 1; t < n; ++t) {
        const float* got = logits.data() + (all ? size_t(t) * V : 0);
        ASSERT_TRUE(
            BytesEqual(got, want.step_logits[size_t(pos + t)].data(), V))
            << "n_embd " << c.n_embd << ": logits at " << pos + t
            << " (chunk of " << n << " at " << pos << ")";
      }
      pos += n;
    }
    EXPECT_TRUE(BytesEqual(cache, want.cache))
        << "n_embd " << c.n_embd << ": cache words";
  }
}

// The device's cache mirror: rows the host filled elsewhere (the reference)
// are uploaded, a copied buffer is uploaded, a rewound session (a shorter
// length in the same buffer) reuses the mirror, and a buffer whose last row
// changed is uploaded again. Every logit equals the reference's.
TEST(CudaBackend, PartlyFilledCachesBytesEqualToReference) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {211, 40, 64, 4, 2};
  const auto w = lockstep::random_gpt2_weights(c, 77);
  const auto tokens = RandomTokens(c, c.n_ctx, 77);
  const auto other = RandomTokens(c, c.n_ctx, 78);
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
  const Trace want = RunTrace(*ref, c, tokens, {});
  auto gpu = Cuda(c, w, 8);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> logits(8 * V);

  // Rows 0..24 from the reference, then steps 25..29 and a prefill of 8.
  std::vector<float> cache = want.cache;
  std::fill(cache.begin() + 25 * std::ptrdiff_t(row), cache.end(), NAN);
  for (int p = 25; p < 30; ++p) {
    ASSERT_EQ(gpu->step(cache.data(), cache.size(), size_t(p) * row,
                        tokens[size_t(p)], p, logits.data()),
              LS_OK);
    EXPECT_TRUE(
        BytesEqual(logits.data(), want.step_logits[size_t(p)].data(), V))
        << "step at " << p << " after reference rows";
  }
  ASSERT_EQ(gpu->prefill(cache.data(), cache.size(), 30 * row,
                         tokens.data() + 30, 8, 30, true, logits.data()),
            LS_OK);
  for (int t = 0; t < 8; ++t) {
    EXPECT_TRUE(BytesEqual(logits.data() + size_t(t) * V,
                           want.step_logits[size_t(30 + t)].data(), V))
        << "prefill position " << 30 + t;
  }
  EXPECT_TRUE(BytesEqual(cache.data(), want.cache.data(), 38 * row));

  // A copy of the first 38 rows: another buffer, uploaded.
  std::vector<float> copy(cache.begin(),
                          cache.begin() + 39 * std::ptrdiff_t(row));
  ASSERT_EQ(gpu->step(copy.data(), copy.size(), 38 * row, tokens[38], 38,
                      logits.data()),
            LS_OK);
  EXPECT_TRUE(BytesEqual(logits.data(), want.step_logits[38].data(), V));

  // Rewind the first buffer to 20 and take another branch; then the
  // reference's own rows again at 20 (the last row changed: uploaded).
  std::vector<float> branch = want.cache;
  auto ref2 = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
  std::vector<float> want_logits(V);
  for (int p = 20; p < 24; ++p) {
    ASSERT_EQ(gpu->step(cache.data(), cache.size(), size_t(p) * row,
                        other[size_t(p)], p, logits.data()),
              LS_OK);
    ASSERT_EQ(ref2->step(branch.data(), branch.size(), size_t(p) * row,
                         other[size_t(p)], p, want_logits.data()),
              LS_OK);
    EXPECT_TRUE(BytesEqual(logits.data(), want_logits.data(), V))
        << "branch step at " << p;
  }
  EXPECT_TRUE(BytesEqual(cache.data(), branch.data(), 24 * row));
  std::copy(want.cache.begin(), want.cache.begin() + 24 * std::ptrdiff_t(row),
            cache.begin());
  ASSERT_EQ(gpu->step(cache.data(), cache.size(), 24 * row, tokens[24], 24,
                      logits.data()),
            LS_OK);
  EXPECT_TRUE(BytesEqual(logits.data(), want.step_logits[24].data(), V))
      << "after the host rewrote rows";
}

// The panel64 layout (core/ls_gpt2_layout.h) gives the same bits.
TEST(CudaBackend, Panel64WeightsBytesEqualToPlain) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {300, 12, 128, 2, 2};
  const auto w = lockstep::random_gpt2_weights(c, 64);
  std::vector<float> p(w.size());
  ls_gpt2_to_panels(&c, w.data(), p.data());
  const auto tokens = RandomTokens(c, c.n_ctx, 64);
  auto plain = Cuda(c, w);
  auto panel = make_gpt2_backend("cuda", c, p.data(), p.size(), 1, 0,
                                 LS_GPT2_LAYOUT_PANEL64);
  ExpectSameTrace(RunTrace(*panel, c, tokens, {3, 12}),
                  RunTrace(*plain, c, tokens, {3, 12}), "panel64");
}

// The checks and status codes of ls_gpt2_step / ls_gpt2_infer /
// ls_gpt2_prefill, in order; overflowing weights are an error.
TEST(CudaBackend, StatusCodesAreTheReferences) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {50, 8, 32, 2, 1};
  const auto w = lockstep::random_gpt2_weights(c, 5);
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 4);
  auto gpu = Cuda(c, w, 4);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(50 * 8);
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
    EXPECT_EQ(gpu->step(s.cache, s.cap, s.len, s.token, s.position, s.logits),
              ref->step(s.cache, s.cap, s.len, s.token, s.position, s.logits));
  }
  const int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int32_t bad[2] = {1, 77};
  EXPECT_EQ(gpu->infer(toks, 0, logits.data()), LS_ERR_EMPTY_SEQUENCE);
  EXPECT_EQ(gpu->infer(toks, 9, logits.data()), LS_ERR_SEQUENCE_TOO_LONG);
  EXPECT_EQ(gpu->infer(toks, 5, logits.data()), LS_ERR_SCRATCH);
  EXPECT_EQ(gpu->infer(bad, 2, logits.data()), LS_ERR_TOKEN);
  EXPECT_EQ(gpu->infer(nullptr, 2, logits.data()), LS_ERR_NULL);
  EXPECT_EQ(gpu->infer(toks, 4, nullptr), LS_ERR_NULL);
  EXPECT_EQ(gpu->infer(toks, 4, logits.data()), LS_OK);
  const size_t cap = cache.size();
  EXPECT_EQ(
      gpu->prefill(cache.data(), cap, 0, toks, 0, 0, false, logits.data()),
      LS_ERR_EMPTY_SEQUENCE);
  EXPECT_EQ(gpu->prefill(cache.data(), cap, 6 * row, toks, 3, 6, false,
                         logits.data()),
            LS_ERR_SEQUENCE_TOO_LONG);
  EXPECT_EQ(
      gpu->prefill(cache.data(), cap, 0, toks, 5, 0, false, logits.data()),
      LS_ERR_SCRATCH);
  EXPECT_EQ(
      gpu->prefill(cache.data(), cap, row, toks, 2, 0, false, logits.data()),
      LS_ERR_CACHE_LENGTH);
  EXPECT_EQ(gpu->prefill(cache.data(), cap, 0, bad, 2, 0, false, logits.data()),
            LS_ERR_TOKEN);

  auto huge = lockstep::random_gpt2_weights(c, 6);
  for (int i = 0; i < 32; ++i) huge[size_t(i)] = 3e38f;  // wte[0]
  auto ref_h =
      make_gpt2_backend("reference", c, huge.data(), huge.size(), 1, 0);
  auto gpu_h = Cuda(c, huge);
  const int32_t t0 = 0;
  EXPECT_EQ(ref_h->infer(&t0, 1, logits.data()), LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(gpu_h->infer(&t0, 1, logits.data()), LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(gpu_h->step(cache.data(), cache.size(), 0, 0, 0, logits.data()),
            LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(gpu_h->infer(toks, 2, logits.data()), LS_ERR_OUTPUT_NONFINITE);
}

// ------------------------------------------------------------- 124M

// Full-size GPT-2 124M with seeded random weights, against the CPU engine
// ("cpu" on every core; itself checked against the reference by
// gpt2_backend_test), with the reference's first steps as an anchor:
//  (a) cached steps at positions 0..127: 128 contexts, every logit
//      (6,432,896) and every cache word;
//  (b) one batched prefill of the same 128 tokens, every position's logits;
//  (c) full-prefix passes over 1, 2, 17, 64, 127 and 128 tokens;
//  (d) prefill of positions 0..1019 in chunks of 512, then steps at
//      1020..1023: the cache words and the logits at the end of the context.
// Counts of what was compared and of mismatches are printed.
TEST(CudaGpt2_124M, BytesEqualToTheCpuEngineAndReference) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const auto w = lockstep::random_gpt2_weights(c, 124);
  const auto tokens = RandomTokens(c, c.n_ctx, 124);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  const int threads =
      int(std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
  auto cpu = make_gpt2_backend("cpu", c, w.data(), w.size(), threads, 512);
  auto gpu = Cuda(c, w, 512);
  size_t logits_compared = 0, logits_differ = 0;
  size_t words_compared = 0, words_differ = 0;
  auto compare = [&](const float* got, const float* want, size_t n, bool logits,
                     const std::string& what) {
    const size_t d = CountDifferent(got, want, n);
    (logits ? logits_compared : words_compared) += n;
    (logits ? logits_differ : words_differ) += d;
    EXPECT_TRUE(BytesEqual(got, want, n)) << what << " (" << d << " differ)";
  };

  // The anchor: the reference's first 3 steps.
  {
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 4);
    std::vector<float> rc(3 * row), gc(3 * row), rl(V), gl(V);
    for (int p = 0; p < 3; ++p) {
      ASSERT_EQ(ref->step(rc.data(), rc.size(), size_t(p) * row,
                          tokens[size_t(p)], p, rl.data()),
                LS_OK);
      ASSERT_EQ(gpu->step(gc.data(), gc.size(), size_t(p) * row,
                          tokens[size_t(p)], p, gl.data()),
                LS_OK);
      compare(gl.data(), rl.data(), V, true,
              "reference step " + std::to_string(p));
    }
    compare(gc.data(), rc.data(), rc.size(), false, "reference cache");
  }

  // (a) 128 cached steps.
  const int n = 128;
  std::vector<float> cpu_cache(size_t(n) * row), gpu_cache(size_t(n) * row);
  std::vector<float> cpu_logits(size_t(n) * V), gpu_logits(size_t(n) * V);
  for (int p = 0; p < n; ++p) {
    ASSERT_EQ(cpu->step(cpu_cache.data(), cpu_cache.size(), size_t(p) * row,
                        tokens[size_t(p)], p, cpu_logits.data() + p * V),
              LS_OK);
    ASSERT_EQ(gpu->step(gpu_cache.data(), gpu_cache.size(), size_t(p) * row,
                        tokens[size_t(p)], p, gpu_logits.data() + p * V),
              LS_OK);
  }
  for (int p = 0; p < n; ++p) {
    compare(gpu_logits.data() + p * V, cpu_logits.data() + p * V, V, true,
            "step logits at " + std::to_string(p));
  }
  compare(gpu_cache.data(), cpu_cache.data(), gpu_cache.size(), false,
          "cache after 128 steps");

  // (b) one prefill of 128, every position.
  std::vector<float> pre_cache(size_t(n) * row, NAN), pre_logits(size_t(n) * V);
  ASSERT_EQ(gpu->prefill(pre_cache.data(), pre_cache.size(), 0, tokens.data(),
                         n, 0, true, pre_logits.data()),
            LS_OK);
  for (int p = 0; p < n; ++p) {
    compare(pre_logits.data() + p * V, cpu_logits.data() + p * V, V, true,
            "prefill logits at " + std::to_string(p));
  }
  compare(pre_cache.data(), cpu_cache.data(), pre_cache.size(), false,
          "cache after the prefill");

  // (c) full-prefix passes.
  std::vector<float> logits(V);
  for (int k : {1, 2, 17, 64, 127, 128}) {
    ASSERT_EQ(gpu->infer(tokens.data(), k, logits.data()), LS_OK);
    compare(logits.data(), cpu_logits.data() + size_t(k - 1) * V, V, true,
            "infer over " + std::to_string(k));
  }

  // (d) the end of the context.
  std::vector<float> cpu_full(ls_gpt2_cache_floats(&c), NAN);
  std::vector<float> gpu_full(ls_gpt2_cache_floats(&c), NAN);
  std::vector<float> cl(V), gl(V);
  for (int pos = 0; pos < 1020;) {
    const int k = std::min(512, 1020 - pos);
    ASSERT_EQ(cpu->prefill(cpu_full.data(), cpu_full.size(), size_t(pos) * row,
                           tokens.data() + pos, k, pos, false, cl.data()),
              LS_OK);
    ASSERT_EQ(gpu->prefill(gpu_full.data(), gpu_full.size(), size_t(pos) * row,
                           tokens.data() + pos, k, pos, false, gl.data()),
              LS_OK);
    compare(gl.data(), cl.data(), V, true,
            "prefill chunk ending at " + std::to_string(pos + k - 1));
    pos += k;
  }
  for (int p = 1020; p < c.n_ctx; ++p) {
    ASSERT_EQ(cpu->step(cpu_full.data(), cpu_full.size(), size_t(p) * row,
                        tokens[size_t(p)], p, cl.data()),
              LS_OK);
    ASSERT_EQ(gpu->step(gpu_full.data(), gpu_full.size(), size_t(p) * row,
                        tokens[size_t(p)], p, gl.data()),
              LS_OK);
    compare(gl.data(), cl.data(), V, true, "step at " + std::to_string(p));
  }
  compare(gpu_full.data(), cpu_full.data(), gpu_full.size(), false,
          "cache of 1,024 positions");

  std::printf(
      "cuda 124M: %zu logits compared, %zu differ; %zu cache words "
      "compared, %zu differ (%s vs %s)\n",
      logits_compared, logits_differ, words_compared, words_differ,
      gpu->name().c_str(), cpu->name().c_str());
}

// ------------------------------------------------------------- int8

// core/ls_gpt2_q8.c behind the interface (the int8 reference, called
// directly: the test depends on nothing but the core for its expectations).
class Q8Reference final : public Gpt2Backend {
 public:
  Q8Reference(const ls_gpt2_config& c, const std::vector<uint8_t>& w)
      : c_(c), w_(w.data()), bytes_(w.size()) {
    scratch_.assign(std::max(ls_gpt2_step_scratch_floats(&c),
                             ls_gpt2_infer_scratch_floats(&c, c.n_ctx)),
                    0.0f);
  }
  std::string name() const override { return "int8 reference"; }
  size_t extra_memory_bytes() const override { return 0; }
  ls_status step(float* cache, size_t cap, size_t len, int32_t token,
                 int32_t position, float* logits) override {
    return ls_gpt2_q8_step(&c_, w_, bytes_, cache, cap, len, token, position,
                           scratch_.data(), scratch_.size(), logits);
  }
  ls_status infer(const int32_t* tokens, int n, float* logits) override {
    return ls_gpt2_q8_infer(&c_, w_, bytes_, tokens, n, scratch_.data(),
                            scratch_.size(), logits);
  }
  ls_status prefill(float* cache, size_t cap, size_t len, const int32_t* tokens,
                    int n, int32_t position, bool all, float* logits) override {
    return ls_gpt2_q8_prefill(&c_, w_, bytes_, cache, cap, len, tokens, n,
                              position, all ? 1 : 0, scratch_.data(),
                              scratch_.size(), logits);
  }

 private:
  ls_gpt2_config c_;
  const uint8_t* w_;  // the vector's buffer (kept when the vector moves)
  size_t bytes_;
  std::vector<float> scratch_;
};

// The int8 backends of one quantized model: the reference and the GPU.
struct Q8Pair {
  std::vector<uint8_t> q8;
  std::unique_ptr<Gpt2Backend> ref, gpu;
};

Q8Pair MakeQ8(const ls_gpt2_config& c, const float* plain, int max_prefix) {
  Q8Pair p;
  p.q8 = lockstep::quantize_gpt2_q8(c, plain);
  p.ref = std::make_unique<Q8Reference>(c, p.q8);
  p.gpu = lockstep::backends::make_cuda_q8_backend(c, p.q8.data(), p.q8.size(),
                                                   max_prefix);
  return p;
}

// Prefill in chunks of up to max_prefix (all positions' logits for most
// chunks) over every token: each position's logits and the cache equal the
// reference's cached steps in `want`.
void ExpectChunkedPrefillEqualsSteps(Gpt2Backend& gpu, const ls_gpt2_config& c,
                                     const std::vector<int32_t>& tokens,
                                     int max_prefix, const Trace& want,
                                     const std::string& what) {
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> cache(tokens.size() * row, NAN);
  std::vector<float> logits(size_t(max_prefix) * V, NAN);
  const int sizes[] = {max_prefix, max_prefix / 2 + 1, 1, 7, max_prefix};
  int pos = 0;
  for (size_t i = 0; pos < int(tokens.size()); ++i) {
    const int n =
        std::min({sizes[i % 5], max_prefix, int(tokens.size()) - pos});
    const bool all = i % 3 != 2;
    ASSERT_EQ(gpu.prefill(cache.data(), cache.size(), size_t(pos) * row,
                          tokens.data() + pos, n, pos, all, logits.data()),
              LS_OK)
        << what << ": chunk at " << pos;
    for (int t = all ? 0 : n - 1; t < n; ++t) {
      const float* got = logits.data() + (all ? size_t(t) * V : 0);
      ASSERT_TRUE(BytesEqual(got, want.step_logits[size_t(pos + t)].data(), V))
          << what << ": prefill logits at " << pos + t << " (chunk of " << n
          << " at " << pos << ")";
    }
    pos += n;
  }
  EXPECT_TRUE(BytesEqual(cache, want.cache)) << what << ": prefill cache";
}

// ------------------------------------------------------------- batches

// Counts of what a batch comparison compared.
struct BatchCounts {
  size_t logits = 0, logits_differ = 0, words = 0, words_differ = 0;
};

// B members (member i: a prompt of (i * 29 + 5 * B) % max_prompt tokens,
// member 0 none, so the batch mixes positions), then `steps` decode steps
// of every member: on `gpu` as batches (cuda::step_batch, the prompts
// prefilled one member at a time), against each member alone on `gpu`
// (step) and on each backend of `others` (prefill, then step). Every
// member's logits at every step and its whole cache, bytes compared.
void ExpectBatchEqualsAlone(Gpt2Backend& gpu,
                            const std::vector<Gpt2Backend*>& others,
                            const ls_gpt2_config& c, int B, int steps,
                            int max_prompt, uint64_t seed,
                            const std::string& what, BatchCounts* counts) {
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<int> len(static_cast<size_t>(B));
  std::vector<std::vector<int32_t>> toks(static_cast<size_t>(B));
  for (int i = 0; i < B; ++i) {
    len[size_t(i)] = i == 0 ? 0 : (i * 29 + 5 * B) % max_prompt;
    toks[size_t(i)] = RandomTokens(c, len[size_t(i)] + steps, seed + i);
  }
  // Alone: logits[i][s * V ...], the final caches.
  auto alone = [&](Gpt2Backend& be, std::vector<std::vector<float>>* logits,
                   std::vector<std::vector<float>>* caches) {
    for (int i = 0; i < B; ++i) {
      const int L = len[size_t(i)];
      std::vector<float> cache(size_t(L + steps) * row);
      std::vector<float> lg(size_t(steps) * V), scratch(V);
      if (L > 0) {
        ASSERT_EQ(
            be.prefill(cache.data(), cache.size(), 0, toks[size_t(i)].data(), L,
                       0, false, scratch.data()),
            LS_OK)
            << what << " " << be.name();
      }
      for (int s = 0; s < steps; ++s) {
        ASSERT_EQ(be.step(cache.data(), cache.size(), size_t(L + s) * row,
                          toks[size_t(i)][size_t(L + s)], L + s,
                          lg.data() + size_t(s) * V),
                  LS_OK)
            << what << " " << be.name();
      }
      logits->push_back(std::move(lg));
      caches->push_back(std::move(cache));
    }
  };
  std::vector<std::vector<float>> gl, gc;
  alone(gpu, &gl, &gc);
  // The batch.
  std::vector<std::vector<float>> bc(static_cast<size_t>(B)),
      bl(static_cast<size_t>(B));
  std::vector<float*> ptrs(static_cast<size_t>(B));
  std::vector<size_t> caps(static_cast<size_t>(B)),
      lens(static_cast<size_t>(B));
  std::vector<int32_t> bt(static_cast<size_t>(B)), bp(static_cast<size_t>(B));
  std::vector<float> out(static_cast<size_t>(B) * V), scratch(V);
  std::vector<ls_status> st(static_cast<size_t>(B));
  for (int i = 0; i < B; ++i) {
    const int L = len[size_t(i)];
    bc[size_t(i)].assign(size_t(L + steps) * row, 0.0f);
    bl[size_t(i)].resize(size_t(steps) * V);
    if (L > 0) {
      ASSERT_EQ(
          gpu.prefill(bc[size_t(i)].data(), bc[size_t(i)].size(), 0,
                      toks[size_t(i)].data(), L, 0, false, scratch.data()),
          LS_OK);
    }
    ptrs[size_t(i)] = bc[size_t(i)].data();
    caps[size_t(i)] = bc[size_t(i)].size();
  }
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < B; ++i) {
      const int p = len[size_t(i)] + s;
      lens[size_t(i)] = size_t(p) * row;
      bp[size_t(i)] = p;
      bt[size_t(i)] = toks[size_t(i)][size_t(p)];
    }
    ASSERT_EQ(lockstep::backends::cuda::step_batch(
                  gpu, B, ptrs.data(), caps.data(), lens.data(), bt.data(),
                  bp.data(), out.data(), st.data()),
              LS_OK)
        << what << " batch step " << s;
    for (int i = 0; i < B; ++i) {
      ASSERT_EQ(st[size_t(i)], LS_OK);
      std::memcpy(bl[size_t(i)].data() + size_t(s) * V,
                  out.data() + size_t(i) * V, V * sizeof(float));
    }
  }
  auto compare = [&](const std::vector<float>& got,
                     const std::vector<float>& want, bool logits,
                     const std::string& label) {
    const size_t d = CountDifferent(got.data(), want.data(), got.size());
    (logits ? counts->logits : counts->words) += got.size();
    (logits ? counts->logits_differ : counts->words_differ) += d;
    EXPECT_TRUE(BytesEqual(got, want)) << label << " (" << d << " differ)";
  };
  for (int i = 0; i < B; ++i) {
    const std::string m = what + " batch " + std::to_string(B) + " member " +
                          std::to_string(i) + " (prompt " +
                          std::to_string(len[size_t(i)]) + ")";
    compare(bl[size_t(i)], gl[size_t(i)], true, m + ": logits vs alone");
    compare(bc[size_t(i)], gc[size_t(i)], false, m + ": cache vs alone");
  }
  for (Gpt2Backend* o : others) {
    std::vector<std::vector<float>> ol, oc;
    alone(*o, &ol, &oc);
    for (int i = 0; i < B; ++i) {
      const std::string m = what + " batch " + std::to_string(B) + " member " +
                            std::to_string(i) + " vs " + o->name();
      compare(bl[size_t(i)], ol[size_t(i)], true, m + ": logits");
      compare(bc[size_t(i)], oc[size_t(i)], false, m + ": cache");
    }
  }
}

// Small seeded configs (widths not multiples of 16, head widths 8-64,
// vocabularies not multiples of 16, which the batched logits leave to the
// one-row kernel): batches of 1, 3, 8 and 13 members against each member
// alone on the GPU and on the reference.
TEST(CudaBatch, SmallConfigsEachMemberBytesEqualAlone) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config configs[] = {
      {300, 24, 48, 3, 2},   // D = 16
      {301, 20, 40, 2, 2},   // n_embd 40: sequential dots
      {97, 70, 128, 2, 1},   // D = 64, n_embd 128: the batched logits
      {131, 16, 24, 3, 1},   // D = 8
      {509, 40, 192, 3, 2},  // n_embd 192, D = 64
  };
  uint64_t seed = 300;
  BatchCounts n;
  for (const auto& c : configs) {
    const auto w = lockstep::random_gpt2_weights(c, ++seed);
    auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    auto gpu = Cuda(c, w);
    for (int B : {1, 3, 8, 13}) {
      ExpectBatchEqualsAlone(*gpu, {ref.get()}, c, B, 4, c.n_ctx - 4,
                             seed * 31 + uint64_t(B),
                             "n_embd " + std::to_string(c.n_embd), &n);
    }
  }
  std::printf(
      "cuda batches, small: %zu logits compared, %zu differ; %zu "
      "cache words compared, %zu differ\n",
      n.logits, n.logits_differ, n.words, n.words_differ);
}

// step_batch's checks: each member's in step's order, the first failing
// member's status, nothing computed (the caches unchanged); the statuses
// of a good batch; a cache shared by two members throws.
TEST(CudaBatch, StatusCodes) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {300, 24, 48, 3, 2};
  const auto w = lockstep::random_gpt2_weights(c, 5);
  auto gpu = Cuda(c, w, 4);
  namespace cu = lockstep::backends::cuda;
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> a(4 * row, 1.0f), b(4 * row, 2.0f), lg(3 * V);
  std::vector<float> a0 = a;
  float* ptrs[3] = {a.data(), b.data(), nullptr};
  size_t caps[3] = {a.size(), b.size(), 0};
  size_t lens[3] = {0, 0, 0};
  int32_t toks[3] = {1, 2, 3}, pos[3] = {0, 0, 0};
  ls_status st[3];
  EXPECT_EQ(cu::step_batch(*gpu, 3, ptrs, caps, lens, toks, pos, lg.data(), st),
            LS_ERR_NULL);
  EXPECT_EQ(st[2], LS_ERR_NULL);
  EXPECT_EQ(cu::step_batch(*gpu, 0, ptrs, caps, lens, toks, pos, lg.data()),
            LS_ERR_EMPTY_SEQUENCE);
  toks[1] = 300;
  EXPECT_EQ(cu::step_batch(*gpu, 2, ptrs, caps, lens, toks, pos, lg.data()),
            LS_ERR_TOKEN);
  toks[1] = 2;
  pos[1] = 24;
  EXPECT_EQ(cu::step_batch(*gpu, 2, ptrs, caps, lens, toks, pos, lg.data()),
            LS_ERR_POSITION);
  pos[1] = 1;
  EXPECT_EQ(cu::step_batch(*gpu, 2, ptrs, caps, lens, toks, pos, lg.data()),
            LS_ERR_CACHE_LENGTH);
  pos[1] = 0;
  caps[0] = row - 1;
  EXPECT_EQ(cu::step_batch(*gpu, 2, ptrs, caps, lens, toks, pos, lg.data()),
            LS_ERR_CACHE_LENGTH);
  caps[0] = a.size();
  EXPECT_TRUE(BytesEqual(a, a0)) << "a failed batch wrote a cache";
  ptrs[2] = a.data();
  caps[2] = a.size();
  EXPECT_THROW(cu::step_batch(*gpu, 3, ptrs, caps, lens, toks, pos, lg.data()),
               lockstep::Error);
  // More members than max_prefix (4) rows of scratch.
  std::vector<std::vector<float>> many(5, std::vector<float>(row));
  float* mp[5];
  size_t mc[5], ml[5] = {0, 0, 0, 0, 0};
  int32_t mt[5] = {1, 2, 3, 4, 5}, mpos[5] = {0, 0, 0, 0, 0};
  for (int i = 0; i < 5; ++i) mp[i] = many[size_t(i)].data(), mc[i] = row;
  std::vector<float> ml5(5 * V);
  EXPECT_EQ(cu::step_batch(*gpu, 5, mp, mc, ml, mt, mpos, ml5.data()),
            LS_ERR_SCRATCH);
  EXPECT_EQ(cu::step_batch(*gpu, 2, ptrs, caps, lens, toks, pos, lg.data(), st),
            LS_OK);
  EXPECT_EQ(st[0], LS_OK);
  EXPECT_EQ(st[1], LS_OK);
}

// The full-size random 124M: batches of 8 and 32 members (prompts of 0 to
// 96 tokens, so every batched step mixes positions), 12 batched steps,
// every member's logits at every step and its whole cache against the
// member alone on the GPU and on the CPU engine.
TEST(CudaBatch_124M, Batches8And32BytesEqualAloneAndTheCpuEngine) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const auto w = lockstep::random_gpt2_weights(c, 124);
  const int threads =
      int(std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
  auto cpu = make_gpt2_backend("cpu", c, w.data(), w.size(), threads, 128);
  auto gpu = Cuda(c, w, 128);
  BatchCounts n;
  for (int B : {8, 32}) {
    ExpectBatchEqualsAlone(*gpu, {cpu.get()}, c, B, 12, 97, 1000 + uint64_t(B),
                           "124M", &n);
  }
  std::printf(
      "cuda batches 124M: %zu logits compared, %zu differ; %zu cache "
      "words compared, %zu differ\n",
      n.logits, n.logits_differ, n.words, n.words_differ);
}

// The cost-of-exactness variant (cuda_fast, LOCKSTEP_CUDA_FAST) is real:
// its logits differ from the exact backend's (which equal the
// reference's), and stay close (relative 2-norm under 1e-4).
TEST(CudaFast, DiffersFromTheExactBackendButIsClose) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {509, 40, 192, 3, 2};
  const auto w = lockstep::random_gpt2_weights(c, 77);
  auto exact = Cuda(c, w);
  auto fast = lockstep::backends::cuda_fast::make_cuda_backend(
      c, w.data(), w.size(), 0, LS_GPT2_LAYOUT_PLAIN);
  auto ref = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
  const auto tokens = RandomTokens(c, c.n_ctx, 77);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> ce(ls_gpt2_cache_floats(&c)), cf(ce.size()), cr(ce.size());
  std::vector<float> le(V), lf(V), lr(V);
  size_t differ = 0, compared = 0;
  double num = 0, den = 0;
  for (int p = 0; p < c.n_ctx; ++p) {
    const size_t len = size_t(p) * row;
    ASSERT_EQ(
        exact->step(ce.data(), ce.size(), len, tokens[size_t(p)], p, le.data()),
        LS_OK);
    ASSERT_EQ(
        fast->step(cf.data(), cf.size(), len, tokens[size_t(p)], p, lf.data()),
        LS_OK);
    ASSERT_EQ(
        ref->step(cr.data(), cr.size(), len, tokens[size_t(p)], p, lr.data()),
        LS_OK);
    EXPECT_TRUE(BytesEqual(le, lr)) << "exact vs reference at " << p;
    differ += CountDifferent(le.data(), lf.data(), V);
    compared += V;
    for (size_t i = 0; i < V; ++i) {
      const double d = double(lf[i]) - double(le[i]);
      num += d * d;
      den += double(le[i]) * double(le[i]);
    }
  }
  const double rel = std::sqrt(num / den);
  std::printf(
      "cuda fast variant (%s): %zu of %zu logits differ from the "
      "exact backend's; relative 2-norm %.3g\n",
      fast->name().c_str(), differ, compared, rel);
  EXPECT_GT(differ, size_t(0)) << "the fast variant computes the exact bits";
  EXPECT_LT(rel, 1e-4);
}

// Seeded random int8 models (n_embd 64-192: 1 to 3 groups per row, head
// widths 16 and 64; vocabularies and contexts whose last §7.6 panel has an
// odd width, so its words are not 4-byte aligned; 70 positions: more than
// one 8-position block of the batched product): cached steps, full passes
// and chunked prefills, every logit and cache word against the int8
// reference.
TEST(CudaQ8, SmallConfigsBytesEqualToTheInt8Reference) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config configs[] = {
      {300, 24, 64, 4, 2},   // D = 16
      {257, 70, 128, 2, 2},  // D = 64, last vocabulary panel 1 wide
      {131, 37, 192, 3, 1},  // G = 3, wpe's panel 37 wide
      {97, 20, 64, 1, 3},    // one head, three layers
  };
  uint64_t seed = 800;
  for (const auto& c : configs) {
    const auto w = lockstep::random_gpt2_weights(c, ++seed);
    const auto tokens = RandomTokens(c, c.n_ctx, seed);
    auto p = MakeQ8(c, w.data(), 16);
    const std::string what =
        p.gpu->name() + " n_embd " + std::to_string(c.n_embd);
    const std::vector<int> prefixes = {1, 2, 9, std::min(16, c.n_ctx)};
    const Trace want = RunTrace(*p.ref, c, tokens, prefixes);
    ExpectSameTrace(RunTrace(*p.gpu, c, tokens, prefixes), want, what);
    ExpectChunkedPrefillEqualsSteps(*p.gpu, c, tokens, 16, want, what);
  }
}

// Hugging Face's fixture quantized: every position of both cases, cached,
// full and prefilled.
TEST(CudaQ8, HfFixtureEveryPositionBytesEqualToTheInt8Reference) {
  SKIP_WITHOUT_DEVICE();
  const std::string dir = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(dir);
  std::ifstream in(dir + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  ASSERT_EQ(cases.size(), 2u);
  auto p = MakeQ8(w.config, w.data(), 0);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const std::vector<int32_t> ids = cases[ci]["input_ids"];
    std::vector<int> prefixes;
    for (int i = 1; i <= int(ids.size()); ++i) prefixes.push_back(i);
    const std::string what = p.gpu->name() + " case " + std::to_string(ci);
    const Trace want = RunTrace(*p.ref, w.config, ids, prefixes);
    ExpectSameTrace(RunTrace(*p.gpu, w.config, ids, prefixes), want, what);
    ExpectChunkedPrefillEqualsSteps(*p.gpu, w.config, ids, int(ids.size()),
                                    want, what);
  }
}

// The status codes of the int8 entries, and §7.2 step 1: a projection
// input that is not finite (ln_1's gains at 3e38 make LayerNorm overflow)
// gives status 10 from the step, the full pass and the prefill, as the
// reference does.
TEST(CudaQ8, StatusCodesAndNonFiniteInputsAreTheReferences) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {50, 8, 64, 2, 1};
  const auto w = lockstep::random_gpt2_weights(c, 5);
  auto p = MakeQ8(c, w.data(), 4);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(50 * 8);
  EXPECT_EQ(p.gpu->step(cache.data(), cache.size(), 0, 50, 0, logits.data()),
            LS_ERR_TOKEN);
  EXPECT_EQ(p.gpu->step(cache.data(), cache.size(), row, 1, 0, logits.data()),
            LS_ERR_CACHE_LENGTH);
  EXPECT_EQ(
      p.gpu->step(cache.data(), cache.size(), 8 * row, 1, 8, logits.data()),
      LS_ERR_POSITION);
  const int32_t toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(p.gpu->infer(toks, 0, logits.data()), LS_ERR_EMPTY_SEQUENCE);
  EXPECT_EQ(p.gpu->infer(toks, 9, logits.data()), LS_ERR_SEQUENCE_TOO_LONG);
  EXPECT_EQ(p.gpu->infer(toks, 5, logits.data()), LS_ERR_SCRATCH);
  EXPECT_EQ(p.gpu->infer(toks, 4, logits.data()), LS_OK);
  EXPECT_EQ(p.gpu->prefill(cache.data(), cache.size(), 0, toks, 5, 0, false,
                           logits.data()),
            LS_ERR_SCRATCH);
  EXPECT_THROW(lockstep::backends::make_cuda_q8_backend(c, p.q8.data(),
                                                        p.q8.size() - 1, 0),
               lockstep::Error);
  const ls_gpt2_config odd = {50, 8, 40, 2, 1};  // n_embd not a multiple of 64
  EXPECT_THROW(
      lockstep::backends::make_cuda_q8_backend(odd, p.q8.data(), 1000, 0),
      lockstep::Error);

  auto bad = w;
  const ls_gpt2_block b = ls_gpt2_block_offsets(&c, 0);
  for (int i = 0; i < c.n_embd; ++i) bad[b.ln1_g + size_t(i)] = 3e38f;
  auto q = MakeQ8(c, bad.data(), 4);
  EXPECT_EQ(q.ref->step(cache.data(), cache.size(), 0, 5, 0, logits.data()),
            LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(q.gpu->step(cache.data(), cache.size(), 0, 5, 0, logits.data()),
            LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(q.gpu->infer(toks, 2, logits.data()), LS_ERR_OUTPUT_NONFINITE);
  EXPECT_EQ(q.gpu->prefill(cache.data(), cache.size(), 0, toks, 3, 0, true,
                           logits.data()),
            LS_ERR_OUTPUT_NONFINITE);
  // The same backend computes finite inputs afterwards (the flag is reset).
  EXPECT_EQ(p.gpu->step(cache.data(), cache.size(), 0, 5, 0, logits.data()),
            LS_OK);
}

// Full-size GPT-2 124M, random weights quantized, against the int8
// reference (scalar, so fewer positions than the binary32 test): 64 cached
// steps (every logit and cache word), one prefill of the same 64 tokens
// (every position's logits and the cache), full passes over 1, 33 and 64
// tokens, and a prefill of 40 positions then 24 steps in a second buffer.
TEST(CudaQ8_124M, BytesEqualToTheInt8Reference) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const auto w = lockstep::random_gpt2_weights(c, 124);
  const int n = 64;
  const auto tokens = RandomTokens(c, n, 1240);
  auto p = MakeQ8(c, w.data(), 512);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  size_t logits_compared = 0, logits_differ = 0;
  size_t words_compared = 0, words_differ = 0;
  auto compare = [&](const float* got, const float* want, size_t k, bool lg,
                     const std::string& what) {
    const size_t d = CountDifferent(got, want, k);
    (lg ? logits_compared : words_compared) += k;
    (lg ? logits_differ : words_differ) += d;
    EXPECT_TRUE(BytesEqual(got, want, k)) << what << " (" << d << " differ)";
  };
  const Trace want = RunTrace(*p.ref, c, tokens, {1, 33, 64});
  const Trace got = RunTrace(*p.gpu, c, tokens, {1, 33, 64});
  for (int t = 0; t < n; ++t) {
    compare(got.step_logits[size_t(t)].data(),
            want.step_logits[size_t(t)].data(), V, true,
            "step logits at " + std::to_string(t));
  }
  compare(got.cache.data(), want.cache.data(), want.cache.size(), false,
          "cache after 64 steps");
  for (size_t i = 0; i < want.infer_logits.size(); ++i) {
    compare(got.infer_logits[i].data(), want.infer_logits[i].data(), V, true,
            "full pass " + std::to_string(i));
  }
  std::vector<float> cache(size_t(n) * row, NAN), logits(size_t(n) * V);
  ASSERT_EQ(p.gpu->prefill(cache.data(), cache.size(), 0, tokens.data(), n, 0,
                           true, logits.data()),
            LS_OK);
  for (int t = 0; t < n; ++t) {
    compare(logits.data() + size_t(t) * V, want.step_logits[size_t(t)].data(),
            V, true, "prefill logits at " + std::to_string(t));
  }
  compare(cache.data(), want.cache.data(), cache.size(), false,
          "cache after the prefill");
  std::vector<float> mixed(size_t(n) * row, NAN);
  ASSERT_EQ(p.gpu->prefill(mixed.data(), mixed.size(), 0, tokens.data(), 40, 0,
                           false, logits.data()),
            LS_OK);
  compare(logits.data(), want.step_logits[39].data(), V, true,
          "prefill of 40, last logits");
  for (int t = 40; t < n; ++t) {
    ASSERT_EQ(p.gpu->step(mixed.data(), mixed.size(), size_t(t) * row,
                          tokens[size_t(t)], t, logits.data()),
              LS_OK);
    compare(logits.data(), want.step_logits[size_t(t)].data(), V, true,
            "step after the prefill at " + std::to_string(t));
  }
  compare(mixed.data(), want.cache.data(), mixed.size(), false,
          "cache after prefill and steps");
  std::printf(
      "cuda int8 124M: %zu logits compared, %zu differ; %zu cache words "
      "compared, %zu differ (%s vs %s)\n",
      logits_compared, logits_differ, words_compared, words_differ,
      p.gpu->name().c_str(), p.ref->name().c_str());
}

// ------------------------------------------------------------- trained

// The shipped trained model (models/shakespeare-gpt2, n_embd 128, 4
// layers, the full vocabulary): its prompts from reference.json followed
// by seeded random tokens, 256 positions; binary32 against the CPU engine
// and the reference, and quantized to int8 against the int8 reference:
// cached steps, full passes and chunked prefills.
TEST(CudaTrained, ShakespeareBytesEqualToTheCpuInBinary32AndInt8) {
  SKIP_WITHOUT_DEVICE();
  const std::string dir = LOCKSTEP_SOURCE_DIR "/models/shakespeare-gpt2";
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(dir);
  const ls_gpt2_config& c = w.config;
  std::ifstream in(dir + "/reference.json");
  const auto ref_json = nlohmann::json::parse(in);
  std::vector<int32_t> tokens;
  for (const auto& pr : ref_json["prompts"]) {
    for (int id : pr["input_ids"]) tokens.push_back(id);
  }
  ASSERT_GT(tokens.size(), 3u);
  const auto fill = RandomTokens(c, 256, 2026);
  for (size_t i = tokens.size(); i < 256; ++i) tokens.push_back(fill[i]);
  const std::vector<int> prefixes = {1, 3, 64, 255, 256};

  auto cpu = make_gpt2_backend("cpu", c, w.data(), w.words(), 2, 256);
  auto ref = make_gpt2_backend("reference", c, w.data(), w.words(), 1, 0);
  auto gpu = make_gpt2_backend("cuda", c, w.data(), w.words(), 1, 256);
  const Trace want = RunTrace(*cpu, c, tokens, prefixes);
  const std::vector<int32_t> head(tokens.begin(), tokens.begin() + 16);
  ExpectSameTrace(RunTrace(*ref, c, head, {16}), RunTrace(*gpu, c, head, {16}),
                  "trained: reference vs cuda");
  ExpectSameTrace(RunTrace(*gpu, c, tokens, prefixes), want,
                  "trained binary32: cuda vs " + cpu->name());
  ExpectChunkedPrefillEqualsSteps(*gpu, c, tokens, 64, want,
                                  "trained binary32 prefill");

  auto p = MakeQ8(c, w.data(), 256);
  const Trace want8 = RunTrace(*p.ref, c, tokens, prefixes);
  ExpectSameTrace(RunTrace(*p.gpu, c, tokens, prefixes), want8,
                  "trained int8: " + p.gpu->name());
  ExpectChunkedPrefillEqualsSteps(*p.gpu, c, tokens, 64, want8,
                                  "trained int8 prefill");
  std::printf(
      "cuda trained model: %zu positions x %d logits, binary32 and "
      "int8, cached/full/prefill compared\n",
      tokens.size(), c.n_vocab);
}

}  // namespace
