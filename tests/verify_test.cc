// lockstep verify's engine (lib/verify.h, docs/verify.md): the observed
// reference pass returns the unobserved bits and its taps are what they
// say; the per-operation digests name the first layer and operation of an
// injected one-ulp change; the comparer names position, layer, k/v and both
// words of an injected bit flip; a run over the HF fixture passes. The same
// for int8 weights (docs/int8.md): the observed int8 pass (the int8
// prefill's bits, binary32's taps), its operation digests (binary32's
// names, logits equal to the int8 prefill's, changes bisected to their
// operation) and a run of the int8 fixture over the int8 reference and the
// CPU engine's int8 kernels at several thread counts.
#include "lib/verify.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "backends/backend.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "formats/sha256.h"
#include "gpt2_test_util.h"
#include "lib/verify_bundle.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#include "ls_gpt2_q8.h"
#include "tokenizer/bpe.h"

namespace lockstep {
namespace {

using test::BytesEqual;
using test::RandomTokens;

constexpr ls_gpt2_config kSmall = {97, 24, 32, 4, 3};

// "name@position[/head]", appended piecewise (GCC 12's -Wrestrict misfires
// on "literal" + std::to_string(...)).
std::string Key(const std::string& op, int position, int head = -1) {
  std::string k = op;
  k += '@';
  k += std::to_string(position);
  if (head >= 0) {
    k += '/';
    k += std::to_string(head);
  }
  return k;
}

// Everything one observed pass shows, by (name, position, head).
struct Seen {
  std::map<std::string, std::vector<float>> rows;
  static void observe(void* user, int layer, ls_gpt2_tap tap, int position,
                      int head, const float* data, size_t n) {
    auto* s = static_cast<Seen*>(user);
    s->rows[Key(gpt2_op_name(layer, tap), position, head)].assign(data,
                                                                  data + n);
  }
};

TEST(VerifyObserver, SameBitsAsThePrefillAndTapsAreTheCacheWords) {
  const ls_gpt2_config c = kSmall;
  const std::vector<float> w = random_gpt2_weights(c, 11);
  const int n = 13;
  const std::vector<int32_t> tokens = RandomTokens(c, n, 5);
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, n));
  std::vector<float> observed(size_t(n) * size_t(c.n_vocab));
  Seen seen;
  ASSERT_EQ(ls_gpt2_infer_observed(&c, w.data(), w.size(), tokens.data(), n,
                                   scratch.data(), scratch.size(),
                                   observed.data(), &Seen::observe, &seen),
            LS_OK);
  // The prefill's every-position logits and its cache.
  std::vector<float> cache(ls_gpt2_cache_floats(&c));
  std::vector<float> want(observed.size());
  ASSERT_EQ(ls_gpt2_prefill(&c, w.data(), w.size(), cache.data(), cache.size(),
                            0, tokens.data(), n, 0, 1, scratch.data(),
                            scratch.size(), want.data()),
            LS_OK);
  EXPECT_TRUE(BytesEqual(observed, want));
  const size_t C = size_t(c.n_embd), V = size_t(c.n_vocab);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  for (int t = 0; t < n; ++t) {
    // Each layer's k | v tap is that layer's cache row.
    for (int l = 0; l < c.n_layer; ++l) {
      const std::vector<float>& qkv =
          seen.rows.at(Key(gpt2_op_name(l, LS_TAP_QKV), t));
      ASSERT_EQ(qkv.size(), 3 * C);
      EXPECT_TRUE(BytesEqual(qkv.data() + C,
                             cache.data() + size_t(t) * row + size_t(l) * 2 * C,
                             2 * C))
          << "layer " << l << " position " << t;
      // Probabilities: t+1 per head, from the scores.
      for (int h = 0; h < c.n_head; ++h) {
        EXPECT_EQ(
            seen.rows.at(Key(gpt2_op_name(l, LS_TAP_ATT_PROB), t, h)).size(),
            size_t(t) + 1);
        EXPECT_EQ(
            seen.rows.at(Key(gpt2_op_name(l, LS_TAP_ATT_SCORE), t, h)).size(),
            size_t(t) + 1);
      }
      // res1 + mlp_out = res2, as the pass adds them (binary32).
      const auto& r1 = seen.rows.at(Key(gpt2_op_name(l, LS_TAP_RES1), t));
      const auto& mo = seen.rows.at(Key(gpt2_op_name(l, LS_TAP_MLP_OUT), t));
      const auto& r2 = seen.rows.at(Key(gpt2_op_name(l, LS_TAP_RES2), t));
      std::vector<float> sum(C);
      for (size_t i = 0; i < C; ++i) sum[i] = r1[i] + mo[i];
      EXPECT_TRUE(BytesEqual(sum, r2));
    }
    EXPECT_TRUE(BytesEqual(seen.rows.at(Key("logits", t)).data(),
                           want.data() + size_t(t) * V, V));
  }
  // Unobserved, the full pass gives the last row.
  std::vector<float> last(V);
  ASSERT_EQ(ls_gpt2_infer(&c, w.data(), w.size(), tokens.data(), n,
                          scratch.data(), scratch.size(), last.data()),
            LS_OK);
  EXPECT_TRUE(BytesEqual(last.data(), want.data() + size_t(n - 1) * V, V));
}

std::vector<VerifyContext> SmallContexts(const ls_gpt2_config& c) {
  std::vector<VerifyContext> out;
  for (int i = 0; i < 4; ++i) {
    out.push_back({RandomTokens(c, 3 + 5 * i, 100 + uint64_t(i)), "random"});
  }
  return out;
}

// One ulp up of weight `i`.
std::vector<float> Nudged(std::vector<float> w, size_t i) {
  w[i] = std::nextafter(w[i], INFINITY);
  return w;
}

TEST(VerifyBisect, NamesTheFirstLayerAndOperationOfAOneUlpChange) {
  const ls_gpt2_config c = kSmall;
  const std::vector<float> w = random_gpt2_weights(c, 3);
  const auto ctx = SmallContexts(c);
  const auto base = reference_op_hashes(c, w.data(), w.size(), ctx);
  ASSERT_EQ(base.size(), size_t(3 + 12 * c.n_layer));
  EXPECT_EQ(base.front().name, "embed");
  EXPECT_EQ(base[1].name, "h0.ln1");
  EXPECT_EQ(base.back().name, "logits");
  EXPECT_FALSE(first_difference(base, base));
  EXPECT_FALSE(
      first_difference(base, reference_op_hashes(c, w.data(), w.size(), ctx)));
  struct Case {
    size_t index;
    const char* want;
  };
  const ls_gpt2_block b1 = ls_gpt2_block_offsets(&c, 1);
  const ls_gpt2_block b2 = ls_gpt2_block_offsets(&c, 2);
  for (const Case& k :
       {Case{b1.fc_b + 3, "h1.fc"}, Case{b2.ln1_g + 7, "h2.ln1"},
        Case{b1.proj_b, "h1.proj"}, Case{ls_gpt2_lnf_offset(&c) + 1, "ln_f"}}) {
    const std::vector<float> w2 = Nudged(w, k.index);
    const auto got = first_difference(
        base, reference_op_hashes(c, w2.data(), w2.size(), ctx));
    ASSERT_TRUE(got) << k.want;
    EXPECT_EQ(*got, k.want);
  }
}

TEST(VerifyComparer, NamesPositionLayerPartAndBothWords) {
  const ls_gpt2_config c = kSmall;
  const size_t row = ls_gpt2_cache_row_floats(&c), C = size_t(c.n_embd);
  std::vector<uint8_t> a(5 * row * 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = uint8_t(i * 131 + 7);
  std::vector<uint8_t> b = a;
  // Position 3, layer 2, values, element 5: flip the lowest bit.
  const size_t word = 3 * row + 2 * 2 * C + C + 5;
  b[word * 4] ^= 1;
  VerifyResult r;
  VerifyComparer cmp(c, r);
  cmp.cache(a, a, 0, "x", "y");
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.cache_words_compared, 5 * row);
  cmp.cache(a, b, 7, "ref cached", "cpu prefill");
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.first->context, 7);
  EXPECT_EQ(r.first->position, 3);
  EXPECT_EQ(r.first->layer, 2);
  EXPECT_EQ(r.first->part, "v");
  EXPECT_EQ(r.first->index, 5);
  uint32_t wa;
  std::memcpy(&wa, a.data() + word * 4, 4);
  EXPECT_EQ(r.first->bits_a, wa);
  EXPECT_EQ(r.first->bits_b, wa ^ 1u);
  // Logits: the first differing one is kept, every one is counted.
  std::vector<float> la(2 * size_t(c.n_vocab), 1.5f), lb = la;
  lb[size_t(c.n_vocab) + 4] = -0.0f;
  lb[size_t(c.n_vocab) + 9] = 2.0f;
  VerifyResult r2;
  VerifyComparer cmp2(c, r2);
  cmp2.logits(la.data(), lb.data(), 2, 10, 1, "a", "b");
  ASSERT_TRUE(r2.first);
  EXPECT_EQ(r2.mismatches, 2u);
  EXPECT_EQ(r2.first->position, 11);
  EXPECT_EQ(r2.first->index, 4);
  EXPECT_EQ(r2.first->bits_a, 0x3fc00000u);
  EXPECT_EQ(r2.first->bits_b, 0x80000000u);
  EXPECT_NE(r2.first->describe().find("0x80000000"), std::string::npos);
}

TEST(VerifyRun, HfFixtureReferenceAndCpuAgree) {
  const Gpt2Weights w =
      load_gpt2(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/data/hf-gpt2-A");
  const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
  VerifyOptions o;
  o.contexts = 3;
  o.max_length = 12;
  o.seed = 9;
  o.backends = {"reference", "cpu-generic"};
  o.threads = {1, 2};
  o.completion_tokens = 4;
  std::string text(8192, 'a');
  for (size_t i = 0; i < text.size(); ++i) text[i] = " etaoinshrd\n"[i % 12];
  const auto ctx = make_verify_contexts(w.config, tok, text, o);
  ASSERT_EQ(ctx.size(), 3u);
  EXPECT_EQ(ctx[0].tokens.size(), 12u);
  EXPECT_EQ(ctx[1].source, "random");
  const VerifyResult r = run_verify(w, "", ctx, tok, o);
  EXPECT_EQ(r.mismatches, 0u) << (r.first ? r.first->describe() : "");
  ASSERT_EQ(r.backends.size(), 3u);  // reference, cpu-generic x1 and x2
  const size_t V = size_t(w.config.n_vocab);
  // Per backend and context: full pass (1 row), whole and chunked prefill
  // (L rows each); across the 2 later backends L rows each; the observed
  // pass L rows.
  const uint64_t P = r.positions;
  EXPECT_EQ(r.logits_compared, (3 * (2 * P + 3) + 2 * P + P) * V);
  for (const auto& b : r.backends) {
    EXPECT_EQ(b.logits_sha256, r.backends[0].logits_sha256) << b.name;
    EXPECT_FALSE(first_difference(b.cache, r.backends[0].cache)) << b.name;
    ASSERT_EQ(b.completions.size(), 2u);
    EXPECT_EQ(b.completions[0].tokens.size(), 4u);
    EXPECT_EQ(b.completions[0].tokens, r.backends[0].completions[0].tokens);
  }
  EXPECT_EQ(r.ops.back().name, "logits");
  EXPECT_EQ(r.ops.back().sha256, r.backends[0].logits_sha256);
  // The cpu backends' own operations (set_observer): embed, 9 per layer,
  // ln_f, logits, with the reference's digests; the reference backend
  // shows none.
  EXPECT_TRUE(r.backends[0].ops.empty());
  for (size_t i = 1; i < r.backends.size(); ++i) {
    const BackendRecord& b = r.backends[i];
    ASSERT_EQ(b.ops.size(), size_t(3 + 9 * w.config.n_layer)) << b.name;
    EXPECT_FALSE(first_shared_difference(b.ops, r.ops)) << b.name;
    EXPECT_EQ(b.ops.back().sha256, b.logits_sha256) << b.name;
  }
  // In the record; one backend operation's digest edited is named by
  // bisect (one record, two records) and by --against's comparison.
  const nlohmann::json rec = verify_record(r, o, w, VerifyProvenance{});
  ASSERT_TRUE(rec["backends"][2].contains("ops"));
  EXPECT_FALSE(rec["backends"][0].contains("ops"));
  nlohmann::json edited = rec;
  for (auto& h : edited["backends"][2]["ops"]) {
    if (h["name"] == "h1.proj") h["sha256"] = std::string(64, '0');
  }
  const auto has = [](const std::vector<std::string>& lines,
                      const std::string& want) {
    for (const auto& l : lines) {
      if (l == want) return true;
    }
    return false;
  };
  const std::string name = r.backends[2].name;
  EXPECT_TRUE(bisect_backends(rec).empty());
  EXPECT_TRUE(has(bisect_backends(edited),
                  name + ": operations: first difference from the "
                         "reference operations at h1.proj"));
  EXPECT_TRUE(has(bisect_records(rec, edited),
                  name + ": operations: first difference at h1.proj"));
  EXPECT_TRUE(compare_records(rec, rec).empty());
  EXPECT_TRUE(has(compare_records(rec, edited),
                  name + ": operations: first difference from the record's "
                         "reference operations at h1.proj"));
}

// The CPU backend's observer (Gpt2Backend::set_observer, docs/verify.md
// "Per-operation bisect between backends"): its operations, their digests
// equal to the reference's, the unobserved bits, and a one-ulp change given
// to the CPU backend alone named at its operation.
const std::vector<std::string> kCpuShown = {
    "ln1", "qkv", "att_out", "proj", "res1", "ln2", "gelu", "mlp_out", "res2"};

std::vector<std::string> CpuShownNames(int n_layer) {
  std::vector<std::string> out{"embed"};
  for (int l = 0; l < n_layer; ++l) {
    for (const std::string& op : kCpuShown) {
      std::string name = "h";
      name += std::to_string(l);
      name += '.';
      name += op;
      out.push_back(name);
    }
  }
  out.push_back("ln_f");
  out.push_back("logits");
  return out;
}

TEST(VerifyBackendOps, CpuObserverMatchesTheReferenceAndNamesAChange) {
  const ls_gpt2_config c = kSmall;
  const std::vector<float> w = random_gpt2_weights(c, 3);
  std::vector<VerifyContext> ctx = SmallContexts(c);
  // One position: observed, it goes through the full pass as well.
  ctx.push_back({RandomTokens(c, 1, 7), "random"});
  const auto ref = reference_op_hashes(c, w.data(), w.size(), ctx);
  const std::vector<std::string> want_names = CpuShownNames(c.n_layer);
  for (const char* name : {"cpu-generic", "cpu"}) {
    for (int threads : {1, 2}) {
      auto b = make_gpt2_backend(name, c, w.data(), w.size(), threads, 0);
      const auto ops = backend_op_hashes(*b, c, ctx);
      ASSERT_EQ(ops.size(), want_names.size()) << b->name();
      for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i].name, want_names[i]) << b->name();
      }
      EXPECT_FALSE(first_shared_difference(ops, ref))
          << b->name() << ": " << *first_shared_difference(ops, ref);
      // The observer is off again, and observed or not the bits are the
      // same (every position's logits and the cache).
      const size_t row = ls_gpt2_cache_row_floats(&c);
      const size_t V = size_t(c.n_vocab);
      for (const VerifyContext& x : {ctx[2], ctx[4]}) {
        const size_t n = x.tokens.size();
        std::vector<float> c0(n * row), c1(n * row), l0(n * V), l1(n * V);
        ASSERT_EQ(b->prefill(c0.data(), c0.size(), 0, x.tokens.data(), int(n),
                             0, true, l0.data()),
                  LS_OK);
        int calls = 0;
        const ls_gpt2_observer count = [](void* u, int, ls_gpt2_tap, int, int,
                                          const float*,
                                          size_t) { ++*static_cast<int*>(u); };
        ASSERT_TRUE(b->set_observer(count, &calls));
        ASSERT_EQ(b->prefill(c1.data(), c1.size(), 0, x.tokens.data(), int(n),
                             0, true, l1.data()),
                  LS_OK);
        b->set_observer(nullptr, nullptr);
        EXPECT_EQ(calls, int(n) * int(want_names.size())) << b->name();
        EXPECT_TRUE(BytesEqual(l0, l1)) << b->name() << " n " << n;
        EXPECT_TRUE(BytesEqual(c0, c1)) << b->name() << " n " << n;
      }
    }
  }
  // The reference backend shows none.
  auto r = make_gpt2_backend("reference", c, w.data(), w.size(), 1, 0);
  EXPECT_TRUE(backend_op_hashes(*r, c, ctx).empty());
  // One ulp given to the CPU backend's weights only: named at the first
  // operation it shows that the change reaches (c_fc's bias: gelu, as the
  // CPU backend does not store c_fc before its GELU).
  const ls_gpt2_block b1 = ls_gpt2_block_offsets(&c, 1);
  const ls_gpt2_block b2 = ls_gpt2_block_offsets(&c, 2);
  struct Case {
    size_t index;
    const char* want;
  };
  for (const Case& k :
       {Case{b1.proj_b, "h1.proj"}, Case{b1.fc_b + 3, "h1.gelu"},
        Case{b2.ln1_g + 7, "h2.ln1"}, Case{b2.attn_b + 5, "h2.qkv"},
        Case{ls_gpt2_lnf_offset(&c) + 1, "ln_f"}}) {
    const std::vector<float> w2 = Nudged(w, k.index);
    auto b = make_gpt2_backend("cpu", c, w2.data(), w2.size(), 2, 0);
    const auto got =
        first_shared_difference(backend_op_hashes(*b, c, ctx), ref);
    ASSERT_TRUE(got) << k.want;
    EXPECT_EQ(*got, k.want);
  }
}

// int8: n_embd a multiple of 64.
constexpr ls_gpt2_config kSmallQ8 = {97, 24, 64, 4, 3};

// A binary32 word of an int8 payload, one ulp up.
std::vector<uint8_t> NudgedQ8(std::vector<uint8_t> q, size_t byte) {
  float f;
  std::memcpy(&f, q.data() + byte, 4);
  f = std::nextafter(f, INFINITY);
  std::memcpy(q.data() + byte, &f, 4);
  return q;
}

// ls_gpt2_q8_infer_observed: the int8 prefill's bits (with and without
// an observer), every binary32 tap with its shape, k | v taps equal to the
// cache words, res1 + mlp_out = res2, and the logits taps the logits.
TEST(VerifyQ8, ObservedPassSameBitsAsTheInt8PrefillAndTapsAreTheCacheWords) {
  const ls_gpt2_config c = kSmallQ8;
  const std::vector<float> f32 = random_gpt2_weights(c, 23);
  const std::vector<uint8_t> q = quantize_gpt2_q8(c, f32.data());
  const int n = 11;
  const std::vector<int32_t> tokens = RandomTokens(c, n, 6);
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, n));
  std::vector<float> observed(size_t(n) * size_t(c.n_vocab));
  Seen seen;
  ASSERT_EQ(ls_gpt2_q8_infer_observed(&c, q.data(), q.size(), tokens.data(), n,
                                      scratch.data(), scratch.size(),
                                      observed.data(), &Seen::observe, &seen),
            LS_OK);
  std::vector<float> cache(ls_gpt2_cache_floats(&c));
  std::vector<float> want(observed.size());
  ASSERT_EQ(ls_gpt2_q8_prefill(&c, q.data(), q.size(), cache.data(),
                               cache.size(), 0, tokens.data(), n, 0, 1,
                               scratch.data(), scratch.size(), want.data()),
            LS_OK);
  EXPECT_TRUE(BytesEqual(observed, want));
  std::vector<float> unobserved(observed.size());
  ASSERT_EQ(ls_gpt2_q8_infer_observed(&c, q.data(), q.size(), tokens.data(), n,
                                      scratch.data(), scratch.size(),
                                      unobserved.data(), nullptr, nullptr),
            LS_OK);
  EXPECT_TRUE(BytesEqual(unobserved, want));
  // The binary32 pass's taps on the same tokens: the same keys.
  Seen seen32;
  std::vector<float> logits32(observed.size());
  ASSERT_EQ(ls_gpt2_infer_observed(&c, f32.data(), f32.size(), tokens.data(), n,
                                   scratch.data(), scratch.size(),
                                   logits32.data(), &Seen::observe, &seen32),
            LS_OK);
  ASSERT_EQ(seen.rows.size(), seen32.rows.size());
  for (const auto& [key, row] : seen32.rows) {
    const auto it = seen.rows.find(key);
    ASSERT_NE(it, seen.rows.end()) << key;
    EXPECT_EQ(it->second.size(), row.size()) << key;
  }
  const size_t C = size_t(c.n_embd), V = size_t(c.n_vocab);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  for (int t = 0; t < n; ++t) {
    for (int l = 0; l < c.n_layer; ++l) {
      const std::vector<float>& qkv =
          seen.rows.at(Key(gpt2_op_name(l, LS_TAP_QKV), t));
      ASSERT_EQ(qkv.size(), 3 * C);
      EXPECT_TRUE(BytesEqual(qkv.data() + C,
                             cache.data() + size_t(t) * row + size_t(l) * 2 * C,
                             2 * C))
          << "layer " << l << " position " << t;
      for (int h = 0; h < c.n_head; ++h) {
        EXPECT_EQ(
            seen.rows.at(Key(gpt2_op_name(l, LS_TAP_ATT_PROB), t, h)).size(),
            size_t(t) + 1);
      }
      const auto& r1 = seen.rows.at(Key(gpt2_op_name(l, LS_TAP_RES1), t));
      const auto& mo = seen.rows.at(Key(gpt2_op_name(l, LS_TAP_MLP_OUT), t));
      const auto& r2 = seen.rows.at(Key(gpt2_op_name(l, LS_TAP_RES2), t));
      std::vector<float> sum(C);
      for (size_t i = 0; i < C; ++i) sum[i] = r1[i] + mo[i];
      EXPECT_TRUE(BytesEqual(sum, r2)) << "layer " << l << " position " << t;
    }
    EXPECT_TRUE(BytesEqual(seen.rows.at(Key("logits", t)).data(),
                           want.data() + size_t(t) * V, V));
  }
  // The unobserved full pass gives the last row.
  std::vector<float> last(V);
  ASSERT_EQ(ls_gpt2_q8_infer(&c, q.data(), q.size(), tokens.data(), n,
                             scratch.data(), scratch.size(), last.data()),
            LS_OK);
  EXPECT_TRUE(BytesEqual(last.data(), want.data() + size_t(n - 1) * V, V));
  // Its checks are ls_gpt2_q8_infer's.
  EXPECT_EQ(ls_gpt2_q8_infer_observed(
                &c, q.data(), q.size() - 64, tokens.data(), n, scratch.data(),
                scratch.size(), observed.data(), &Seen::observe, &seen),
            LS_ERR_WEIGHT_COUNT);
  EXPECT_EQ(ls_gpt2_q8_infer_observed(&c, q.data(), q.size(), tokens.data(), n,
                                      scratch.data(), scratch.size() - 1,
                                      observed.data(), &Seen::observe, &seen),
            LS_ERR_SCRATCH);
}

TEST(VerifyQ8, OperationDigestsFollowTheInt8PassAndBisect) {
  const ls_gpt2_config c = kSmallQ8;
  const std::vector<float> f32 = random_gpt2_weights(c, 21);
  const std::vector<uint8_t> q = quantize_gpt2_q8(c, f32.data());
  const auto ctx = SmallContexts(c);
  const auto base = reference_q8_op_hashes(c, q.data(), q.size(), ctx);
  // embed, 12 taps per layer, ln_f, logits: binary32's operations, name
  // for name and in the same order.
  ASSERT_EQ(base.size(), size_t(3 + 12 * c.n_layer));
  const auto f32_ops = reference_op_hashes(c, f32.data(), f32.size(), ctx);
  ASSERT_EQ(f32_ops.size(), base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    EXPECT_EQ(base[i].name, f32_ops[i].name) << i;
  }
  const std::vector<std::string> layer0 = {
      "h0.ln1",     "h0.qkv",  "h0.att_score", "h0.att_prob",
      "h0.att_out", "h0.proj", "h0.res1",      "h0.ln2",
      "h0.fc",      "h0.gelu", "h0.mlp_out",   "h0.res2"};
  EXPECT_EQ(base.front().name, "embed");
  for (size_t i = 0; i < layer0.size(); ++i) {
    EXPECT_EQ(base[1 + i].name, layer0[i]);
  }
  EXPECT_EQ(base[base.size() - 2].name, "ln_f");
  EXPECT_EQ(base.back().name, "logits");
  // int8 is not binary32: the qkv digests differ (the embeddings already).
  EXPECT_NE(base[2].sha256, f32_ops[2].sha256);
  // The logits digest is that of the int8 prefill's every-position logits
  // (ls_gpt2_q8_prefill, the core's entry) over the contexts.
  Sha256Hasher want;
  for (const auto& x : ctx) {
    const int n = int(x.tokens.size());
    std::vector<float> cache(ls_gpt2_cache_floats(&c));
    std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, n));
    std::vector<float> logits(size_t(n) * size_t(c.n_vocab));
    ASSERT_EQ(ls_gpt2_q8_prefill(&c, q.data(), q.size(), cache.data(),
                                 cache.size(), 0, x.tokens.data(), n, 0, 1,
                                 scratch.data(), scratch.size(), logits.data()),
              LS_OK);
    want.update(logits.data(), logits.size() * sizeof(float));
  }
  EXPECT_EQ(base.back().sha256, to_hex(want.finish()));
  EXPECT_FALSE(first_difference(
      base, reference_q8_op_hashes(c, q.data(), q.size(), ctx)));
  // One-ulp changes of binary32 words of the payload, and one level of a
  // quantized matrix, named by their operation.
  const ls_gpt2_q8_block b1 = ls_gpt2_q8_block_offsets(&c, 1);
  const ls_gpt2_q8_block b2 = ls_gpt2_q8_block_offsets(&c, 2);
  struct Case {
    std::vector<uint8_t> q;
    const char* want;
  };
  std::vector<Case> cases = {
      {NudgedQ8(q, b1.fc_b + 12), "h1.fc"},
      {NudgedQ8(q, b2.ln1_g + 28), "h2.ln1"},
      {NudgedQ8(q, b1.proj_b), "h1.proj"},
      {NudgedQ8(q, ls_gpt2_q8_lnf_offset(&c) + 4), "ln_f"}};
  std::vector<uint8_t> level = q;
  auto& lv = reinterpret_cast<int8_t&>(level[b2.attn_w + 5]);
  lv = int8_t(lv == 127 ? 126 : lv + 1);
  cases.push_back({level, "h2.qkv"});
  for (const Case& k : cases) {
    const auto got = first_difference(
        base, reference_q8_op_hashes(c, k.q.data(), k.q.size(), ctx));
    ASSERT_TRUE(got) << k.want;
    EXPECT_EQ(*got, k.want);
  }
  EXPECT_THROW(reference_q8_op_hashes(c, q.data(), q.size() - 64, ctx), Error);
}

// The CPU backend on int8 weights shows the same operations, with the
// int8 reference's digests.
TEST(VerifyQ8, CpuInt8ObserverMatchesTheInt8Reference) {
  const ls_gpt2_config c = kSmallQ8;
  const std::vector<float> f32 = random_gpt2_weights(c, 21);
  const std::vector<uint8_t> q = quantize_gpt2_q8(c, f32.data());
  const auto ctx = SmallContexts(c);
  const auto ref = reference_q8_op_hashes(c, q.data(), q.size(), ctx);
  for (const char* name : {"cpu-generic", "cpu"}) {
    auto b = make_gpt2_q8_backend(name, c, q.data(), q.size(), 2, 0);
    const auto ops = backend_op_hashes(*b, c, ctx);
    ASSERT_EQ(ops.size(), CpuShownNames(c.n_layer).size()) << b->name();
    EXPECT_FALSE(first_shared_difference(ops, ref)) << b->name();
  }
}

TEST(VerifyQ8, HfFixtureInt8ReferenceAndCpuInt8Agree) {
  const Gpt2Weights f32 =
      load_gpt2(std::string(LOCKSTEP_SOURCE_DIR) + "/tests/data/hf-gpt2-A");
  const std::string path =
      (std::filesystem::temp_directory_path() /
       ("verify_test_q8_" + std::to_string(getpid()) + ".lockstep"))
          .string();
  write_gpt2_q8(path, f32.config, f32.data());
  const Gpt2Weights w = load_gpt2_q8(path);
  std::filesystem::remove(path);  // mapped: the pages stay
  ASSERT_EQ(w.quant, "int8");
  const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
  VerifyOptions o;
  o.contexts = 3;
  o.max_length = 12;
  o.seed = 9;
  // The int8 reference, the generic int8 table and the best this CPU has.
  o.backends = {"reference", "cpu-generic", "cpu"};
  o.threads = {1, 3};
  o.completion_tokens = 4;
  std::string text(8192, 'a');
  for (size_t i = 0; i < text.size(); ++i) text[i] = " etaoinshrd\n"[i % 12];
  const auto ctx = make_verify_contexts(w.config, tok, text, o);
  const VerifyResult r = run_verify(w, "", ctx, tok, o);
  EXPECT_EQ(r.mismatches, 0u) << (r.first ? r.first->describe() : "");
  ASSERT_EQ(r.backends.size(), 5u);
  EXPECT_EQ(r.backends[0].name, "reference (int8)");
  EXPECT_EQ(r.backends[2].threads, 3);
  EXPECT_NE(r.backends[1].name.find("int8"), std::string::npos)
      << r.backends[1].name;
  const size_t V = size_t(w.config.n_vocab);
  const uint64_t P = r.positions;
  EXPECT_EQ(r.logits_compared, (5 * (2 * P + 3) + 4 * P + P) * V);
  for (const auto& b : r.backends) {
    EXPECT_EQ(b.logits_sha256, r.backends[0].logits_sha256) << b.name;
    EXPECT_FALSE(first_difference(b.cache, r.backends[0].cache)) << b.name;
    EXPECT_EQ(b.completions[0].tokens, r.backends[0].completions[0].tokens);
  }
  ASSERT_EQ(r.ops.size(), size_t(3 + 12 * w.config.n_layer));
  EXPECT_EQ(r.ops.back().sha256, r.backends[0].logits_sha256);
  // Not binary32's: the same contexts on the binary32 weights give other
  // logits, over the same operations.
  VerifyOptions o32 = o;
  o32.backends = {"reference"};
  o32.completion_tokens = 0;
  const VerifyResult r32 = run_verify(f32, "", ctx, tok, o32);
  EXPECT_EQ(r32.mismatches, 0u);
  EXPECT_NE(r32.backends[0].logits_sha256, r.backends[0].logits_sha256);
  ASSERT_EQ(r32.ops.size(), r.ops.size());
  for (size_t i = 0; i < r.ops.size(); ++i) {
    EXPECT_EQ(r.ops[i].name, r32.ops[i].name) << i;
  }
}

}  // namespace
}  // namespace lockstep
