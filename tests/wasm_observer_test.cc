// Issue 13, per-operation bisect for the WebAssembly backend (docs/wasm.md
// "Observed pass", docs/verify.md "Per-operation bisect between
// backends"): the module's observed pass, run in Node.js through
// WasmGpt2Backend (hosts/native/wasm_host.h), shows every operation of
// core/ls_gpt2.h's layer pass (att_score, att_prob and fc included) with
// the reference's digests, binary32 and int8, in the SIMD and the scalar
// module; observed or not, the prefill's logits and cache bytes are the
// same (and the native reference's); a one-ulp weight change given to the
// wasm backend only is named at its operation; and `verify` records the
// wasm backend's own operations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "hosts/native/wasm_host.h"
#include "lib/verify.h"
#include "lib/verify_bundle.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#include "ls_gpt2.h"
#include "ls_gpt2_q8.h"
#include "ls_sampler.h"
#include "tokenizer/bpe.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// memcmp of two float ranges; on failure the first differing index with
// both values' bits in hex.
::testing::AssertionResult SameFloats(const std::vector<float>& a,
                                      const std::vector<float>& b) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure()
           << a.size() << " floats vs " << b.size();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], 4) != 0) {
      uint32_t x, y;
      std::memcpy(&x, &a[i], 4);
      std::memcpy(&y, &b[i], 4);
      char buf[120];
      std::snprintf(buf, sizeof buf,
                    "first difference at index %zu: 0x%08x vs 0x%08x", i,
                    unsigned(x), unsigned(y));
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionSuccess();
}

// Every digest of `got` equal to `want`'s, by name and in order.
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

// A temp folder removed at the end of the test.
struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& name)
      : dir(fs::temp_directory_path() / ("lockstep_wasm_observer_" + name +
                                         "_" + std::to_string(getpid()))) {
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const {
    return (dir / name).string();
  }
};

std::vector<int32_t> Tokens(const ls_gpt2_config& c, size_t n, uint64_t seed) {
  std::vector<int32_t> t(n);
  for (auto& x : t)
    x = int32_t(ls_splitmix64_next(&seed) % uint64_t(c.n_vocab));
  return t;
}

// Contexts of 1, 3, 8, 13 and n_ctx positions.
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

int Longest(const std::vector<VerifyContext>& ctx) {
  size_t n = 1;
  for (const auto& x : ctx) n = std::max(n, x.tokens.size());
  return int(n);
}

// The names of every tap of the layer pass, in its order (39 for 3
// layers): what the module shows.
std::vector<std::string> AllNames(int n_layer) {
  const ls_gpt2_tap layer_taps[] = {
      LS_TAP_LN1,     LS_TAP_QKV,  LS_TAP_ATT_SCORE, LS_TAP_ATT_PROB,
      LS_TAP_ATT_OUT, LS_TAP_PROJ, LS_TAP_RES1,      LS_TAP_LN2,
      LS_TAP_FC,      LS_TAP_GELU, LS_TAP_MLP_OUT,   LS_TAP_RES2};
  std::vector<std::string> names{"embed"};
  for (int l = 0; l < n_layer; ++l) {
    for (ls_gpt2_tap t : layer_taps) names.push_back(gpt2_op_name(l, t));
  }
  names.push_back("ln_f");
  names.push_back("logits");
  return names;
}

std::vector<std::string> Names(const std::vector<NamedHash>& ops) {
  std::vector<std::string> out;
  for (const auto& h : ops) out.push_back(h.name);
  return out;
}

// The scalar module with the digest this build recorded for it.
WasmHostOptions Scalar() {
  WasmHostOptions o;
  o.module = LOCKSTEP_WASM_SCALAR_MODULE;
  o.module_sha256 = wasm_scalar_module_sha256();
  return o;
}

// Observed and unobserved every-position prefills of one context through
// `b` give the same logits and cache bytes as `native`'s prefill, with
// one observer call per position and operation (and per head for the
// attention taps).
void ExpectObservedIsUnobserved(Gpt2Backend& b, Gpt2Backend& native,
                                const ls_gpt2_config& c,
                                const std::vector<int32_t>& tokens) {
  const size_t n = tokens.size(), row = ls_gpt2_cache_row_floats(&c);
  const size_t V = size_t(c.n_vocab);
  std::vector<float> c0(n * row), c1(n * row), c2(n * row);
  std::vector<float> l0(n * V), l1(n * V), l2(n * V);
  ASSERT_EQ(native.prefill(c0.data(), c0.size(), 0, tokens.data(), int(n), 0,
                           true, l0.data()),
            LS_OK);
  ASSERT_EQ(b.prefill(c1.data(), c1.size(), 0, tokens.data(), int(n), 0, true,
                      l1.data()),
            LS_OK);
  long calls = 0;
  const ls_gpt2_observer count = [](void* u, int, ls_gpt2_tap, int, int,
                                    const float*,
                                    size_t) { ++*static_cast<long*>(u); };
  ASSERT_TRUE(b.set_observer(count, &calls));
  ASSERT_EQ(b.prefill(c2.data(), c2.size(), 0, tokens.data(), int(n), 0, true,
                      l2.data()),
            LS_OK);
  b.set_observer(nullptr, nullptr);
  EXPECT_EQ(calls, long(n) * (3 + c.n_layer * (10 + 2 * c.n_head)));
  EXPECT_TRUE(SameFloats(l1, l0)) << "unobserved logits, n " << n;
  EXPECT_TRUE(SameFloats(c1, c0)) << "unobserved cache, n " << n;
  EXPECT_TRUE(SameFloats(l2, l0)) << "observed logits, n " << n;
  EXPECT_TRUE(SameFloats(c2, c0)) << "observed cache, n " << n;
}

// {n_vocab, n_ctx, n_embd, n_head, n_layer}: C a multiple of the SIMD
// panels' 32 columns (the panel kernels), and not (the streaming kernel).
constexpr ls_gpt2_config kPanels = {97, 24, 64, 4, 3};
constexpr ls_gpt2_config kStreaming = {131, 20, 48, 3, 2};

TEST(WasmObserver, Binary32ShowsEveryOperationWithTheReferenceDigests) {
  for (const ls_gpt2_config& c : {kPanels, kStreaming}) {
    SCOPED_TRACE("n_embd " + std::to_string(c.n_embd));
    TempDir tmp("f32_" + std::to_string(c.n_embd));
    const std::vector<float> w = random_gpt2_weights(c, 41);
    const std::string path = tmp.file("m.lockstep");
    write_gpt2_packed(path, c, w.data(), w.size());
    const std::vector<VerifyContext> ctx = Contexts(c);
    const auto ref = reference_op_hashes(c, w.data(), w.size(), ctx);
    ASSERT_EQ(Names(ref), AllNames(c.n_layer));
    auto native = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
    for (bool scalar : {false, true}) {
      SCOPED_TRACE(scalar ? "scalar module" : "SIMD module");
      WasmGpt2Backend b(path, c, Longest(ctx),
                        scalar ? Scalar() : WasmHostOptions{});
      EXPECT_EQ(b.name(), "wasm (Node.js)");
      EXPECT_TRUE(SameOps(backend_op_hashes(b, c, ctx), ref));
      for (size_t i : {size_t(0), size_t(3), ctx.size() - 1}) {
        ExpectObservedIsUnobserved(b, *native, c, ctx[i].tokens);
      }
    }
  }
}

TEST(WasmObserver, OneUlpGivenToTheWasmBackendOnlyIsNamedAtItsOperation) {
  const ls_gpt2_config c = kPanels;
  TempDir tmp("ulp");
  const std::vector<float> w = random_gpt2_weights(c, 43);
  const std::vector<VerifyContext> ctx = Contexts(c);
  const auto ref = reference_op_hashes(c, w.data(), w.size(), ctx);
  const ls_gpt2_block b0 = ls_gpt2_block_offsets(&c, 0);
  const ls_gpt2_block b1 = ls_gpt2_block_offsets(&c, 1);
  const ls_gpt2_block b2 = ls_gpt2_block_offsets(&c, 2);
  const size_t C = size_t(c.n_embd);
  struct Case {
    size_t index;
    const char* want;
  };
  // The module shows every tap, so c_fc's bias is named at h1.fc (the CPU
  // backend, which does not store c_fc before its GELU, names h1.gelu),
  // and a key bias of layer 0 at h0.qkv. (A one-ulp change can vanish in
  // rounding, a bias far smaller than its sum: layer 1's ln_2 bias 9 and
  // layer 2's c_proj bias 4 changed no operation's digest here; these
  // cases change one, and the reference on the same weights names it.)
  for (const Case& k :
       {Case{b1.proj_b, "h1.proj"}, Case{b1.fc_b + 3, "h1.fc"},
        Case{b2.ln1_g + 7, "h2.ln1"}, Case{b2.attn_b + 5, "h2.qkv"},
        Case{ls_gpt2_lnf_offset(&c) + 1, "ln_f"},
        Case{b0.attn_b + C + 2, "h0.qkv"}, Case{b1.ln2_g + 9, "h1.ln2"},
        Case{ls_gpt2_wpe_offset(&c) + 3, "embed"}}) {
    SCOPED_TRACE(k.want);
    const std::string path = tmp.file(std::string(k.want) + ".lockstep");
    const std::vector<float> w2 = Nudged(w, k.index);
    write_gpt2_packed(path, c, w2.data(), w2.size());
    WasmGpt2Backend b(path, c, Longest(ctx));
    const auto ops = backend_op_hashes(b, c, ctx);
    const auto got = first_shared_difference(ops, ref);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, k.want);
    // Where the reference on the same weights first differs, and every
    // digest the reference's on them.
    EXPECT_TRUE(
        SameOps(ops, reference_op_hashes(c, w2.data(), w2.size(), ctx)));
  }
}

// int8: n_embd a multiple of 64.
constexpr ls_gpt2_config kQ8 = {97, 24, 64, 4, 3};

TEST(WasmObserver, Int8ShowsTheInt8ReferenceDigestsAndNamesAChange) {
  const ls_gpt2_config c = kQ8;
  TempDir tmp("q8");
  const std::vector<float> f32 = random_gpt2_weights(c, 47);
  const std::string path = tmp.file("m.lockstep");
  write_gpt2_q8(path, c, f32.data());
  const Gpt2Weights q = load_gpt2_q8(path);
  const std::vector<VerifyContext> ctx = Contexts(c);
  const auto ref = reference_q8_op_hashes(c, q.q8_data(), q.q8_bytes(), ctx);
  ASSERT_EQ(Names(ref), AllNames(c.n_layer));
  auto native =
      make_gpt2_q8_backend("reference", c, q.q8_data(), q.q8_bytes(), 1, 0);
  for (bool scalar : {false, true}) {
    SCOPED_TRACE(scalar ? "scalar module" : "SIMD module");
    WasmGpt2Backend b(path, c, Longest(ctx),
                      scalar ? Scalar() : WasmHostOptions{});
    EXPECT_TRUE(SameOps(backend_op_hashes(b, c, ctx), ref));
    for (size_t i : {size_t(0), ctx.size() - 1}) {
      ExpectObservedIsUnobserved(b, *native, c, ctx[i].tokens);
    }
  }
  // One ulp of a binary32 word of the int8 payload (a bias, a LayerNorm
  // gain), given to the wasm backend only.
  const ls_gpt2_block b1 = ls_gpt2_block_offsets(&c, 1);
  const ls_gpt2_block b2 = ls_gpt2_block_offsets(&c, 2);
  const std::vector<uint8_t> q0 = quantize_gpt2_q8(c, f32.data());
  struct Case {
    size_t index;
    const char* want;
  };
  for (const Case& k :
       {Case{b1.proj_b, "h1.proj"}, Case{b2.ln1_g + 7, "h2.ln1"},
        Case{ls_gpt2_lnf_offset(&c) + 1, "ln_f"}}) {
    SCOPED_TRACE(k.want);
    const std::vector<float> f2 = Nudged(f32, k.index);
    // The int8 payloads differ in that one binary32 word only.
    const std::vector<uint8_t> q2 = quantize_gpt2_q8(c, f2.data());
    ASSERT_EQ(q2.size(), q0.size());
    size_t differ = 0;
    for (size_t i = 0; i < q0.size(); ++i) differ += q0[i] != q2[i];
    EXPECT_GE(differ, 1u);
    EXPECT_LE(differ, 4u);
    const std::string p2 = tmp.file(std::string(k.want) + ".lockstep");
    write_gpt2_q8(p2, c, f2.data());
    WasmGpt2Backend b(p2, c, Longest(ctx));
    const auto got = first_shared_difference(backend_op_hashes(b, c, ctx), ref);
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, k.want);
  }
}

TEST(WasmObserver, BadUseIsAStatusOrAnError) {
  const ls_gpt2_config c = kStreaming;
  TempDir tmp("bad");
  const std::vector<float> w = random_gpt2_weights(c, 53);
  const std::string path = tmp.file("m.lockstep");
  write_gpt2_packed(path, c, w.data(), w.size());
  WasmGpt2Backend b(path, c, 8);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> cache(size_t(c.n_ctx) * row), logits(size_t(c.n_ctx) * V);
  const std::vector<int32_t> t = Tokens(c, 12, 9);
  // More than max_prefix positions; a token outside the vocabulary; a
  // cache length that is not the position's.
  EXPECT_EQ(b.prefill(cache.data(), cache.size(), 0, t.data(), 9, 0, true,
                      logits.data()),
            LS_ERR_SCRATCH);
  const int32_t bad[] = {1, c.n_vocab};
  EXPECT_EQ(
      b.prefill(cache.data(), cache.size(), 0, bad, 2, 0, true, logits.data()),
      LS_ERR_TOKEN);
  EXPECT_EQ(b.step(cache.data(), cache.size(), row, t[0], 0, logits.data()),
            LS_ERR_CACHE_LENGTH);
  // A later position continues this backend's own rows: 3 then 2 positions
  // give the bytes of 5 at once, and a step at position 5 those of a
  // sixth; a position it did not fill is refused.
  ASSERT_EQ(b.prefill(cache.data(), cache.size(), 0, t.data(), 3, 0, true,
                      logits.data()),
            LS_OK);
  ASSERT_EQ(b.prefill(cache.data(), cache.size(), 3 * row, t.data() + 3, 2, 3,
                      true, logits.data() + 3 * V),
            LS_OK);
  std::vector<float> step_logits(V);
  ASSERT_EQ(
      b.step(cache.data(), cache.size(), 5 * row, t[5], 5, step_logits.data()),
      LS_OK);
  EXPECT_EQ(
      b.step(cache.data(), cache.size(), 7 * row, t[7], 7, step_logits.data()),
      LS_ERR_CACHE_LENGTH);
  auto native = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
  std::vector<float> want_cache(size_t(c.n_ctx) * row), want(6 * V);
  ASSERT_EQ(native->prefill(want_cache.data(), want_cache.size(), 0, t.data(),
                            6, 0, true, want.data()),
            LS_OK);
  EXPECT_TRUE(SameFloats({logits.begin(), logits.begin() + 5 * long(V)},
                         {want.begin(), want.begin() + 5 * long(V)}));
  EXPECT_TRUE(
      SameFloats(step_logits, {want.begin() + 5 * long(V), want.end()}));
  EXPECT_TRUE(
      SameFloats({cache.begin(), cache.begin() + 6 * long(row)},
                 {want_cache.begin(), want_cache.begin() + 6 * long(row)}));
  // infer: the full-prefix pass's last logits.
  std::vector<float> inferred(V);
  ASSERT_EQ(b.infer(t.data(), 6, inferred.data()), LS_OK);
  EXPECT_TRUE(SameFloats(inferred, step_logits));
  // Observed, a prefill after position 0 is refused with a message.
  long calls = 0;
  b.set_observer([](void* u, int, ls_gpt2_tap, int, int, const float*,
                    size_t) { ++*static_cast<long*>(u); },
                 &calls);
  EXPECT_THROW(b.prefill(cache.data(), cache.size(), 6 * row, t.data() + 6, 2,
                         6, true, logits.data()),
               Error);
  EXPECT_EQ(calls, 0);
  b.set_observer(nullptr, nullptr);
  // A host planned without the observation buffer refuses `observe`.
  WasmHost plain(path, {});
  EXPECT_THROW(plain.observe(t, nullptr, nullptr), Error);
}

// lockstep verify on the HF fixture (packed): the wasm backend's record
// carries its own operations, all of the reference's, with its logits
// digest as the last.
TEST(WasmObserver, VerifyRecordsTheWasmBackendsOperations) {
  TempDir tmp("verify");
  const std::string path = tmp.file("hf-gpt2-A.lockstep");
  convert_hf_to_packed(
      std::string(LOCKSTEP_SOURCE_DIR) + "/tests/data/hf-gpt2-A", path);
  const Gpt2Weights w = load_gpt2(path);
  const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
  VerifyOptions o;
  o.contexts = 3;
  o.max_length = 12;
  o.seed = 9;
  o.backends = {"reference", "wasm"};
  o.threads = {1};
  o.completion_tokens = 2;
  std::string text(8192, 'a');
  for (size_t i = 0; i < text.size(); ++i) text[i] = " etaoinshrd\n"[i % 12];
  const auto ctx = make_verify_contexts(w.config, tok, text, o);
  const VerifyResult r = run_verify(w, path, ctx, tok, o);
  EXPECT_EQ(r.mismatches, 0u) << (r.first ? r.first->describe() : "");
  ASSERT_EQ(r.backends.size(), 2u);
  EXPECT_TRUE(r.backends[0].ops.empty());
  const BackendRecord& b = r.backends[1];
  EXPECT_EQ(b.requested, "wasm");
  EXPECT_TRUE(SameOps(b.ops, r.ops));
  ASSERT_FALSE(b.ops.empty());
  EXPECT_EQ(b.ops.back().sha256, b.logits_sha256);
  const nlohmann::json rec = verify_record(r, o, w, VerifyProvenance{});
  ASSERT_TRUE(rec["backends"][1].contains("ops"));
  EXPECT_EQ(rec["backends"][1]["ops"].size(), r.ops.size());
}

}  // namespace
}  // namespace lockstep
