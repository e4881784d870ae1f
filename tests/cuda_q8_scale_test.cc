// The CUDA int8 backend (make_cuda_q8_backend, docs/cuda.md) against the
// CPU int8 engine (make_gpt2_q8_backend "cpu": the fast CPU backend with
// its int8 kernels, itself checked against the int8 reference by
// gpt2_q8_backend_test) on the full-size random 124M, at the scale of the
// binary32 test (CudaGpt2_124M in cuda_backend_test.cc, issue 10): 128
// contexts, every logit and cache word, and the end of a 1,024-token
// context. Linked into cuda_backend_test (built only with LOCKSTEP_CUDA);
// skips where no CUDA device is found.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "ls_gpt2.h"
#include "ls_gpt2_q8.h"
#include "tests/cuda_test_util.h"
#include "tests/gpt2_test_util.h"

namespace {

using lockstep::Gpt2Backend;
using lockstep::test::BytesEqual;
using lockstep::test::CountDifferent;
using lockstep::test::RandomTokens;

// Wall seconds spent in one backend's calls.
class Clock {
 public:
  template <typename F>
  auto operator()(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    return r;
  }
  double seconds() const { return seconds_; }

 private:
  double seconds_ = 0;
};

// Full-size GPT-2 124M, seeded random weights quantized to grouped int8,
// against the CPU int8 engine on every core, with the int8 reference's
// first steps as an anchor:
//  (a) cached steps at positions 0..127: 128 contexts, every logit
//      (6,432,896) and every cache word (2,359,296);
//  (b) one prefill of the same 128 tokens, every position's logits and
//      the cache, against (a)'s;
//  (c) full-prefix passes over every length 1..128, against (a)'s logits,
//      and at 1, 2, 17, 64, 127 and 128 against the CPU engine's passes;
//  (d) prefill of positions 0..1019 in chunks of 512 (max_prefix), then
//      steps at 1020..1023: the logits of each call and the cache words of
//      all 1,024 positions.
// Counts of what was compared (20,052,543 logits, 23,648,256 cache words)
// and of mismatches are printed, and the wall time of each side.
TEST(CudaQ8_124M, BytesEqualToTheCpuInt8EngineAtScale) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const std::vector<uint8_t> q8 = lockstep::quantize_gpt2_q8(
      c, lockstep::random_gpt2_weights(c, 124).data());
  ASSERT_EQ(q8.size(), ls_gpt2_q8_bytes(&c));
  const auto tokens = RandomTokens(c, c.n_ctx, 1241);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  const int threads =
      int(std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
  const int max_prefix = 512;
  auto cpu = lockstep::make_gpt2_q8_backend("cpu", c, q8.data(), q8.size(),
                                            threads, max_prefix);
  auto gpu = lockstep::backends::make_cuda_q8_backend(c, q8.data(), q8.size(),
                                                      max_prefix);
  Clock cpu_time, gpu_time;
  size_t logits_compared = 0, logits_differ = 0;
  size_t words_compared = 0, words_differ = 0;
  auto compare = [&](const float* got, const float* want, size_t n, bool logits,
                     const std::string& what) {
    const size_t d = CountDifferent(got, want, n);
    (logits ? logits_compared : words_compared) += n;
    (logits ? logits_differ : words_differ) += d;
    EXPECT_TRUE(BytesEqual(got, want, n)) << what << " (" << d << " differ)";
  };

  // The anchor: the int8 reference's first 3 steps (core/ls_gpt2_q8.c,
  // about 0.1 s a position).
  {
    auto ref = lockstep::make_gpt2_q8_backend("reference", c, q8.data(),
                                              q8.size(), 1, 4);
    std::vector<float> rc(3 * row), gc(3 * row), rl(V), gl(V);
    for (int p = 0; p < 3; ++p) {
      ASSERT_EQ(ref->step(rc.data(), rc.size(), size_t(p) * row,
                          tokens[size_t(p)], p, rl.data()),
                LS_OK);
      ASSERT_EQ(gpu->step(gc.data(), gc.size(), size_t(p) * row,
                          tokens[size_t(p)], p, gl.data()),
                LS_OK);
      compare(gl.data(), rl.data(), V, true,
              "int8 reference step " + std::to_string(p));
    }
    compare(gc.data(), rc.data(), rc.size(), false, "int8 reference cache");
  }

  // (a) 128 cached steps.
  const int n = 128;
  // The CPU's buffers start at zeros, the GPU's at NaN: a row either side
  // left unwritten differs.
  std::vector<float> cpu_cache(size_t(n) * row, 0.0f);
  std::vector<float> gpu_cache(size_t(n) * row, NAN);
  std::vector<float> cpu_logits(size_t(n) * V), gpu_logits(size_t(n) * V);
  for (int p = 0; p < n; ++p) {
    ASSERT_EQ(cpu_time([&] {
                return cpu->step(cpu_cache.data(), cpu_cache.size(),
                                 size_t(p) * row, tokens[size_t(p)], p,
                                 cpu_logits.data() + size_t(p) * V);
              }),
              LS_OK)
        << "cpu step at " << p;
    ASSERT_EQ(gpu_time([&] {
                return gpu->step(gpu_cache.data(), gpu_cache.size(),
                                 size_t(p) * row, tokens[size_t(p)], p,
                                 gpu_logits.data() + size_t(p) * V);
              }),
              LS_OK)
        << "cuda step at " << p;
  }
  for (int p = 0; p < n; ++p) {
    compare(gpu_logits.data() + size_t(p) * V,
            cpu_logits.data() + size_t(p) * V, V, true,
            "step logits at " + std::to_string(p));
  }
  compare(gpu_cache.data(), cpu_cache.data(), gpu_cache.size(), false,
          "cache after 128 steps");

  // (b) one prefill of 128, every position.
  std::vector<float> pre_cache(size_t(n) * row, NAN), pre_logits(size_t(n) * V);
  ASSERT_EQ(gpu_time([&] {
              return gpu->prefill(pre_cache.data(), pre_cache.size(), 0,
                                  tokens.data(), n, 0, true, pre_logits.data());
            }),
            LS_OK);
  for (int p = 0; p < n; ++p) {
    compare(pre_logits.data() + size_t(p) * V,
            cpu_logits.data() + size_t(p) * V, V, true,
            "prefill logits at " + std::to_string(p));
  }
  compare(pre_cache.data(), cpu_cache.data(), pre_cache.size(), false,
          "cache after the prefill");

  // (c) full-prefix passes over every length, against the CPU engine's
  // cached steps; and at the binary32 test's lengths against the CPU
  // engine's own pass too.
  std::vector<float> logits(V), cpu_pass(V);
  for (int k = 1; k <= n; ++k) {
    ASSERT_EQ(
        gpu_time([&] { return gpu->infer(tokens.data(), k, logits.data()); }),
        LS_OK)
        << "cuda infer over " << k;
    compare(logits.data(), cpu_logits.data() + size_t(k - 1) * V, V, true,
            "infer over " + std::to_string(k));
    if (k == 1 || k == 2 || k == 17 || k == 64 || k == 127 || k == 128) {
      ASSERT_EQ(cpu_time([&] {
                  return cpu->infer(tokens.data(), k, cpu_pass.data());
                }),
                LS_OK)
          << "cpu infer over " << k;
      compare(logits.data(), cpu_pass.data(), V, true,
              "infer over " + std::to_string(k) + " against the cpu's pass");
    }
  }

  // (d) the end of the context: prefill in chunks of max_prefix, then
  // steps to the last position.
  std::vector<float> cpu_full(ls_gpt2_cache_floats(&c), 0.0f);
  std::vector<float> gpu_full(ls_gpt2_cache_floats(&c), NAN);
  ASSERT_EQ(cpu_full.size(), size_t(c.n_ctx) * row);
  std::vector<float> cl(V), gl(V);
  for (int pos = 0; pos < 1020;) {
    const int k = std::min(max_prefix, 1020 - pos);
    ASSERT_EQ(cpu_time([&] {
                return cpu->prefill(cpu_full.data(), cpu_full.size(),
                                    size_t(pos) * row, tokens.data() + pos, k,
                                    pos, false, cl.data());
              }),
              LS_OK)
        << "cpu prefill at " << pos;
    ASSERT_EQ(gpu_time([&] {
                return gpu->prefill(gpu_full.data(), gpu_full.size(),
                                    size_t(pos) * row, tokens.data() + pos, k,
                                    pos, false, gl.data());
              }),
              LS_OK)
        << "cuda prefill at " << pos;
    compare(gl.data(), cl.data(), V, true,
            "prefill chunk ending at " + std::to_string(pos + k - 1));
    pos += k;
  }
  for (int p = 1020; p < c.n_ctx; ++p) {
    ASSERT_EQ(cpu_time([&] {
                return cpu->step(cpu_full.data(), cpu_full.size(),
                                 size_t(p) * row, tokens[size_t(p)], p,
                                 cl.data());
              }),
              LS_OK)
        << "cpu step at " << p;
    ASSERT_EQ(gpu_time([&] {
                return gpu->step(gpu_full.data(), gpu_full.size(),
                                 size_t(p) * row, tokens[size_t(p)], p,
                                 gl.data());
              }),
              LS_OK)
        << "cuda step at " << p;
    compare(gl.data(), cl.data(), V, true, "step at " + std::to_string(p));
  }
  compare(gpu_full.data(), cpu_full.data(), gpu_full.size(), false,
          "cache of 1,024 positions");

  std::printf(
      "cuda int8 124M vs cpu: %zu logits compared, %zu differ; %zu cache "
      "words compared, %zu differ (%s vs %s; wall %.1f s cpu, %.1f s cuda)\n",
      logits_compared, logits_differ, words_compared, words_differ,
      gpu->name().c_str(), cpu->name().c_str(), cpu_time.seconds(),
      gpu_time.seconds());
  // What the parts above compare (V = 50,257 logits, 18,432 words a row):
  // 3 + 128 + 128 + 128 + 6 + 2 + 4 = 399 rows of logits; 3 + 128 + 128 +
  // 1,024 = 1,283 rows of cache words.
  EXPECT_EQ(logits_compared, 399 * V);    // 20,052,543
  EXPECT_EQ(words_compared, 1283 * row);  // 23,648,256
}

}  // namespace
