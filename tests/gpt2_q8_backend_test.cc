// The CPU backend on grouped int8 weights (docs/arithmetic.md §7,
// backends/cpu/q8_kernels.h) against the int8 reference (core/ls_q8.c,
// core/ls_gpt2_q8.c), byte for byte:
//  - the kernels of every int8 table this machine runs (x86-64: generic,
//    avx2, avx512-vnni; AArch64: generic, neon, and neon-sdot where the
//    dotprod extension is): the quantization of seeded random inputs
//    (ties, all-zero and tiny groups included) and the panel product for
//    1 .. 9 positions, full and narrow panels;
//  - the backend on every ISA and thread count (1, 2, 3, 4, 8, or the list
//    in LOCKSTEP_Q8_TEST_THREADS): cached steps, full passes, chunked
//    prefills with every position's logits, and the cache words, on random
//    models and the Hugging Face fixture;
//  - a non-finite projection input gives the reference's status.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/q8_kernels.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lockstep/error.h"
#include "ls_gpt2.h"
#include "ls_gpt2_q8.h"
#include "ls_q8.h"
#include "tests/gpt2_test_util.h"

#if defined(__x86_64__)
namespace lockstep::cpu {
// backends/cpu/q8_kernels_amx.cc with its tile instructions in scalar code
// (tests/q8_kernels_amx_emulated.cc): the AMX table's tiling, tails and
// rescale checked on AVX-512 machines without AMX.
const CpuQ8Kernels& q8_kernels_amx_emulated();
}  // namespace lockstep::cpu
#endif

namespace {

using namespace lockstep;        // NOLINT
using namespace lockstep::test;  // NOLINT
using cpu::CpuQ8Kernels;

const std::string kHf = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";

// Every int8 table this machine can run (cpu::q8_kernels_runnable), and
// the emulated AMX table where AVX-512 VNNI is.
std::vector<const CpuQ8Kernels*> Tables() {
  std::vector<const CpuQ8Kernels*> out = cpu::q8_kernels_runnable();
#if defined(__x86_64__)
  if (cpu::q8_kernels_named("avx512-vnni")) {
    out.push_back(&cpu::q8_kernels_amx_emulated());
  }
#endif
  return out;
}

// The thread counts of the backend tests: kThreadCounts, or the list in
// LOCKSTEP_Q8_TEST_THREADS (e.g. "1,2": scripts/test-arm64.sh under qemu).
std::vector<int> ThreadCounts() {
  const char* env = std::getenv("LOCKSTEP_Q8_TEST_THREADS");
  if (!env || !*env)
    return {std::begin(kThreadCounts), std::end(kThreadCounts)};
  std::vector<int> out;
  const std::string list = env;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, end - at);
    int v = 0;
    bool ok = !item.empty() && item.size() <= 3;
    for (char ch : item) ok = ok && ch >= '0' && ch <= '9';
    if (ok) v = std::stoi(item);
    if (!ok || v < 1 || v > 64) {
      ADD_FAILURE() << "LOCKSTEP_Q8_TEST_THREADS=\"" << list
                    << "\": want thread counts 1..64 separated by commas";
      return {1};
    }
    out.push_back(v);
    at = end + 1;
  }
  return out;
}

::testing::AssertionResult SameBytes(const void* got, const void* want,
                                     size_t n) {
  if (std::memcmp(got, want, n) == 0) return ::testing::AssertionSuccess();
  const auto* a = static_cast<const uint8_t*>(got);
  const auto* b = static_cast<const uint8_t*>(want);
  size_t i = 0;
  while (a[i] == b[i]) ++i;
  return ::testing::AssertionFailure()
         << "first difference at byte " << i << " of " << n << ": got 0x"
         << std::hex << int(a[i]) << ", want 0x" << int(b[i]);
}

// Inputs with every case of §7.2 in it: normal values of mixed scales, a
// group of zeros, a group whose scale underflows to subnormal or zero,
// exact ties r = k + 0.5 and the largest magnitude of either sign.
std::vector<float> QuantizeInput(int K, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(K));
  for (int g = 0; g < K / 64; ++g) {
    float* v = x.data() + g * 64;
    const float scale = std::ldexp(1.0f, int(rng() % 40) - 20);
    for (int i = 0; i < 64; ++i) v[i] = u(rng) * scale;
    switch (g % 5) {
      case 1:
        for (int i = 0; i < 64; ++i) v[i] = 0.0f;
        v[7] = -0.0f;
        break;
      case 2:  // m / 127 subnormal (1e-40) or zero (1e-45)
        for (int i = 0; i < 64; ++i) v[i] = (i % 2 ? 1e-40f : -1e-45f);
        break;
      case 3:  // m = 127: r = v exactly, with halves at every level
        v[0] = -127.0f;
        for (int i = 1; i < 64; ++i)
          v[i] = float(int(rng() % 253) - 126) + 0.5f;
        break;
      default:
        break;
    }
  }
  return x;
}

#if defined(__aarch64__)
TEST(Q8Kernels, NeonTakesSdotOnlyWithTheDotprodExtension) {
  // Under qemu-aarch64's default CPU (which has dotprod) the sdot table;
  // under -cpu cortex-a53 (which has not) the plain one.
  ASSERT_TRUE(cpu::isa_supported("neon"));
  const CpuQ8Kernels* k = cpu::q8_kernels_for("neon");
  ASSERT_NE(nullptr, k);
  EXPECT_STREQ(cpu::q8_kernels_neon_has_sdot() ? "neon-sdot" : "neon", k->isa);
  std::printf("neon int8 table: %s\n", k->isa);
}
#endif

TEST(Q8Kernels, TablesFollowTheCpuAndTheVariable) {
  // The defaults first, with $LOCKSTEP_Q8_KERNELS unset (restored at the
  // end).
  const char* old = std::getenv("LOCKSTEP_Q8_KERNELS");
  const std::string saved = old ? old : "";
  unsetenv("LOCKSTEP_Q8_KERNELS");
  std::string names;
  for (const CpuQ8Kernels* k : Tables()) names += std::string(" ") + k->isa;
  std::printf("int8 tables checked here:%s\n", names.c_str());
  EXPECT_EQ(&cpu::q8_kernels_generic(), cpu::q8_kernels_named("generic"));
  EXPECT_EQ(nullptr, cpu::q8_kernels_named("avx9"));
#if defined(__x86_64__)
  if (cpu::isa_supported("avx2")) {
    const bool vnni = __builtin_cpu_supports("avxvnni");
    EXPECT_STREQ(vnni ? "avx-vnni" : "avx2", cpu::q8_kernels_for("avx2")->isa);
    EXPECT_EQ(vnni, cpu::q8_kernels_named("avx-vnni") != nullptr);
  }
  if (cpu::isa_supported("avx512") && __builtin_cpu_supports("avx512vnni")) {
    EXPECT_STREQ(cpu::q8_amx_usable() ? "amx" : "avx512-vnni",
                 cpu::q8_kernels_for("avx512")->isa);
  }
  std::printf("AMX-INT8 usable: %s\n", cpu::q8_amx_usable() ? "yes" : "no");
#endif
  // $LOCKSTEP_Q8_KERNELS: the named table whatever the ISA, a name this
  // CPU cannot run refused.
  setenv("LOCKSTEP_Q8_KERNELS", "generic", 1);
  for (const std::string& isa : cpu::supported_isas()) {
    EXPECT_STREQ("generic", cpu::q8_kernels_for(isa)->isa) << isa;
  }
  setenv("LOCKSTEP_Q8_KERNELS", "avx9", 1);
  for (const std::string& isa : cpu::supported_isas()) {
    EXPECT_EQ(nullptr, cpu::q8_kernels_for(isa)) << isa;
  }
  old ? setenv("LOCKSTEP_Q8_KERNELS", saved.c_str(), 1)
      : unsetenv("LOCKSTEP_Q8_KERNELS");
}

TEST(Q8Kernels, QuantizeIsTheReferences) {
  for (const CpuQ8Kernels* k : Tables()) {
    SCOPED_TRACE(k->isa);
    for (int K : {64, 768, 3072}) {
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        const std::vector<float> x = QuantizeInput(K, seed * 31 + size_t(K));
        std::vector<int8_t> q(static_cast<size_t>(K), 99),
            want_q(size_t(K), 98);
        std::vector<float> s(size_t(K / 64), -1.0f), want_s(size_t(K / 64));
        ASSERT_EQ(LS_OK,
                  ls_q8_quantize(x.data(), K, want_q.data(), want_s.data()));
        ASSERT_TRUE(k->quantize(x.data(), K, q.data(), s.data()));
        EXPECT_TRUE(SameBytes(q.data(), want_q.data(), q.size())) << K;
        EXPECT_TRUE(SameBytes(s.data(), want_s.data(), s.size() * 4)) << K;
      }
      // A NaN or an infinity anywhere: false, as the reference's status.
      for (float bad : {NAN, INFINITY, -INFINITY}) {
        std::vector<float> x = QuantizeInput(K, 7);
        x[size_t(K) - 3] = bad;
        std::vector<int8_t> q(static_cast<size_t>(K));
        std::vector<float> s(size_t(K / 64));
        EXPECT_FALSE(k->quantize(x.data(), K, q.data(), s.data()));
        EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE,
                  ls_q8_quantize(x.data(), K, q.data(), s.data()));
      }
    }
  }
}

TEST(Q8Kernels, PanelProductIsTheReferences) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int K : {64, 192, 768}) {
    for (int N : {64, 150}) {  // 150: panels of 64, 64 and 22 columns
      std::vector<float> w(static_cast<size_t>(K) * size_t(N));
      for (auto& v : w) v = u(rng) * 0.3f;
      for (int i = 0; i < N; ++i) w[size_t(i)] = 0.0f;  // a zero group
      std::vector<uint8_t> m(ls_q8_matrix_bytes(size_t(K), size_t(N)));
      ASSERT_EQ(LS_OK, ls_q8_pack(w.data(), size_t(K), size_t(N), size_t(N), 1,
                                  0, size_t(N), m.data()));
      std::vector<float> bias(static_cast<size_t>(N));
      for (auto& v : bias) v = u(rng);
      // Up to 70 positions: the AMX table's full tiles of 16, its tails
      // of 8 .. 15 on the tile unit and of 1 .. 7 on the VNNI table.
      const int P = 70;
      std::vector<int8_t> q(static_cast<size_t>(P) * size_t(K));
      std::vector<float> s(static_cast<size_t>(P) * size_t(K / 64));
      for (int t = 0; t < P; ++t) {
        const std::vector<float> x = QuantizeInput(K, uint64_t(100 + t));
        ASSERT_EQ(LS_OK, ls_q8_quantize(x.data(), K, q.data() + t * K,
                                        s.data() + t * (K / 64)));
      }
      std::vector<float> want(static_cast<size_t>(P) * size_t(N));
      for (int t = 0; t < P; ++t) {
        ls_q8_matvec(q.data() + t * K, s.data() + t * (K / 64), m.data(), K, N,
                     bias.data(), want.data() + t * N);
      }
      std::vector<float> nobias(static_cast<size_t>(N));
      ls_q8_matvec(q.data(), s.data(), m.data(), K, N, nullptr, nobias.data());
      const size_t panel = 64 * size_t(K + 2 * (K / 64));
      for (const CpuQ8Kernels* k : Tables()) {
        SCOPED_TRACE(std::string(k->isa) + " K=" + std::to_string(K) +
                     " N=" + std::to_string(N));
        for (int n : {1,  2,  3,  4,  5,  6,  7,  8,  9,  15, 16,
                      17, 23, 24, 31, 32, 33, 40, 47, 64, 70}) {
          std::vector<float> y(static_cast<size_t>(n) * size_t(N), NAN);
          for (int o0 = 0; o0 < N; o0 += 64) {
            k->panel(q.data(), size_t(K), s.data(), size_t(K / 64), n,
                     m.data() + size_t(o0 / 64) * panel, K,
                     std::min(64, N - o0), bias.data() + o0, y.data() + o0,
                     size_t(N));
          }
          EXPECT_TRUE(BytesEqual(y.data(), want.data(), y.size())) << n;
        }
        std::vector<float> y(static_cast<size_t>(N), NAN);
        for (int o0 = 0; o0 < N; o0 += 64) {
          k->panel(q.data(), size_t(K), s.data(), size_t(K / 64), 1,
                   m.data() + size_t(o0 / 64) * panel, K, std::min(64, N - o0),
                   nullptr, y.data() + o0, size_t(N));
        }
        EXPECT_TRUE(BytesEqual(y, nobias)) << "no bias";
      }
    }
  }
}

// ------------------------------------------------------------ backend

struct Model {
  ls_gpt2_config c;
  std::vector<uint8_t> q8;
};

Model RandomModel(const ls_gpt2_config& c, uint64_t seed) {
  const std::vector<float> f = random_gpt2_weights(c, seed);
  return {c, quantize_gpt2_q8(c, f.data())};
}

// A backend whose int8 table is forced by $LOCKSTEP_Q8_KERNELS (empty:
// the ISA's own), the variable restored after.
std::unique_ptr<Gpt2Backend> MakeWithTable(const std::string& name,
                                           const Model& m, int threads,
                                           const std::string& table) {
  if (table.empty()) {
    return make_gpt2_q8_backend(name, m.c, m.q8.data(), m.q8.size(), threads,
                                0);
  }
  struct Restore {  // the variable as it was, also when creation throws
    const char* old = std::getenv("LOCKSTEP_Q8_KERNELS");
    std::string saved = old ? old : "";
    ~Restore() {
      old ? setenv("LOCKSTEP_Q8_KERNELS", saved.c_str(), 1)
          : unsetenv("LOCKSTEP_Q8_KERNELS");
    }
  } restore;
  setenv("LOCKSTEP_Q8_KERNELS", table.c_str(), 1);
  auto b =
      make_gpt2_q8_backend(name, m.c, m.q8.data(), m.q8.size(), threads, 0);
  EXPECT_NE(std::string::npos, b->name().find("int8: " + table + ")"))
      << b->name();
  return b;
}

// The backends to check: "cpu-<isa>" with its own int8 table for every
// ISA, then (unless $LOCKSTEP_Q8_KERNELS forces one table for all) every
// other table this CPU runs, forced, under the ISA whose machines have it.
std::vector<std::pair<std::string, std::string>> BackendsAndTables() {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> seen;
  for (const std::string& isa : cpu::supported_isas()) {
    out.push_back({"cpu-" + isa, ""});
    seen.push_back(cpu::q8_kernels_for(isa)->isa);
  }
  const char* forced = std::getenv("LOCKSTEP_Q8_KERNELS");
  if (forced && *forced) return out;
  for (const CpuQ8Kernels* k : cpu::q8_kernels_runnable()) {
    const std::string name = k->isa;
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    const bool wide = name == "amx" || name == "avx512-vnni";
    const bool narrow = name == "avx2" || name == "avx-vnni";
    const std::string isa = wide ? "avx512" : narrow ? "avx2" : "generic";
    out.push_back({"cpu-" + isa, name});
  }
  return out;
}

// Every "cpu-<isa>" backend and int8 table (BackendsAndTables) and thread
// count against the reference: steps, full passes and the cache
// (RunTrace), and chunked prefills with every position's logits against
// the steps' logits.
void CheckBackends(const Model& m, int n, uint64_t seed) {
  const std::vector<int32_t> tokens = RandomTokens(m.c, n, seed);
  const std::vector<int> prefixes = {1, 2, n / 2 + 1, n};
  auto ref =
      make_gpt2_q8_backend("reference", m.c, m.q8.data(), m.q8.size(), 1, 0);
  const Trace want = RunTrace(*ref, m.c, tokens, prefixes);
  const size_t row = ls_gpt2_cache_row_floats(&m.c), V = size_t(m.c.n_vocab);
  for (const auto& [name, table] : BackendsAndTables()) {
    for (int threads : ThreadCounts()) {
      auto b = MakeWithTable(name, m, threads, table);
      const std::string what = b->name();
      ExpectSameTrace(RunTrace(*b, m.c, tokens, prefixes), want, what);
      // Prefill in chunks of 5 and of 37 (the last shorter; 37 = 2 tiles
      // of 16 and 5 for the AMX table), all positions' logits.
      for (int chunk : {5, 37}) {
        std::vector<float> cache(static_cast<size_t>(n) * row, NAN);
        std::vector<float> logits(static_cast<size_t>(n) * V, NAN);
        for (int t0 = 0; t0 < n; t0 += chunk) {
          const int k = std::min(chunk, n - t0);
          ASSERT_EQ(LS_OK, b->prefill(cache.data(), cache.size(),
                                      size_t(t0) * row, tokens.data() + t0, k,
                                      t0, true, logits.data() + size_t(t0) * V))
              << what;
        }
        for (int t = 0; t < n; ++t) {
          EXPECT_TRUE(BytesEqual(logits.data() + size_t(t) * V,
                                 want.step_logits[size_t(t)].data(), V))
              << what << ": prefill (chunks of " << chunk << ") logits at "
              << t;
        }
        EXPECT_TRUE(BytesEqual(cache, want.cache))
            << what << ": prefill (chunks of " << chunk << ") cache";
      }
    }
  }
}

TEST(Gpt2Q8Cpu, SmallRandomModelEqualsTheReference) {
  CheckBackends(RandomModel({300, 24, 64, 4, 2}, 61), 24, 62);
}

TEST(Gpt2Q8Cpu, LongRandomModelEqualsTheReference) {
  // Two heads of 64: the step's split attention (more than two threads,
  // 128 keys or more) on int8 too.
  CheckBackends(RandomModel({517, 140, 128, 2, 2}, 63), 140, 64);
}

TEST(Gpt2Q8Cpu, HfFixtureEqualsTheReference) {
  const Gpt2Weights w = load_gpt2(kHf);
  const Model m{w.config, quantize_gpt2_q8(w.config, w.data())};
  CheckBackends(m, std::min(40, m.c.n_ctx), 65);
}

TEST(Gpt2Q8Cpu, NonFiniteActivationsGiveTheReferenceStatus) {
  // ln_1's gains at 3e38 make LayerNorm overflow: the c_attn input is not
  // finite (§7.2 step 1), so every entry returns status 10, as the
  // reference does.
  const ls_gpt2_config c{300, 24, 64, 4, 2};
  std::vector<float> f = random_gpt2_weights(c, 66);
  const ls_gpt2_block b = ls_gpt2_block_offsets(&c, 0);
  for (int i = 0; i < c.n_embd; ++i) f[b.ln1_g + size_t(i)] = 3e38f;
  const std::vector<uint8_t> q8 = quantize_gpt2_q8(c, f.data());
  const size_t row = ls_gpt2_cache_row_floats(&c);
  const int32_t tokens[] = {5, 6, 7};
  for (const std::string& isa : cpu::supported_isas()) {
    for (int threads : {1, 3}) {
      auto be = make_gpt2_q8_backend("cpu-" + isa, c, q8.data(), q8.size(),
                                     threads, 0);
      std::vector<float> cache(3 * row), logits(3 * size_t(c.n_vocab));
      EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE,
                be->step(cache.data(), cache.size(), 0, 5, 0, logits.data()))
          << be->name();
      EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE,
                be->prefill(cache.data(), cache.size(), 0, tokens, 3, 0, true,
                            logits.data()))
          << be->name();
      EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE, be->infer(tokens, 3, logits.data()))
          << be->name();
    }
  }
}

TEST(Gpt2Q8Cpu, NamesSayInt8AndTheKernels) {
  const Model m = RandomModel({300, 24, 64, 4, 2}, 67);
  for (const std::string& isa : cpu::supported_isas()) {
    auto b =
        make_gpt2_q8_backend("cpu-" + isa, m.c, m.q8.data(), m.q8.size(), 2, 0);
    EXPECT_NE(std::string::npos, b->name().find("int8: ")) << b->name();
  }
  EXPECT_THROW(
      make_gpt2_q8_backend("reference", m.c, m.q8.data(), m.q8.size(), 2, 0),
      Error);
  EXPECT_THROW(
      make_gpt2_q8_backend("cpu-avx9", m.c, m.q8.data(), m.q8.size(), 1, 0),
      Error);
  EXPECT_THROW(make_gpt2_q8_backend("cpu", m.c, m.q8.data(), m.q8.size(), 0, 0),
               Error);
  // A forced table this CPU cannot run (or that does not exist).
  const char* before = std::getenv("LOCKSTEP_Q8_KERNELS");
  const std::string was = before ? before : "(unset)";
  EXPECT_THROW(MakeWithTable("cpu-generic", m, 1, "avx9"), Error);
  const char* after = std::getenv("LOCKSTEP_Q8_KERNELS");
  EXPECT_EQ(was, after ? after : "(unset)");
}

}  // namespace
