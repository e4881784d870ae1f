// Issue 13, per-operation bisect for the CUDA backend (docs/cuda.md
// "Observed prefill", docs/verify.md "Per-operation bisect between
// backends"): with an observer set, the CUDA backend's prefill with every
// position's logits shows every tap of core/ls_gpt2.h's layer pass (embed;
// per layer ln1, qkv, att_score and att_prob per head, att_out, proj, res1,
// ln2, fc, gelu, mlp_out, res2; ln_f, logits), each call byte for byte
// the reference's observed pass's (binary32 and int8:
// the Hugging Face fixture, the trained model, the random 124M) or, after
// position 0, the CPU backend's; the observer changes no logit and no
// cache bit; a one-ulp weight change given to the CUDA backend only is
// named at its operation; `verify` records the CUDA backend's operations.
// Built only with LOCKSTEP_CUDA; every test skips where no CUDA device is
// found.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backend.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lib/verify.h"
#include "lib/verify_bundle.h"
#include "lockstep/paths.h"
#include "ls_gpt2.h"
#include "ls_gpt2_q8.h"
#include "ls_sampler.h"
#include "tests/cuda_test_util.h"
#include "tokenizer/bpe.h"

namespace lockstep {
namespace {

using test::SameBits;

// One observer call, as made.
struct Call {
  int layer;
  ls_gpt2_tap tap;
  int position, head;
  std::vector<float> data;
};

// Records every call.
struct Recorder {
  std::vector<Call> calls;
  static void observe(void* user, int layer, ls_gpt2_tap tap, int position,
                      int head, const float* data, size_t n) {
    auto* r = static_cast<Recorder*>(user);
    r->calls.push_back({layer, tap, position, head, {data, data + n}});
  }
};

std::string What(const Call& k) {
  return gpt2_op_name(k.layer, k.tap) + " position " +
         std::to_string(k.position) +
         (k.head >= 0 ? " head " + std::to_string(k.head) : "");
}

// The calls the CUDA backend (and the reference) makes per position:
// embed, per layer 10 and a score and a probability row per head, ln_f,
// logits.
size_t CallsPerPosition(const ls_gpt2_config& c) {
  return size_t(3 + c.n_layer * (10 + 2 * c.n_head));
}

// The CPU backend's: embed, 9 per layer (no fc, no attention rows), ln_f,
// logits.
size_t CpuCallsPerPosition(const ls_gpt2_config& c) {
  return size_t(3 + 9 * c.n_layer);
}

// The operations verify names: embed, 12 per layer, ln_f, logits.
size_t OpsCount(const ls_gpt2_config& c) { return size_t(3 + 12 * c.n_layer); }

// The same calls in the same order, each tap's floats byte for byte.
// Stops at the first difference (later ones follow from it).
::testing::AssertionResult SameCalls(const std::vector<Call>& got,
                                     const std::vector<Call>& want) {
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const Call &g = got[i], &w = want[i];
    if (g.layer != w.layer || g.tap != w.tap || g.position != w.position ||
        g.head != w.head) {
      return ::testing::AssertionFailure()
             << "call " << i << ": " << What(g) << " head " << g.head
             << ", want " << What(w) << " head " << w.head;
    }
    if (g.data.size() != w.data.size()) {
      return ::testing::AssertionFailure() << What(g) << ": " << g.data.size()
                                           << " floats, want " << w.data.size();
    }
    const auto same = SameBits(g.data.data(), w.data.data(), g.data.size());
    if (!same) {
      return ::testing::AssertionFailure() << What(g) << ": " << same.message();
    }
  }
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << got.size() << " calls, want " << want.size();
  }
  return ::testing::AssertionSuccess();
}

// Every call of `want` (the CPU backend's: no fc, no attention rows,
// another order) made by `got` too with the same floats; `got` may show
// more.
::testing::AssertionResult SameCallsByKey(const std::vector<Call>& got,
                                          const std::vector<Call>& want) {
  std::map<std::tuple<int, int, int, int>, const Call*> index;
  for (const Call& g : got) {
    index[{g.layer, int(g.tap), g.position, g.head}] = &g;
  }
  for (const Call& w : want) {
    const auto it = index.find({w.layer, int(w.tap), w.position, w.head});
    if (it == index.end()) {
      return ::testing::AssertionFailure() << What(w) << " not shown";
    }
    const Call& g = *it->second;
    if (g.data.size() != w.data.size()) {
      return ::testing::AssertionFailure() << What(g) << ": " << g.data.size()
                                           << " floats, want " << w.data.size();
    }
    const auto same = SameBits(g.data.data(), w.data.data(), g.data.size());
    if (!same) {
      return ::testing::AssertionFailure() << What(g) << ": " << same.message();
    }
  }
  return ::testing::AssertionSuccess();
}

size_t Floats(const std::vector<Call>& calls) {
  size_t n = 0;
  for (const Call& k : calls) n += k.data.size();
  return n;
}

// The reference's observed full-prefix pass over `tokens` (binary32, or
// int8 when q8 is given).
std::vector<Call> ReferenceCalls(const ls_gpt2_config& c, const float* w,
                                 size_t words, const std::vector<uint8_t>* q8,
                                 const std::vector<int32_t>& tokens) {
  const int n = int(tokens.size());
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, n));
  std::vector<float> logits(size_t(n) * size_t(c.n_vocab));
  Recorder r;
  const ls_status s =
      q8 ? ls_gpt2_q8_infer_observed(&c, q8->data(), q8->size(), tokens.data(),
                                     n, scratch.data(), scratch.size(),
                                     logits.data(), &Recorder::observe, &r)
         : ls_gpt2_infer_observed(&c, w, words, tokens.data(), n,
                                  scratch.data(), scratch.size(), logits.data(),
                                  &Recorder::observe, &r);
  EXPECT_EQ(s, LS_OK);
  return r.calls;
}

// An observed every-position prefill of tokens at `position` through b,
// the cache's first position rows already filled (by b).
std::vector<Call> ObservedCalls(Gpt2Backend& b, const ls_gpt2_config& c,
                                std::vector<float>& cache,
                                const std::vector<int32_t>& tokens,
                                int position) {
  const size_t row = ls_gpt2_cache_row_floats(&c);
  std::vector<float> logits(tokens.size() * size_t(c.n_vocab));
  Recorder r;
  EXPECT_TRUE(b.set_observer(&Recorder::observe, &r));
  const ls_status s = b.prefill(
      cache.data(), cache.size(), size_t(position) * row, tokens.data(),
      int(tokens.size()), position, true, logits.data());
  b.set_observer(nullptr, nullptr);
  EXPECT_EQ(s, LS_OK);
  return r.calls;
}

std::unique_ptr<Gpt2Backend> Cuda(const ls_gpt2_config& c, const float* w,
                                  size_t words, const std::vector<uint8_t>* q8,
                                  int max_prefix) {
  return q8 ? make_gpt2_q8_backend("cuda", c, q8->data(), q8->size(), 1,
                                   max_prefix)
            : make_gpt2_backend("cuda", c, w, words, 1, max_prefix);
}

// Every context through the CUDA backend observed (at position 0) against
// the reference's observed pass, call by call.
void ExpectEveryTapIsTheReferences(
    const ls_gpt2_config& c, const float* w, size_t words,
    const std::vector<uint8_t>* q8,
    const std::vector<std::vector<int32_t>>& contexts,
    const std::string& what) {
  size_t longest = 1;
  for (const auto& t : contexts) longest = std::max(longest, t.size());
  auto gpu = Cuda(c, w, words, q8, int(longest));
  size_t calls = 0, floats = 0;
  for (const auto& tokens : contexts) {
    SCOPED_TRACE(what + ", " + std::to_string(tokens.size()) + " positions");
    std::vector<float> cache(tokens.size() * ls_gpt2_cache_row_floats(&c));
    const std::vector<Call> got = ObservedCalls(*gpu, c, cache, tokens, 0);
    const std::vector<Call> want = ReferenceCalls(c, w, words, q8, tokens);
    EXPECT_EQ(got.size(), tokens.size() * CallsPerPosition(c));
    EXPECT_TRUE(SameCalls(got, want));
    calls += got.size(), floats += Floats(got);
  }
  std::printf("cuda observer, %s (%s): %zu calls, %zu floats compared\n",
              what.c_str(), gpu->name().c_str(), calls, floats);
}

std::vector<int32_t> Tokens(const ls_gpt2_config& c, size_t n, uint64_t seed) {
  std::vector<int32_t> t(n);
  for (auto& x : t) {
    x = int32_t(ls_splitmix64_next(&seed) % uint64_t(c.n_vocab));
  }
  return t;
}

// Hugging Face's fixture (n_embd 64, 4 heads of 16, 2 layers): both cases
// and one position, binary32 and int8.
TEST(CudaObserver, HfFixtureEveryTapIsTheReferences) {
  SKIP_WITHOUT_DEVICE();
  const std::string dir = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
  const Gpt2Weights w = load_gpt2(dir);
  ASSERT_EQ(w.layout, LS_GPT2_LAYOUT_PLAIN);
  std::ifstream in(dir + "/cases.json");
  const auto cases = nlohmann::json::parse(in)["cases"];
  std::vector<std::vector<int32_t>> contexts;
  for (const auto& k : cases) {
    contexts.push_back(k["input_ids"].get<std::vector<int32_t>>());
  }
  contexts.push_back({contexts[0][0]});
  const ls_gpt2_config& c = w.config;
  ExpectEveryTapIsTheReferences(c, w.data(), w.words(), nullptr, contexts,
                                "HF fixture binary32");
  const std::vector<uint8_t> q8 = quantize_gpt2_q8(c, w.data());
  ExpectEveryTapIsTheReferences(c, w.data(), w.words(), &q8, contexts,
                                "HF fixture int8");
}

// The trained model (n_embd 128, 2 heads of 64: the D = 64 kernels): its
// first prompt then random tokens, 1, 9 and 64 positions.
TEST(CudaObserver, TrainedModelEveryTapIsTheReferences) {
  SKIP_WITHOUT_DEVICE();
  const std::string dir = LOCKSTEP_SOURCE_DIR "/models/shakespeare-gpt2";
  const Gpt2Weights w = load_gpt2(dir);
  ASSERT_EQ(w.layout, LS_GPT2_LAYOUT_PLAIN);
  const ls_gpt2_config& c = w.config;
  std::ifstream in(dir + "/reference.json");
  std::vector<int32_t> tokens =
      nlohmann::json::parse(in)["prompts"][0]["input_ids"];
  const std::vector<int32_t> fill = Tokens(c, 64, 2026);
  tokens.insert(tokens.end(), fill.begin(), fill.end());
  tokens.resize(64);
  std::vector<std::vector<int32_t>> contexts;
  for (size_t n : {1, 9, 64}) {
    contexts.emplace_back(tokens.begin(), tokens.begin() + long(n));
  }
  ExpectEveryTapIsTheReferences(c, w.data(), w.words(), nullptr, contexts,
                                "trained binary32");
  const std::vector<uint8_t> q8 = quantize_gpt2_q8(c, w.data());
  ExpectEveryTapIsTheReferences(c, w.data(), w.words(), &q8, contexts,
                                "trained int8");
}

// The random 124M: 1 and 17 positions against the reference; 128
// positions, in two observed prefills of 64 (the second at position 64,
// attending to the cache), against the CPU backend's observed prefills
// (every tap it shows: all but fc and the attention rows). Binary32 and
// int8.
TEST(CudaObserver, Random124MEveryTapIsTheReferences) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = kGpt2_124M;
  const std::vector<float> w = random_gpt2_weights(c, 124);
  const std::vector<uint8_t> q8 = quantize_gpt2_q8(c, w.data());
  const std::vector<int32_t> tokens = Tokens(c, 128, 1240);
  for (const std::vector<uint8_t>* q :
       {static_cast<const std::vector<uint8_t>*>(nullptr), &q8}) {
    const std::string what = q ? "124M int8" : "124M binary32";
    const std::vector<std::vector<int32_t>> short_contexts = {
        std::vector<int32_t>(tokens.begin(), tokens.begin() + 1),
        std::vector<int32_t>(tokens.begin(), tokens.begin() + 17)};
    ExpectEveryTapIsTheReferences(c, w.data(), w.size(), q, short_contexts,
                                  what);
    SCOPED_TRACE(what + ", 2 x 64 positions against the CPU backend");
    auto gpu = Cuda(c, w.data(), w.size(), q, 64);
    auto cpu = q ? make_gpt2_q8_backend("cpu", c, q->data(), q->size(), 2, 64)
                 : make_gpt2_backend("cpu", c, w.data(), w.size(), 2, 64);
    const size_t row = ls_gpt2_cache_row_floats(&c);
    std::vector<float> gcache(128 * row), ccache(128 * row);
    size_t floats = 0;
    for (int first : {0, 64}) {
      const std::vector<int32_t> part(tokens.begin() + first,
                                      tokens.begin() + first + 64);
      const auto got = ObservedCalls(*gpu, c, gcache, part, first);
      const auto want = ObservedCalls(*cpu, c, ccache, part, first);
      EXPECT_EQ(got.size(), 64 * CallsPerPosition(c));
      EXPECT_EQ(want.size(), 64 * CpuCallsPerPosition(c));
      EXPECT_TRUE(SameCallsByKey(got, want)) << "at position " << first;
      floats += Floats(want);
    }
    EXPECT_TRUE(SameBits(gcache.data(), ccache.data(), gcache.size()));
    std::printf(
        "cuda observer, %s: 2 x 64 positions against %s, %zu floats "
        "compared\n",
        what.c_str(), cpu->name().c_str(), floats);
  }
}

// Observed or not, the same logits and cache bytes: every-position
// prefills of 1, 3 and n_ctx positions, in one call and in two (the second
// at a later position); with the observer set, a prefill of the last
// position's logits only and a step are the unobserved ones and show
// nothing; after an observed prefill the next step continues from its
// cache rows. Binary32 (head widths 16 and 64) and int8.
TEST(CudaObserver, ObserverChangesNoBit) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config configs[] = {{97, 24, 64, 4, 3}, {131, 20, 128, 2, 2}};
  uint64_t seed = 60;
  for (const ls_gpt2_config& c : configs) {
    const std::vector<float> w = random_gpt2_weights(c, ++seed);
    const std::vector<uint8_t> q8 = quantize_gpt2_q8(c, w.data());
    for (const std::vector<uint8_t>* q :
         {static_cast<const std::vector<uint8_t>*>(nullptr), &q8}) {
      auto gpu = Cuda(c, w.data(), w.size(), q, 0);
      auto ref =
          q ? make_gpt2_q8_backend("reference", c, q->data(), q->size(), 1, 0)
            : make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
      const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
      const std::vector<int32_t> tokens = Tokens(c, size_t(c.n_ctx), seed);
      for (int n : {1, 3, c.n_ctx}) {
        SCOPED_TRACE(gpu->name() + ", n_embd " + std::to_string(c.n_embd) +
                     ", " + std::to_string(n) + " positions");
        const size_t N = size_t(n);
        std::vector<float> c0((N + 1) * row), c1((N + 1) * row);
        std::vector<float> c2((N + 1) * row), c3((N + 1) * row);
        std::vector<float> l0(N * V), l1(N * V), l2(N * V), l3(V);
        ASSERT_EQ(gpu->prefill(c0.data(), c0.size(), 0, tokens.data(), n, 0,
                               true, l0.data()),
                  LS_OK);
        long calls = 0;
        const ls_gpt2_observer count = [](void* u, int, ls_gpt2_tap, int, int,
                                          const float*,
                                          size_t) { ++*static_cast<long*>(u); };
        ASSERT_TRUE(gpu->set_observer(count, &calls));
        ASSERT_EQ(gpu->prefill(c1.data(), c1.size(), 0, tokens.data(), n, 0,
                               true, l1.data()),
                  LS_OK);
        EXPECT_EQ(calls, long(N * CallsPerPosition(c)));
        EXPECT_TRUE(SameBits(l1.data(), l0.data(), l1.size())) << "logits";
        EXPECT_TRUE(SameBits(c1.data(), c0.data(), N * row)) << "cache";
        // Observed, the next step continues from the observed rows.
        if (n < c.n_ctx) {
          std::vector<float> sl(V), want(V);
          std::vector<float> rc = c0;
          calls = 0;
          ASSERT_EQ(
              gpu->step(c1.data(), c1.size(), N * row, tokens[N], n, sl.data()),
              LS_OK);
          EXPECT_EQ(calls, 0);
          ASSERT_EQ(ref->step(rc.data(), rc.size(), N * row, tokens[N], n,
                              want.data()),
                    LS_OK);
          EXPECT_TRUE(SameBits(sl.data(), want.data(), V)) << "step logits";
          EXPECT_TRUE(SameBits(c1.data(), rc.data(), (N + 1) * row))
              << "step cache";
        }
        // In two observed calls (the second at position n - n / 2).
        if (n > 1) {
          const int k = n - n / 2;
          calls = 0;
          ASSERT_EQ(gpu->prefill(c2.data(), c2.size(), 0, tokens.data(), k, 0,
                                 true, l2.data()),
                    LS_OK);
          ASSERT_EQ(gpu->prefill(c2.data(), c2.size(), size_t(k) * row,
                                 tokens.data() + k, n - k, k, true,
                                 l2.data() + size_t(k) * V),
                    LS_OK);
          EXPECT_EQ(calls, long(N * CallsPerPosition(c)));
          EXPECT_TRUE(SameBits(l2.data(), l0.data(), l2.size()))
              << "chunked logits";
          EXPECT_TRUE(SameBits(c2.data(), c0.data(), N * row))
              << "chunked cache";
        }
        // The last position's logits only: unobserved, nothing shown.
        calls = 0;
        ASSERT_EQ(gpu->prefill(c3.data(), c3.size(), 0, tokens.data(), n, 0,
                               false, l3.data()),
                  LS_OK);
        EXPECT_EQ(calls, 0);
        EXPECT_TRUE(SameBits(l3.data(), l0.data() + (N - 1) * V, V))
            << "last logits";
        EXPECT_TRUE(SameBits(c3.data(), c0.data(), N * row)) << "last cache";
        gpu->set_observer(nullptr, nullptr);
        // And the reference's bytes.
        std::vector<float> rc(N * row), rl(N * V);
        ASSERT_EQ(ref->prefill(rc.data(), rc.size(), 0, tokens.data(), n, 0,
                               true, rl.data()),
                  LS_OK);
        EXPECT_TRUE(SameBits(l0.data(), rl.data(), rl.size()))
            << "against the reference";
        EXPECT_TRUE(SameBits(c0.data(), rc.data(), rc.size()))
            << "cache against the reference";
      }
    }
  }
}

::testing::AssertionResult SameOps(const std::vector<NamedHash>& got,
                                   const std::vector<NamedHash>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << got.size() << " operations vs " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].name != want[i].name || got[i].sha256 != want[i].sha256) {
      return ::testing::AssertionFailure()
             << "operation " << i << ": " << got[i].name << " " << got[i].sha256
             << " vs " << want[i].name << " " << want[i].sha256;
    }
  }
  return ::testing::AssertionSuccess();
}

// Contexts of 1, 3, 8, 13 and n_ctx positions (tests/wasm_observer_test.cc's).
std::vector<VerifyContext> Contexts(const ls_gpt2_config& c) {
  std::vector<VerifyContext> out;
  uint64_t seed = 500;
  for (int n : {1, 3, 8, 13, c.n_ctx}) {
    out.push_back({Tokens(c, size_t(n), seed++), "random"});
  }
  return out;
}

std::vector<float> Nudged(std::vector<float> w, size_t i) {
  w[i] = std::nextafter(w[i], INFINITY);
  return w;
}

// tests/wasm_observer_test.cc's config, weights and cases: every digest
// the reference's; one ulp of one weight given to the CUDA backend only is
// named at its operation (the CUDA backend shows fc, so c_fc's bias is
// named at h1.fc), and every digest is the reference's on the changed
// weights.
TEST(CudaObserver, OneUlpGivenToTheCudaBackendOnlyIsNamedAtItsOperation) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {97, 24, 64, 4, 3};
  const std::vector<float> w = random_gpt2_weights(c, 43);
  const std::vector<VerifyContext> ctx = Contexts(c);
  const auto ref = reference_op_hashes(c, w.data(), w.size(), ctx);
  {
    auto gpu = make_gpt2_backend("cuda", c, w.data(), w.size(), 1, 0);
    const auto ops = backend_op_hashes(*gpu, c, ctx);
    EXPECT_EQ(ops.size(), OpsCount(c));
    EXPECT_TRUE(SameOps(ops, ref));
  }
  const ls_gpt2_block b0 = ls_gpt2_block_offsets(&c, 0);
  const ls_gpt2_block b1 = ls_gpt2_block_offsets(&c, 1);
  const ls_gpt2_block b2 = ls_gpt2_block_offsets(&c, 2);
  const size_t C = size_t(c.n_embd);
  struct Case {
    size_t index;
    const char* want;
  };
  for (const Case& k :
       {Case{b1.proj_b, "h1.proj"}, Case{b1.fc_b + 3, "h1.fc"},
        Case{b2.ln1_g + 7, "h2.ln1"}, Case{b2.attn_b + 5, "h2.qkv"},
        Case{ls_gpt2_lnf_offset(&c) + 1, "ln_f"},
        Case{b0.attn_b + C + 2, "h0.qkv"}, Case{b1.ln2_g + 9, "h1.ln2"},
        Case{ls_gpt2_wpe_offset(&c) + 3, "embed"}}) {
    SCOPED_TRACE(k.want);
    const std::vector<float> w2 = Nudged(w, k.index);
    auto gpu = make_gpt2_backend("cuda", c, w2.data(), w2.size(), 1, 0);
    const auto ops = backend_op_hashes(*gpu, c, ctx);
    const auto got = first_shared_difference(ops, ref);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, k.want);
    EXPECT_TRUE(
        SameOps(ops, reference_op_hashes(c, w2.data(), w2.size(), ctx)));
  }
}

// int8 (tests/wasm_observer_test.cc's config, weights and cases): the
// int8 reference's digests, and one ulp of a binary32 word of the int8
// payload given to the CUDA backend only named at its operation.
TEST(CudaObserver, Int8ShowsTheInt8ReferenceDigestsAndNamesAChange) {
  SKIP_WITHOUT_DEVICE();
  const ls_gpt2_config c = {97, 24, 64, 4, 3};
  const std::vector<float> f32 = random_gpt2_weights(c, 47);
  const std::vector<uint8_t> q0 = quantize_gpt2_q8(c, f32.data());
  const std::vector<VerifyContext> ctx = Contexts(c);
  const auto ref = reference_q8_op_hashes(c, q0.data(), q0.size(), ctx);
  {
    auto gpu = make_gpt2_q8_backend("cuda", c, q0.data(), q0.size(), 1, 0);
    EXPECT_TRUE(SameOps(backend_op_hashes(*gpu, c, ctx), ref));
  }
  const ls_gpt2_block b1 = ls_gpt2_block_offsets(&c, 1);
  const ls_gpt2_block b2 = ls_gpt2_block_offsets(&c, 2);
  struct Case {
    size_t index;
    const char* want;
  };
  for (const Case& k :
       {Case{b1.proj_b, "h1.proj"}, Case{b2.ln1_g + 7, "h2.ln1"},
        Case{ls_gpt2_lnf_offset(&c) + 1, "ln_f"}}) {
    SCOPED_TRACE(k.want);
    const std::vector<uint8_t> q2 =
        quantize_gpt2_q8(c, Nudged(f32, k.index).data());
    ASSERT_EQ(q2.size(), q0.size());
    auto gpu = make_gpt2_q8_backend("cuda", c, q2.data(), q2.size(), 1, 0);
    const auto got =
        first_shared_difference(backend_op_hashes(*gpu, c, ctx), ref);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, k.want);
  }
}

// lockstep verify on the HF fixture with the cuda backend: its record
// carries its own operations, every one of the reference's (27 on the
// fixture) with the reference's digests, its logits digest the last.
TEST(CudaObserver, VerifyRecordsTheCudaBackendsOperations) {
  SKIP_WITHOUT_DEVICE();
  const Gpt2Weights w =
      load_gpt2(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/data/hf-gpt2-A");
  const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
  VerifyOptions o;
  o.contexts = 3;
  o.max_length = 12;
  o.seed = 9;
  o.backends = {"reference", "cuda"};
  o.threads = {1};
  o.completion_tokens = 2;
  std::string text(8192, 'a');
  for (size_t i = 0; i < text.size(); ++i) text[i] = " etaoinshrd\n"[i % 12];
  const auto ctx = make_verify_contexts(w.config, tok, text, o);
  const VerifyResult r = run_verify(w, "", ctx, tok, o);
  EXPECT_EQ(r.mismatches, 0u) << (r.first ? r.first->describe() : "");
  ASSERT_EQ(r.backends.size(), 2u);
  EXPECT_TRUE(r.backends[0].ops.empty());
  const BackendRecord& b = r.backends[1];
  EXPECT_EQ(b.requested, "cuda");
  ASSERT_EQ(b.ops.size(), OpsCount(w.config));
  EXPECT_TRUE(SameOps(b.ops, r.ops));
  EXPECT_EQ(b.ops.back().sha256, b.logits_sha256);
  const nlohmann::json rec = verify_record(r, o, w, VerifyProvenance{});
  ASSERT_TRUE(rec["backends"][1].contains("ops"));
  EXPECT_EQ(rec["backends"][1]["ops"].size(), b.ops.size());
}

}  // namespace
}  // namespace lockstep
