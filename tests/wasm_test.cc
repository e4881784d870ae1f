// Issue 4: the WebAssembly module, run in Node.js through the same client
// as `--backend wasm` (hosts/native/wasm_host.h), returns the native
// engine's bytes: every logit of seeded random inputs for the three tiny
// models, both cases of the Hugging Face fixture, and 8 contexts of a
// full-size 124M with seeded random weights (logits and caches, cached and
// full-prefix); its memory never grows during a session; a module whose
// SHA-256 differs from the recorded one is refused. Issue 8: the module's
// batched prefill gives the bytes of stepping and of the native
// Gpt2Session::prefill, from an empty or a partly filled cache, in chunks,
// last-position and every-position logits, and the cache words. Issue 9:
// the module's int8 entries (docs/arithmetic.md §7) give the native int8
// reference's bytes, cached step, full-prefix and prefill, in both modules.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "formats/sha256.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "lockstep/tiny.h"
#include "ls_sampler.h"
#include "ls_status.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
const std::string kSource = LOCKSTEP_SOURCE_DIR;

// memcmp of two byte ranges; on failure the first differing element (of
// `width` bytes) with both values' bits in hex.
::testing::AssertionResult SameBytes(const void* a, const void* b, size_t bytes,
                                     size_t width) {
  if (bytes == 0 || std::memcmp(a, b, bytes) == 0) {
    return ::testing::AssertionSuccess();
  }
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  for (size_t i = 0; i < bytes; i += width) {
    if (std::memcmp(x + i, y + i, width) != 0) {
      uint64_t u = 0, v = 0;
      std::memcpy(&u, x + i, width);
      std::memcpy(&v, y + i, width);
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "first difference at element %zu: 0x%0*llx (wasm) vs "
                    "0x%0*llx (native)",
                    i / width, int(2 * width), (unsigned long long)u,
                    int(2 * width), (unsigned long long)v);
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionFailure() << "sizes differ";
}

template <class T>
::testing::AssertionResult SameValues(std::span<const T> wasm,
                                      std::span<const T> native) {
  if (wasm.size() != native.size()) {
    return ::testing::AssertionFailure()
           << wasm.size() << " values vs " << native.size();
  }
  return SameBytes(wasm.data(), native.data(), wasm.size() * sizeof(T),
                   sizeof(T));
}

// Seeded random tokens in [0, vocab) (SplitMix64, docs/arithmetic.md §5.1).
std::vector<int32_t> RandomTokens(uint64_t& state, size_t n, int vocab) {
  std::vector<int32_t> t(n);
  for (auto& x : t) x = int32_t(ls_splitmix64_next(&state) % uint64_t(vocab));
  return t;
}

void ExpectMemoryUnchanged(WasmHost& host) {
  const auto m = host.memory();
  EXPECT_EQ(m[0], m[1]) << "the WebAssembly memory grew during the session";
  EXPECT_EQ(m[0] % 65536, 0u);
}

// Every logit of 40 random sequences per tiny model, at random lengths up
// to the context (and the full context), with three weight bounds.
TEST(WasmTiny, EveryLogitOfRandomInputsMatchesNative) {
  uint64_t state = 20240404;
  for (const char* name : {"tiny4", "tiny64", "tiny128"}) {
    SCOPED_TRACE(name);
    const std::string path = kSource + "/models/" + name + ".lockstep";
    const TinyModel m = load_tiny(path);
    WasmHost host(path);
    EXPECT_EQ(host.n_vocab(), 256);
    EXPECT_EQ(host.n_ctx(), m.n_ctx);
    for (int i = 0; i < 40; ++i) {
      const size_t n =
          i == 0 ? size_t(m.n_ctx)
                 : 1 + size_t(ls_splitmix64_next(&state) % uint64_t(m.n_ctx));
      const auto tokens = RandomTokens(state, n, 256);
      const double bound = i % 3 == 0 ? 10.0 : (i % 3 == 1 ? 2.5 : 0.75);
      const TinyLogits want = tiny_logits(m, tokens, bound);
      const auto got = host.tiny_logits(tokens, bound);
      ASSERT_TRUE(SameValues<double>(got, want))
          << "sequence " << i << ", " << n << " tokens, bound " << bound;
    }
    ExpectMemoryUnchanged(host);
  }
}

TEST(WasmTiny, BadInputIsAnErrorNotACrash) {
  const std::string path = kSource + "/models/tiny4.lockstep";
  WasmHost host(path);
  const std::vector<int32_t> bad_token = {1, 256};
  EXPECT_THROW(host.tiny_logits(bad_token, 10.0), Error);
  const std::vector<int32_t> too_long = {1, 2, 3, 4, 5};
  EXPECT_THROW(host.tiny_logits(too_long, 10.0), Error);
  EXPECT_THROW(host.tiny_logits({}, 10.0), Error);
  const std::vector<int32_t> ok = {1, 2};
  EXPECT_THROW(host.tiny_logits(ok, 11.0), Error);
  // The session survives its errors.
  const TinyLogits want = tiny_logits(load_tiny(path), ok, 10.0);
  EXPECT_TRUE(SameValues<double>(host.tiny_logits(ok, 10.0), want));
  ExpectMemoryUnchanged(host);
}

TEST(WasmModule, RefusesAModuleWithAnotherSha256) {
  const std::string path = kSource + "/models/tiny4.lockstep";
  WasmHostOptions o;
  o.module_sha256 = std::string(64, '0');
  testing::internal::CaptureStderr();
  EXPECT_THROW(WasmHost(path, o), Error);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("refusing WebAssembly module"), std::string::npos) << err;

  // A module with one byte changed, under its recorded name.
  const fs::path dir = fs::temp_directory_path() /
                       ("lockstep_wasm_sha_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path copy = dir / "lockstep.wasm";
  fs::copy_file(wasm_module_path(), copy);
  fs::copy_file(wasm_module_path() + ".sha256", dir / "lockstep.wasm.sha256");
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  o.module = copy.string();
  o.module_sha256.clear();  // the digest this build recorded
  testing::internal::CaptureStderr();
  EXPECT_THROW(WasmHost(path, o), Error);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("refusing"),
            std::string::npos);
  fs::remove_all(dir);
}

// A packed copy of a GPT-2 and its weights in memory, in a temp folder.
struct PackedGpt2 {
  fs::path dir, file;
  ~PackedGpt2() {
    if (!dir.empty()) fs::remove_all(dir);
  }
};

// Runs `contexts` through the module and the native engine: the cached
// step's logits at every position and the cache after the last, then the
// full-prefix pass of every prefix that `full_prefixes` selects.
// The native session's view of loaded weights, binary32 or int8.
Gpt2View ViewOf(const Gpt2Weights& w) {
  return {w.config, w.data(), w.words(), w.layout, w.q8_data(), w.q8_bytes()};
}

// `native_backend`: "cpu" for binary32 (held to the reference's bits by
// tests/gpt2_backend_test.cc); "reference", the scalar int8 reference
// (core/ls_gpt2_q8.c), for int8. `module` / `module_sha256` empty: the
// SIMD module.
void CompareGpt2(const std::string& file, const Gpt2Weights& w,
                 const std::vector<std::vector<int32_t>>& contexts,
                 bool every_full_prefix,
                 const std::string& native_backend = "cpu",
                 const std::string& module = {},
                 const std::string& module_sha256 = {}) {
  const ls_gpt2_config& c = w.config;
  WasmHost host(file, {module, module_sha256, 0});
  Gpt2Session native(ViewOf(w), {native_backend, 2, c.n_ctx});
  for (size_t ci = 0; ci < contexts.size(); ++ci) {
    const auto& tokens = contexts[ci];
    SCOPED_TRACE("context " + std::to_string(ci));
    host.reset();
    native.reset();
    for (size_t t = 0; t < tokens.size(); ++t) {
      const auto got = host.step(tokens[t]);
      const auto want = native.step(tokens[t]);
      ASSERT_TRUE(SameValues<float>(got, want))
          << "cached step, position " << t;
    }
    const auto cache = host.cache();
    const auto want_cache = native.cache();
    ASSERT_EQ(cache.size(), want_cache.size() * sizeof(float));
    ASSERT_TRUE(
        SameBytes(cache.data(), want_cache.data(), cache.size(), sizeof(float)))
        << "KV cache after " << tokens.size() << " positions";
    for (size_t n = every_full_prefix ? 1 : tokens.size(); n <= tokens.size();
         ++n) {
      const std::span<const int32_t> prefix(tokens.data(), n);
      const auto got = host.infer(prefix);
      const auto want = native.infer(prefix);
      ASSERT_TRUE(SameValues<float>(got, want)) << "full prefix of " << n;
    }
  }
  ExpectMemoryUnchanged(host);
}

TEST(WasmGpt2, BothHuggingFaceFixtureCasesMatchNative) {
  const std::string hf = kSource + "/tests/data/hf-gpt2-A";
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_hf_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "hf-gpt2-A.lockstep";
  convert_hf_to_packed(hf, p.file.string());
  const Gpt2Weights w = load_gpt2(p.file.string());
  std::ifstream in(hf + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  ASSERT_EQ(cases.size(), 2u);
  std::vector<std::vector<int32_t>> contexts;
  for (const auto& c : cases) {
    contexts.push_back(c["input_ids"].get<std::vector<int32_t>>());
  }
  CompareGpt2(p.file.string(), w, contexts, /*every_full_prefix=*/true);
}

// Full-size GPT-2 124M with seeded random weights (random_gpt2_weights,
// docs/gpt2-format.md "Random checkpoints"), written packed at test time.
TEST(WasmGpt2, Random124MEightContextsMatchNative) {
  const ls_gpt2_config c = kGpt2_124M;
  std::vector<float> weights = random_gpt2_weights(c, 124);
  const size_t words = weights.size();
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_124m_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "random-124m.lockstep";
  write_gpt2_packed(p.file.string(), c, weights.data(), words,
                    {{"source", "tests/wasm_test.cc, seed 124"}});
  weights = {};
  const Gpt2Weights w = load_gpt2(p.file.string());

  // 8 contexts of 1 to 12 tokens, anywhere in the vocabulary (50256, the
  // last id, included).
  std::vector<std::vector<int32_t>> contexts;
  uint64_t ts = 8;
  for (size_t n : {1, 2, 3, 4, 6, 8, 10, 12}) {
    contexts.push_back(RandomTokens(ts, n, c.n_vocab));
  }
  contexts[3][1] = c.n_vocab - 1;
  CompareGpt2(p.file.string(), w, contexts, /*every_full_prefix=*/false);
}

TEST(WasmGpt2, BadTokensAndPositionsAreErrors) {
  const std::string hf = kSource + "/tests/data/hf-gpt2-A";
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_bad_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "hf.lockstep";
  convert_hf_to_packed(hf, p.file.string());
  WasmHost host(p.file.string());
  EXPECT_THROW(host.step(-1), Error);
  EXPECT_THROW(host.step(50257), Error);
  EXPECT_EQ(host.position(), 0);
  const std::vector<int32_t> too_long(129, 1);
  EXPECT_THROW(host.infer(too_long), Error);
  EXPECT_THROW(host.infer({}), Error);
  for (int t = 0; t < 128; ++t) host.step(t);
  EXPECT_THROW(host.step(1), Error);  // the context is full
  ExpectMemoryUnchanged(host);
}

// Issue 8: batched prefill. For each context: the native cached steps give
// every position's logits and the cache (the reference bytes); then the
// module's prefill and the native Gpt2Session::prefill, each in chunks of
// 1, 5 and the rest with every position's logits, in one call with the
// last position's, and after `split` stepped positions (a partly filled
// cache) with the rest in one call; every logit and cache word compared.
// `module` empty: the SIMD module; else {path, sha256}.
struct PrefillRun {
  int max_prefix = 0;
  std::string module, module_sha256;
  std::string native_backend = "cpu";  // "reference" for int8
};

void ComparePrefill(const std::string& file, const Gpt2Weights& w,
                    const std::vector<std::vector<int32_t>>& contexts,
                    const PrefillRun& run = {}) {
  const ls_gpt2_config& c = w.config;
  WasmHost host(file, {run.module, run.module_sha256, run.max_prefix});
  Gpt2Session native(ViewOf(w), {run.native_backend, 2, run.max_prefix});
  const size_t V = size_t(c.n_vocab);
  for (size_t ci = 0; ci < contexts.size(); ++ci) {
    const auto& tokens = contexts[ci];
    const size_t n = tokens.size();
    SCOPED_TRACE("context " + std::to_string(ci) + ", " + std::to_string(n) +
                 " tokens");
    // The reference: native cached steps.
    native.reset();
    std::vector<float> stepped(n * V);
    for (size_t t = 0; t < n; ++t) {
      const auto l = native.step(tokens[t]);
      std::copy(l.begin(), l.end(), stepped.begin() + long(t * V));
    }
    const auto step_cache_span = native.cache();
    const std::vector<float> step_cache(step_cache_span.begin(),
                                        step_cache_span.end());
    auto expect_cache = [&](const char* what) {
      const auto got = host.cache();
      ASSERT_EQ(got.size(), step_cache.size() * sizeof(float)) << what;
      ASSERT_TRUE(
          SameBytes(got.data(), step_cache.data(), got.size(), sizeof(float)))
          << what << ": KV cache after " << n << " positions";
    };
    auto row = [&](size_t t) {
      return std::span<const float>(stepped.data() + t * V, V);
    };

    // Chunks 1 + 5 + rest, every position's logits: module vs stepping
    // and vs the native prefill.
    host.reset();
    native.reset();
    for (size_t at = 0; at < n;) {
      const size_t m =
          at == 0 ? 1 : (at == 1 ? std::min<size_t>(5, n - at) : n - at);
      const std::span<const int32_t> chunk(tokens.data() + at, m);
      const auto got = host.prefill(chunk, /*all_positions=*/true);
      ASSERT_EQ(got.size(), m * V);
      ASSERT_TRUE(SameBytes(got.data(), stepped.data() + at * V,
                            m * V * sizeof(float), sizeof(float)))
          << "every-position prefill of positions " << at << ".." << at + m - 1
          << " vs stepping (element / " << V << " = position - " << at << ")";
      const auto want = native.prefill(chunk, /*all_positions=*/true);
      ASSERT_TRUE(SameValues<float>(got, want))
          << "every-position prefill of positions " << at << ".." << at + m - 1
          << " vs native prefill";
      at += m;
    }
    EXPECT_EQ(host.position(), int(n));
    expect_cache("1+5+rest prefill");

    // One call, the last position's logits, from an empty cache.
    host.reset();
    native.reset();
    const auto got = host.prefill(tokens);
    ASSERT_TRUE(SameValues<float>(got, row(n - 1)))
        << "prefill of " << n << " tokens vs stepping";
    ASSERT_TRUE(SameValues<float>(got, native.prefill(tokens)))
        << "prefill of " << n << " tokens vs native prefill";
    expect_cache("one prefill");

    // A partly filled cache: the first half stepped in the module, then
    // the rest in one prefill (a conversation that goes on).
    if (n >= 2) {
      const size_t split = n / 2;
      host.reset();
      for (size_t t = 0; t < split; ++t) {
        ASSERT_TRUE(SameValues<float>(host.step(tokens[t]), row(t)))
            << "module step at " << t;
      }
      const std::span<const int32_t> rest(tokens.data() + split, n - split);
      ASSERT_TRUE(SameValues<float>(host.prefill(rest), row(n - 1)))
          << "prefill of " << n - split << " tokens after " << split
          << " steps vs stepping";
      expect_cache("steps then prefill");
    }
  }
  ExpectMemoryUnchanged(host);
}

// Small GPT-2 configs with seeded random weights, packed in a temp folder:
// widths that are and are not multiples of the SIMD panels' 32 columns, a
// vocabulary that is not a multiple of 32, contexts up to the full n_ctx.
struct RandomGpt2 {
  PackedGpt2 p;
  Gpt2Weights w;
};

std::unique_ptr<RandomGpt2> MakeRandomGpt2(const ls_gpt2_config& c,
                                           uint64_t seed,
                                           const std::string& name) {
  auto r = std::make_unique<RandomGpt2>();
  r->p.dir = fs::temp_directory_path() /
             ("lockstep_wasm_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(r->p.dir);
  r->p.file = r->p.dir / (name + ".lockstep");
  const std::vector<float> weights = random_gpt2_weights(c, seed);
  write_gpt2_packed(
      r->p.file.string(), c, weights.data(), weights.size(),
      {{"source", "tests/wasm_test.cc, seed " + std::to_string(seed)}});
  r->w = load_gpt2(r->p.file.string());
  return r;
}

TEST(WasmPrefill, TinyConfigsMatchSteppingAndNativePrefill) {
  // {n_vocab, n_ctx, n_embd, n_head, n_layer}
  const ls_gpt2_config configs[] = {
      {97, 48, 64, 4, 2},   // panels (C, 3C, 4C multiples of 32)
      {131, 40, 48, 3, 3},  // 3C = 144: the streaming kernel
      {64, 9, 32, 2, 1},    // a context filled to its end
  };
  uint64_t ts = 88;
  for (size_t k = 0; k < std::size(configs); ++k) {
    const ls_gpt2_config& c = configs[k];
    SCOPED_TRACE("config " + std::to_string(k));
    const auto m = MakeRandomGpt2(c, 800 + k, "prefill" + std::to_string(k));
    std::vector<std::vector<int32_t>> contexts;
    for (size_t n : {size_t(1), size_t(2), size_t(7), size_t(c.n_ctx)}) {
      contexts.push_back(RandomTokens(ts, n, c.n_vocab));
    }
    contexts.back().back() = c.n_vocab - 1;
    ComparePrefill(m->p.file.string(), m->w, contexts);
    // A session sized for 4-position calls: the host and the native
    // session run longer prompts in chunks of 4.
    ComparePrefill(m->p.file.string(), m->w, {contexts.back()},
                   {.max_prefix = 4,
                    .module = {},
                    .module_sha256 = {},
                    .native_backend = "cpu"});
  }
}

// The SIMD module's multi-position ls_matmul32 (wasm/ops32_simd.c): tiles
// of 4 positions over 32-column panels, tails of 3, 2 and 1 positions.
// Widths with odd panel counts (C = 96: 3 panels, 3C: 9; C = 32: 1 and 3)
// and prompts of 1, 2, 3, 5 and 7 positions, so that ComparePrefill's
// chunks (1 + 5 + rest, the whole, half stepped then the rest) run every
// tile and tail shape, from an empty and a partly filled cache.
TEST(WasmPrefill, PanelKernelTilesAndOddPanelCounts) {
  // {n_vocab, n_ctx, n_embd, n_head, n_layer}
  const ls_gpt2_config configs[] = {
      {61, 16, 96, 3, 2},  // K = 96 and 384 (blocks of 6 and 24 rows)
      {45, 12, 32, 1, 1},  // K = 32 and 128, one panel for c_proj
  };
  uint64_t ts = 93;
  for (size_t k = 0; k < std::size(configs); ++k) {
    const ls_gpt2_config& c = configs[k];
    SCOPED_TRACE("config " + std::to_string(k));
    const auto m = MakeRandomGpt2(c, 810 + k, "tiles" + std::to_string(k));
    std::vector<std::vector<int32_t>> contexts;
    for (size_t n : {1, 2, 3, 5, 7, 11}) {
      contexts.push_back(RandomTokens(ts, n, c.n_vocab));
    }
    ComparePrefill(m->p.file.string(), m->w, contexts);
  }
}

// The scalar module (the core alone) gives the same prefill bytes.
TEST(WasmPrefill, ScalarModuleMatchesStepping) {
  const auto m = MakeRandomGpt2({97, 48, 64, 4, 2}, 801, "prefill_scalar");
  uint64_t ts = 89;
  const std::string scalar =
      fs::path(wasm_module_path()).parent_path() / "lockstep-scalar.wasm";
  ComparePrefill(m->p.file.string(), m->w,
                 {RandomTokens(ts, 11, 97), RandomTokens(ts, 48, 97)},
                 {.max_prefix = 0,
                  .module = scalar,
                  .module_sha256 = wasm_scalar_module_sha256(),
                  .native_backend = "cpu"});
}

TEST(WasmPrefill, HuggingFaceFixtureMatchesSteppingAndNativePrefill) {
  const std::string hf = kSource + "/tests/data/hf-gpt2-A";
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_hf_prefill_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "hf-gpt2-A.lockstep";
  convert_hf_to_packed(hf, p.file.string());
  const Gpt2Weights w = load_gpt2(p.file.string());
  std::ifstream in(hf + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  std::vector<std::vector<int32_t>> contexts;
  for (const auto& c : cases) {
    contexts.push_back(c["input_ids"].get<std::vector<int32_t>>());
  }
  // And the whole context of 128 positions (more than the 32 logits rows
  // one module call returns: the host runs it in chunks).
  uint64_t ts = 90;
  contexts.push_back(
      RandomTokens(ts, size_t(w.config.n_ctx), w.config.n_vocab));
  ComparePrefill(p.file.string(), w, contexts);
}

// Full-size 124M, seeded random weights: two contexts (kept short: each
// module position costs about a decode step's time; the chunking past the
// 32 logits rows is covered by the fixture's 128 positions above).
TEST(WasmPrefill, Random124MMatchesSteppingAndNativePrefill) {
  const ls_gpt2_config c = kGpt2_124M;
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_124m_prefill_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "random-124m.lockstep";
  {
    const std::vector<float> weights = random_gpt2_weights(c, 124);
    write_gpt2_packed(p.file.string(), c, weights.data(), weights.size(),
                      {{"source", "tests/wasm_test.cc, seed 124"}});
  }
  const Gpt2Weights w = load_gpt2(p.file.string());
  uint64_t ts = 91;
  std::vector<std::vector<int32_t>> contexts;
  for (size_t n : {4, 13}) contexts.push_back(RandomTokens(ts, n, c.n_vocab));
  contexts[1][4] = c.n_vocab - 1;
  ComparePrefill(p.file.string(), w, contexts);
}

TEST(WasmPrefill, BadInputIsAnErrorAndConsumesNothing) {
  const auto m = MakeRandomGpt2({64, 9, 32, 2, 1}, 802, "prefill_bad");
  WasmHost host(m->p.file.string());
  const std::vector<int32_t> ok = {1, 2, 3};
  EXPECT_THROW(host.prefill({}), Error);
  const std::vector<int32_t> bad = {1, 64, 2};
  EXPECT_THROW(host.prefill(bad), Error);
  const std::vector<int32_t> negative = {-1};
  EXPECT_THROW(host.prefill(negative, true), Error);
  EXPECT_EQ(host.position(), 0);
  EXPECT_EQ(host.cache().size(), 0u);
  host.prefill(ok);
  const std::vector<int32_t> seven(7, 5);  // 3 + 7 > 9 positions
  EXPECT_THROW(host.prefill(seven), Error);
  EXPECT_EQ(host.position(), 3);
  // The session goes on as if the errors had not happened.
  Gpt2Session native({m->w.config, m->w.data(), m->w.words(), m->w.layout});
  native.prefill(ok);
  const std::vector<int32_t> six(6, 5);
  const auto got = host.prefill(six, true);
  const auto want = native.prefill(six, true);
  EXPECT_TRUE(SameValues<float>(got, want));
  const auto cache = host.cache();
  const auto want_cache = native.cache();
  ASSERT_EQ(cache.size(), want_cache.size() * sizeof(float));
  EXPECT_TRUE(SameBytes(cache.data(), want_cache.data(), cache.size(), 4));
  EXPECT_THROW(host.prefill(ok), Error);  // the context is full
  ExpectMemoryUnchanged(host);
}

// ---------------------------------------------------------------- int8
// Issue 9: the module's int8 entries (gpt2_q8_plan, then cachedStep, infer
// and prefill; wasm/q8_simd.c's product in the SIMD module, core/ls_q8.c's
// in the scalar one) against the native int8 reference (core/ls_gpt2_q8.c
// through Gpt2Session "reference"): every logit and cache word by memcmp.

// An int8 file quantized from seeded random binary32 weights.
std::unique_ptr<RandomGpt2> MakeRandomQ8(const ls_gpt2_config& c, uint64_t seed,
                                         const std::string& name) {
  auto r = std::make_unique<RandomGpt2>();
  r->p.dir = fs::temp_directory_path() /
             ("lockstep_wasm_q8_" + name + "_" + std::to_string(getpid()));
  fs::create_directories(r->p.dir);
  r->p.file = r->p.dir / (name + ".lockstep");
  const std::vector<float> weights = random_gpt2_weights(c, seed);
  write_gpt2_q8(
      r->p.file.string(), c, weights.data(),
      {{"source", "tests/wasm_test.cc, seed " + std::to_string(seed)}});
  r->w = load_gpt2_q8(r->p.file.string());
  return r;
}

PrefillRun Q8Run(const std::string& module = {},
                 const std::string& module_sha256 = {}, int max_prefix = 0) {
  return {.max_prefix = max_prefix,
          .module = module,
          .module_sha256 = module_sha256,
          .native_backend = "reference"};
}

std::string ScalarModule() {
  return fs::path(wasm_module_path()).parent_path() / "lockstep-scalar.wasm";
}

// Both cases of the fixture, quantized by `lockstep convert --quant int8`'s
// code: cached steps, the cache and the full-prefix pass of every prefix,
// then the prefill comparisons (with a whole context of 128 positions: more
// than the 32 logits rows of one call), in both modules.
TEST(WasmQ8, HuggingFaceFixtureMatchesNativeInt8Reference) {
  const std::string hf = kSource + "/tests/data/hf-gpt2-A";
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_q8_hf_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "hf-gpt2-A-int8.lockstep";
  convert_gpt2_q8(hf, p.file.string());
  const Gpt2Weights w = load_gpt2_q8(p.file.string());
  ASSERT_EQ(w.quant, "int8");
  std::ifstream in(hf + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  ASSERT_EQ(cases.size(), 2u);
  std::vector<std::vector<int32_t>> contexts;
  for (const auto& c : cases) {
    contexts.push_back(c["input_ids"].get<std::vector<int32_t>>());
  }
  CompareGpt2(p.file.string(), w, contexts, /*every_full_prefix=*/true,
              "reference");
  CompareGpt2(p.file.string(), w, contexts, /*every_full_prefix=*/true,
              "reference", ScalarModule(), wasm_scalar_module_sha256());
  uint64_t ts = 190;
  contexts.push_back(
      RandomTokens(ts, size_t(w.config.n_ctx), w.config.n_vocab));
  ComparePrefill(p.file.string(), w, contexts, Q8Run());
  ComparePrefill(p.file.string(), w, {contexts[0]},
                 Q8Run(ScalarModule(), wasm_scalar_module_sha256()));
}

// Random configs whose output counts leave every shape of the SIMD
// kernel's last panel: whole blocks of 8 outputs, a block of 4, and 1 to 3
// outputs in the scalar tail (vocabularies 97 = 64 + 33, 77 = 64 + 13 and
// 70 = 64 + 6); K = 64 .. 512; a context filled to its end; and a session
// sized for 4-position prefill calls.
TEST(WasmQ8, RandomConfigsMatchNativeInt8Reference) {
  // {n_vocab, n_ctx, n_embd, n_head, n_layer}
  const ls_gpt2_config configs[] = {
      {97, 48, 64, 4, 2},
      {77, 24, 128, 4, 2},
      {70, 9, 64, 2, 1},
  };
  uint64_t ts = 191;
  for (size_t k = 0; k < std::size(configs); ++k) {
    const ls_gpt2_config& c = configs[k];
    SCOPED_TRACE("config " + std::to_string(k));
    const auto m = MakeRandomQ8(c, 900 + k, "cfg" + std::to_string(k));
    std::vector<std::vector<int32_t>> contexts;
    for (size_t n : {size_t(1), size_t(2), size_t(7), size_t(c.n_ctx)}) {
      contexts.push_back(RandomTokens(ts, n, c.n_vocab));
    }
    contexts.back().back() = c.n_vocab - 1;
    CompareGpt2(m->p.file.string(), m->w, contexts,
                /*every_full_prefix=*/true, "reference");
    ComparePrefill(m->p.file.string(), m->w, contexts, Q8Run());
    ComparePrefill(m->p.file.string(), m->w, {contexts.back()},
                   Q8Run({}, {}, 4));
    CompareGpt2(m->p.file.string(), m->w, {contexts[2]},
                /*every_full_prefix=*/true, "reference", ScalarModule(),
                wasm_scalar_module_sha256());
  }
}

// The batched int8 prefill (ls_q8_matmul; in the SIMD module
// wasm/q8_simd.c's group-major kernel: tiles of 4 positions, tails of 3, 2
// and 1, one position through the decode kernel): each context is stepped
// by the native int8 reference, then fed to the module in chunks of
// `chunks` (cycled, the last chunk what remains), each chunk's
// last-position logits compared with the stepped ones and the whole cache
// after the last chunk. Last-position logits, so that a chunk of 64 is one
// module call (every-position logits are limited to the plan's 32 rows).
void CompareQ8Chunks(const std::string& file, const Gpt2Weights& w,
                     const std::vector<std::vector<int32_t>>& contexts,
                     const std::vector<std::vector<size_t>>& chunkings,
                     const std::string& module = {},
                     const std::string& module_sha256 = {}) {
  const size_t V = size_t(w.config.n_vocab);
  WasmHost host(file, {module, module_sha256, 0});
  Gpt2Session native(ViewOf(w), {"reference", 1, 0});
  for (size_t ci = 0; ci < contexts.size(); ++ci) {
    const auto& tokens = contexts[ci];
    const size_t n = tokens.size();
    native.reset();
    std::vector<float> stepped(n * V);
    for (size_t t = 0; t < n; ++t) {
      const auto l = native.step(tokens[t]);
      std::copy(l.begin(), l.end(), stepped.begin() + long(t * V));
    }
    const auto want_cache = native.cache();
    for (const auto& chunks : chunkings) {
      SCOPED_TRACE("context " + std::to_string(ci) + " (" + std::to_string(n) +
                   " tokens), chunks from " + std::to_string(chunks[0]));
      host.reset();
      for (size_t at = 0, i = 0; at < n; ++i) {
        const size_t m = std::min(chunks[i % chunks.size()], n - at);
        const std::span<const int32_t> chunk(tokens.data() + at, m);
        ASSERT_TRUE(SameValues<float>(
            host.prefill(chunk),
            std::span<const float>(stepped.data() + (at + m - 1) * V, V)))
            << "prefill of positions " << at << ".." << at + m - 1
            << " vs the reference's steps";
        at += m;
      }
      const auto got = host.cache();
      ASSERT_EQ(got.size(), want_cache.size() * sizeof(float));
      ASSERT_TRUE(SameBytes(got.data(), want_cache.data(), got.size(), 4))
          << "KV cache after " << n << " positions";
    }
  }
  ExpectMemoryUnchanged(host);
}

// Chunks of 1, 5, 8 and 64 then the rest; and 2, 3, 6, 7 (every tail of
// the 4-position tile) cycled; and after 7 cached positions (a chunk of 7)
// the rest in one call.
const std::vector<std::vector<size_t>> kQ8Chunkings = {
    {1, 5, 8, 64, 100000}, {2, 3, 6, 7}, {7, 100000}};

// The batched int8 prefill on random configs (K = 64: one group, so the
// first group is also the last; 128, 256 and 512; 4C = 256 has room for 60
// positions in the core's chunk, so 64 positions run as 60 + 4) and the
// fixture's whole context of 128, in both modules, against the native int8
// reference's steps.
TEST(WasmQ8, BatchedPrefillChunksMatchReferenceSteps) {
  // {n_vocab, n_ctx, n_embd, n_head, n_layer}
  const ls_gpt2_config configs[] = {
      {97, 150, 64, 4, 2},
      {77, 80, 128, 4, 1},
  };
  uint64_t ts = 193;
  for (size_t k = 0; k < std::size(configs); ++k) {
    const ls_gpt2_config& c = configs[k];
    SCOPED_TRACE("config " + std::to_string(k));
    const auto m = MakeRandomQ8(c, 910 + k, "chunks" + std::to_string(k));
    const std::vector<std::vector<int32_t>> contexts = {
        RandomTokens(ts, size_t(c.n_ctx), c.n_vocab),
        RandomTokens(ts, 13, c.n_vocab)};
    CompareQ8Chunks(m->p.file.string(), m->w, contexts, kQ8Chunkings);
    CompareQ8Chunks(m->p.file.string(), m->w, {contexts[0]}, {{7, 100000}},
                    ScalarModule(), wasm_scalar_module_sha256());
  }
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_q8_hf_chunks_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "hf-gpt2-A-int8.lockstep";
  convert_gpt2_q8(kSource + "/tests/data/hf-gpt2-A", p.file.string());
  const Gpt2Weights w = load_gpt2_q8(p.file.string());
  SCOPED_TRACE("hf-gpt2-A int8");
  const std::vector<std::vector<int32_t>> hf = {
      RandomTokens(ts, size_t(w.config.n_ctx), w.config.n_vocab)};
  CompareQ8Chunks(p.file.string(), w, hf, kQ8Chunkings);
  CompareQ8Chunks(p.file.string(), w, hf, kQ8Chunkings, ScalarModule(),
                  wasm_scalar_module_sha256());
}

// Full-size 124M, seeded random weights quantized: cached steps, cache,
// full-prefix and prefill (kept short: the native int8 reference is
// scalar).
TEST(WasmQ8, Random124MMatchesNativeInt8Reference) {
  const auto m = MakeRandomQ8(kGpt2_124M, 124, "124m");
  const ls_gpt2_config& c = m->w.config;
  uint64_t ts = 192;
  std::vector<std::vector<int32_t>> contexts;
  for (size_t n : {3, 6}) contexts.push_back(RandomTokens(ts, n, c.n_vocab));
  contexts[1][2] = c.n_vocab - 1;  // the head's last panel of 17 tokens
  CompareGpt2(m->p.file.string(), m->w, {contexts[0]},
              /*every_full_prefix=*/false, "reference");
  ComparePrefill(m->p.file.string(), m->w, {contexts[1]}, Q8Run());
}

// Damaged int8 files and bad input: a message, never a crash.
TEST(WasmQ8, DamagedFilesAndBadInputAreErrors) {
  const auto m = MakeRandomQ8({70, 9, 64, 2, 1}, 903, "bad");
  const std::string file = m->p.file.string();
  std::vector<char> bytes;
  {
    std::ifstream f(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  const size_t payload = bytes.size() - m->w.q8_bytes();
  auto write = [&](const std::vector<char>& b, const std::string& name) {
    const std::string out = (m->p.dir / name).string();
    std::ofstream f(out, std::ios::binary);
    f.write(b.data(), std::streamsize(b.size()));
    return out;
  };
  auto refused = [&](const std::string& path, const std::string& what) {
    testing::internal::CaptureStderr();
    EXPECT_THROW(WasmHost host(path), Error) << what;
    const std::string err = testing::internal::GetCapturedStderr();
    return err;
  };
  // One payload bit flipped: the digest.
  std::vector<char> flipped = bytes;
  flipped[payload + 100] ^= 1;
  EXPECT_NE(refused(write(flipped, "flip.lockstep"), "flip").find("SHA-256"),
            std::string::npos);
  // A level of -128 with the digest made right: the module's check.
  std::vector<char> level = bytes;
  level[payload + 5] = char(0x80);
  const Sha256 d = sha256(level.data() + payload, level.size() - payload);
  std::memcpy(level.data() + 24, d.data(), d.size());
  EXPECT_NE(refused(write(level, "level.lockstep"), "-128")
                .find("int8 weights are not well formed"),
            std::string::npos);
  // Truncated.
  std::vector<char> cut(bytes.begin(), bytes.end() - 64);
  EXPECT_NE(refused(write(cut, "cut.lockstep"), "cut").find("file size"),
            std::string::npos);
  // A tensor table entry changed (one digit of the same length).
  std::vector<char> entry = bytes;
  const std::string h(entry.begin(), entry.begin() + long(payload));
  const size_t at = h.find("\"bytes\":4224");
  ASSERT_NE(at, std::string::npos) << h.substr(0, 400);
  entry[at + 8] = '5';
  EXPECT_NE(refused(write(entry, "entry.lockstep"), "entry")
                .find("tensor table entry"),
            std::string::npos);

  WasmHost host(file);
  EXPECT_THROW(host.step(-1), Error);
  EXPECT_THROW(host.step(70), Error);
  const std::vector<int32_t> bad = {1, 70};
  EXPECT_THROW(host.prefill(bad), Error);
  EXPECT_THROW(host.infer(bad), Error);
  EXPECT_EQ(host.position(), 0);
  const std::vector<int32_t> ok = {5, 6, 7};
  Gpt2Session native(ViewOf(m->w), {"reference", 1, 0});
  EXPECT_TRUE(SameValues<float>(host.prefill(ok), native.prefill(ok)));
  const std::vector<int32_t> seven(7, 1);  // 3 + 7 > 9 positions
  EXPECT_THROW(host.prefill(seven), Error);
  EXPECT_EQ(host.position(), 3);
  EXPECT_TRUE(SameValues<float>(host.step(69), native.step(69)));
  ExpectMemoryUnchanged(host);
}

// §7.2 step 1: a projection input that is not finite (ln_1's gains at
// 3e38 make LayerNorm overflow) ends every entry with status 10 in both
// modules, as in the native int8 reference, and the session goes on.
TEST(WasmQ8, NonFiniteActivationsAreAnError) {
  const ls_gpt2_config c = {70, 9, 64, 2, 1};
  std::vector<float> weights = random_gpt2_weights(c, 904);
  const ls_gpt2_block b = ls_gpt2_block_offsets(&c, 0);
  for (int i = 0; i < c.n_embd; ++i) weights[b.ln1_g + size_t(i)] = 3e38f;
  PackedGpt2 p;
  p.dir = fs::temp_directory_path() /
          ("lockstep_wasm_q8_inf_" + std::to_string(getpid()));
  fs::create_directories(p.dir);
  p.file = p.dir / "inf.lockstep";
  write_gpt2_q8(p.file.string(), c, weights.data());
  const Gpt2Weights w = load_gpt2_q8(p.file.string());
  Gpt2Session native(ViewOf(w), {"reference", 1, 0});
  const std::vector<int32_t> two = {5, 6};
  EXPECT_THROW(native.step(5), Error);
  EXPECT_THROW(native.prefill(two), Error);
  for (const bool scalar : {false, true}) {
    SCOPED_TRACE(scalar ? "scalar module" : "SIMD module");
    WasmHost host(p.file.string(),
                  {scalar ? ScalarModule() : std::string(),
                   scalar ? wasm_scalar_module_sha256() : std::string(), 0});
    auto message = [](auto&& f) {
      try {
        f();
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("(no error)");
    };
    const std::string want = ls_status_message(LS_ERR_OUTPUT_NONFINITE);
    EXPECT_NE(message([&] { host.step(5); }).find(want), std::string::npos);
    EXPECT_NE(message([&] { host.prefill(two); }).find(want),
              std::string::npos);
    EXPECT_NE(message([&] { host.prefill(two, true); }).find(want),
              std::string::npos);
    EXPECT_NE(message([&] { host.infer(two); }).find(want), std::string::npos);
    ExpectMemoryUnchanged(host);
  }
}

}  // namespace
}  // namespace lockstep
