// The grouped int8 GPT-2 (docs/arithmetic.md §7, docs/int8.md): the cached
// step, the full-prefix pass and the batched prefill give the same logits
// and cache words, byte for byte, on seeded random models and the Hugging
// Face fixture, in any chunking; the weights' checks; non-finite
// activations as a status; the int8 file (write, load, convert from every
// binary32 source, refusal of damaged files) and, labelled slow, the size
// of a full 124M file against the binary32 file.
#include "formats/gpt2_q8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "ls_gpt2.h"
#include "ls_gpt2_q8.h"
#include "ls_q8.h"
#include "tests/gpt2_test_util.h"

namespace {

namespace fs = std::filesystem;
using namespace lockstep;        // NOLINT
using namespace lockstep::test;  // NOLINT: BytesEqual, RandomTokens

const std::string kHf = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Model {
  ls_gpt2_config c;
  std::vector<float> f32;   // plain binary32
  std::vector<uint8_t> q8;  // quantized
};

Model RandomModel(const ls_gpt2_config& c, uint64_t seed) {
  Model m{c, random_gpt2_weights(c, seed), {}};
  m.q8 = quantize_gpt2_q8(c, m.f32.data());
  return m;
}

Model HfModel() {
  const Gpt2Weights w = load_gpt2(kHf);
  Model m{w.config, std::vector<float>(w.data(), w.data() + w.words()), {}};
  m.q8 = quantize_gpt2_q8(m.c, m.f32.data());
  return m;
}

// Cached steps over every token: each position's logits and the cache.
struct Trace {
  std::vector<float> logits;  // [n][V]
  std::vector<float> cache;   // [n][row]
};

Trace Steps(const Model& m, const std::vector<int32_t>& tokens) {
  const ls_gpt2_config& c = m.c;
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  Trace r;
  r.cache.assign(tokens.size() * row, kNaN);
  r.logits.resize(tokens.size() * V);
  std::vector<float> scratch(ls_gpt2_step_scratch_floats(&c), kNaN);
  for (size_t p = 0; p < tokens.size(); ++p) {
    EXPECT_EQ(LS_OK, ls_gpt2_q8_step(&c, m.q8.data(), m.q8.size(),
                                     r.cache.data(), r.cache.size(), p * row,
                                     tokens[p], int32_t(p), scratch.data(),
                                     scratch.size(), r.logits.data() + p * V))
        << "step at " << p;
  }
  return r;
}

// Prefill in the given chunk sizes (cycled), every position's logits.
Trace Prefill(const Model& m, const std::vector<int32_t>& tokens,
              const std::vector<int>& chunks) {
  const ls_gpt2_config& c = m.c;
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  Trace r;
  r.cache.assign(tokens.size() * row, kNaN);
  r.logits.resize(tokens.size() * V);
  size_t done = 0;
  for (size_t i = 0; done < tokens.size(); ++i) {
    const int n =
        std::min(chunks[i % chunks.size()], int(tokens.size() - done));
    std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, n), kNaN);
    EXPECT_EQ(LS_OK,
              ls_gpt2_q8_prefill(
                  &c, m.q8.data(), m.q8.size(), r.cache.data(), r.cache.size(),
                  done * row, tokens.data() + done, n, int32_t(done), 1,
                  scratch.data(), scratch.size(), r.logits.data() + done * V))
        << "prefill of " << n << " at " << done;
    done += size_t(n);
  }
  return r;
}

void CheckSchedules(const Model& m, int n, uint64_t seed) {
  const std::vector<int32_t> tokens = RandomTokens(m.c, n, seed);
  const Trace steps = Steps(m, tokens);
  const size_t V = size_t(m.c.n_vocab);
  // The full-prefix pass at a few lengths: the last position's logits.
  for (int len : {1, 2, n / 2 + 1, n}) {
    std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&m.c, len), kNaN);
    std::vector<float> logits(V);
    ASSERT_EQ(LS_OK, ls_gpt2_q8_infer(&m.c, m.q8.data(), m.q8.size(),
                                      tokens.data(), len, scratch.data(),
                                      scratch.size(), logits.data()));
    EXPECT_TRUE(
        BytesEqual(logits.data(), steps.logits.data() + (len - 1) * V, V))
        << "full pass of " << len;
  }
  std::mt19937_64 rng(seed + 1);
  std::vector<int> ragged;
  for (int i = 0; i < 8; ++i) ragged.push_back(1 + int(rng() % 7));
  for (const std::vector<int>& chunks :
       {std::vector<int>{n}, {1}, {3}, {n / 2, 1}, ragged}) {
    const Trace p = Prefill(m, tokens, chunks);
    EXPECT_TRUE(BytesEqual(p.logits, steps.logits))
        << "prefill chunks " << chunks[0];
    EXPECT_TRUE(BytesEqual(p.cache, steps.cache))
        << "prefill chunks " << chunks[0];
  }
  // Last-position logits only, after a partly filled cache.
  const size_t row = ls_gpt2_cache_row_floats(&m.c);
  std::vector<float> cache(steps.cache.begin(),
                           steps.cache.begin() + long((n - 4) * row));
  cache.resize(size_t(n) * row, kNaN);
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&m.c, 4), kNaN);
  std::vector<float> last(V);
  ASSERT_EQ(LS_OK,
            ls_gpt2_q8_prefill(&m.c, m.q8.data(), m.q8.size(), cache.data(),
                               cache.size(), size_t(n - 4) * row,
                               tokens.data() + n - 4, 4, n - 4, 0,
                               scratch.data(), scratch.size(), last.data()));
  EXPECT_TRUE(BytesEqual(last.data(), steps.logits.data() + (n - 1) * V, V));
  EXPECT_TRUE(BytesEqual(cache, steps.cache));
}

TEST(Gpt2Q8Schedules, RandomModelsStepFullPassAndPrefillAgree) {
  CheckSchedules(RandomModel({300, 24, 64, 4, 2}, 11), 24, 12);
  CheckSchedules(RandomModel({129, 16, 128, 2, 1}, 13), 16, 14);
  CheckSchedules(RandomModel({64, 12, 192, 3, 1}, 15), 12, 16);
}

TEST(Gpt2Q8Schedules, HfFixtureStepFullPassAndPrefillAgree) {
  CheckSchedules(HfModel(), 20, 17);
}

// A prompt longer than the core's chunk of quantized positions (60 for
// K = 4C = 256: the MLP's c_proj input), so that the one-call prefill and
// the full pass multiply in chunks of 60 and a remainder.
TEST(Gpt2Q8Schedules, LongPromptCrossesTheQuantizedChunk) {
  CheckSchedules(RandomModel({97, 130, 64, 4, 1}, 18), 130, 19);
}

// The multi-position entry (ls_q8_matmul, which the batched passes call and
// the WebAssembly SIMD module replaces) gives, for each position, the bytes
// of ls_q8_matvec on that position alone: seeded random matrices (full and
// partial panels), inputs of mixed magnitudes with all-zero groups, with and
// without bias, 1 to 70 positions.
TEST(Gpt2Q8Matmul, EqualsOneMatvecPerPosition) {
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-20, 20);
  for (const auto& [K, N] : {std::pair<int, int>{64, 1},
                             {64, 17},
                             {128, 64},
                             {192, 100},
                             {768, 130},
                             {256, 64}}) {
    std::vector<float> w(static_cast<size_t>(K * N));
    std::vector<float> b(static_cast<size_t>(N));
    for (auto& v : w) v = std::ldexp(u(rng), e(rng) / 4);
    for (auto& v : b) v = u(rng);
    std::vector<uint8_t> m(ls_q8_matrix_bytes(size_t(K), size_t(N)));
    ASSERT_EQ(LS_OK, ls_q8_pack(w.data(), size_t(K), size_t(N), size_t(N), 1, 0,
                                size_t(N), m.data()));
    for (int n : {1, 2, 3, 4, 5, 7, 8, 13, 70}) {
      SCOPED_TRACE(::testing::Message()
                   << "K " << K << " N " << N << " n " << n);
      const int G = K / 64;
      std::vector<int8_t> qx(static_cast<size_t>(n * K));
      std::vector<float> sx(static_cast<size_t>(n * G));
      std::vector<float> x(static_cast<size_t>(K));
      for (int t = 0; t < n; ++t) {
        for (auto& v : x) v = std::ldexp(u(rng), e(rng));
        if (t % 3 == 1) std::fill(x.begin(), x.begin() + 64, 0.0f);
        ASSERT_EQ(LS_OK, ls_q8_quantize(x.data(), K, qx.data() + t * K,
                                        sx.data() + t * G));
      }
      for (const float* bias : {static_cast<const float*>(b.data()),
                                static_cast<const float*>(nullptr)}) {
        std::vector<float> got(size_t(n) * size_t(N), kNaN), want = got;
        ls_q8_matmul(qx.data(), sx.data(), n, m.data(), K, N, bias, got.data());
        for (int t = 0; t < n; ++t) {
          ls_q8_matvec(qx.data() + t * K, sx.data() + t * G, m.data(), K, N,
                       bias, want.data() + size_t(t) * size_t(N));
        }
        EXPECT_TRUE(BytesEqual(got, want)) << (bias ? "bias" : "no bias");
      }
    }
  }
}

TEST(Gpt2Q8Layout, SizesOfTheReleasedModels) {
  // Every tensor of 124M: the int8 matrices N (K + 2K/64) bytes, wte padded
  // to 64 bytes, the binary32 tensors 4 bytes a word (docs/int8.md).
  EXPECT_EQ(128688832u, ls_gpt2_q8_bytes(&kGpt2_124M));
  for (const ls_gpt2_config& c :
       {kGpt2_124M, kGpt2_355M, kGpt2_774M, kGpt2_1558M}) {
    const auto table = gpt2_q8_tensor_table(c);  // throws unless it tiles
    EXPECT_EQ(table.size(), gpt2_tensor_table(c).size());
    EXPECT_LE(double(ls_gpt2_q8_bytes(&c)),
              0.26 * double(ls_gpt2_param_count(&c)) * 4);
  }
  ls_gpt2_config odd = {300, 24, 96, 4, 2};  // n_embd not a multiple of 64
  EXPECT_FALSE(ls_gpt2_q8_config_valid(&odd));
  EXPECT_THROW(gpt2_q8_tensor_table(odd), Error);
}

TEST(Gpt2Q8Checks, ArgumentsAndWeights) {
  const Model m = RandomModel({300, 24, 64, 4, 2}, 21);
  const ls_gpt2_config& c = m.c;
  EXPECT_TRUE(ls_gpt2_q8_weights_valid(&c, m.q8.data(), m.q8.size()));
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, 4));
  std::vector<float> logits(size_t(c.n_vocab));
  const int32_t tokens[] = {1, 2, 300, 4};
  EXPECT_EQ(LS_ERR_TOKEN,
            ls_gpt2_q8_infer(&c, m.q8.data(), m.q8.size(), tokens, 4,
                             scratch.data(), scratch.size(), logits.data()));
  EXPECT_EQ(LS_ERR_WEIGHT_COUNT,
            ls_gpt2_q8_infer(&c, m.q8.data(), m.q8.size() - 64, tokens, 2,
                             scratch.data(), scratch.size(), logits.data()));
  EXPECT_EQ(LS_ERR_SCRATCH,
            ls_gpt2_q8_infer(&c, m.q8.data(), m.q8.size(), tokens, 2,
                             scratch.data(), 10, logits.data()));
  const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c, 1);
  std::vector<uint8_t> bad = m.q8;
  bad[b.fc_w + 100] = 0x80;  // a level -128
  EXPECT_FALSE(ls_gpt2_q8_weights_valid(&c, bad.data(), bad.size()));
  bad = m.q8;
  std::memcpy(&bad[b.out_b + 8], &kNaN, 4);
  EXPECT_FALSE(ls_gpt2_q8_weights_valid(&c, bad.data(), bad.size()));
  bad = m.q8;
  bad[b.attn_w + ls_q8_scale_index(64, 192, 5, 0) + 1] |= 0x80;  // negative
  EXPECT_FALSE(ls_gpt2_q8_weights_valid(&c, bad.data(), bad.size()));
  bad = m.q8;
  bad[ls_q8_matrix_bytes(64, 300)] = 1;  // wte's padding
  EXPECT_FALSE(ls_gpt2_q8_weights_valid(&c, bad.data(), bad.size()));
}

TEST(Gpt2Q8Checks, NonFiniteActivationsGiveAStatus) {
  // ln_1's gains at 3e38 make LayerNorm overflow to infinity: the c_attn
  // input is not finite, so every entry stops with status 10 (§7.2).
  Model m = RandomModel({300, 24, 64, 4, 2}, 22);
  const ls_gpt2_block b = ls_gpt2_block_offsets(&m.c, 0);
  for (int i = 0; i < m.c.n_embd; ++i) m.f32[b.ln1_g + size_t(i)] = 3e38f;
  m.q8 = quantize_gpt2_q8(m.c, m.f32.data());
  const size_t row = ls_gpt2_cache_row_floats(&m.c);
  std::vector<float> cache(2 * row), logits(size_t(m.c.n_vocab));
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&m.c, 2));
  EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE,
            ls_gpt2_q8_step(&m.c, m.q8.data(), m.q8.size(), cache.data(),
                            cache.size(), 0, 5, 0, scratch.data(),
                            scratch.size(), logits.data()));
  const int32_t tokens[] = {5, 6};
  EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE,
            ls_gpt2_q8_prefill(&m.c, m.q8.data(), m.q8.size(), cache.data(),
                               cache.size(), 0, tokens, 2, 0, 1, scratch.data(),
                               scratch.size(), logits.data()));
  EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE,
            ls_gpt2_q8_infer(&m.c, m.q8.data(), m.q8.size(), tokens, 2,
                             scratch.data(), scratch.size(), logits.data()));
}

// Only one position of a batch not finite: wpe's row 1 at 3e38 makes
// position 1's LayerNorm overflow, so its c_attn input is not finite and
// its outputs NaN, while position 0 in the same batched product is
// untouched: an every-position prefill of positions 0..2 stops with status
// 10 at position 1, having written position 0's logits, which equal the
// step's.
TEST(Gpt2Q8Checks, OneNonFinitePositionInABatch) {
  Model m = RandomModel({300, 24, 64, 4, 2}, 24);
  const size_t wpe = ls_gpt2_wpe_offset(&m.c), C = size_t(m.c.n_embd);
  for (size_t i = 0; i < C; ++i) m.f32[wpe + C + i] = 3e38f;
  m.q8 = quantize_gpt2_q8(m.c, m.f32.data());
  const std::vector<int32_t> tokens = {5, 6, 7};
  const Trace step0 = Steps(m, {tokens[0]});
  const size_t row = ls_gpt2_cache_row_floats(&m.c), V = size_t(m.c.n_vocab);
  std::vector<float> cache(3 * row, kNaN), logits(3 * V, kNaN);
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&m.c, 3), kNaN);
  EXPECT_EQ(LS_ERR_OUTPUT_NONFINITE,
            ls_gpt2_q8_prefill(&m.c, m.q8.data(), m.q8.size(), cache.data(),
                               cache.size(), 0, tokens.data(), 3, 0, 1,
                               scratch.data(), scratch.size(), logits.data()));
  EXPECT_TRUE(BytesEqual(logits.data(), step0.logits.data(), V));
  EXPECT_TRUE(BytesEqual(cache.data(), step0.cache.data(), row));
}

TEST(Gpt2Q8Model, EmbeddingIsTheDequantizedRowsSum) {
  // §7.4 through a one-token step's observable: the quantized wte row's
  // dequantized values, checked against the matrix helper (q8_ops_test
  // checks that helper against the spec written out).
  const Model m = RandomModel({300, 24, 64, 4, 2}, 23);
  const size_t C = 64;
  std::vector<float> te(C), pe(C);
  ls_q8_column(m.q8.data(), C, 300, 123, te.data());
  ls_q8_column(m.q8.data() + ls_gpt2_q8_wpe_offset(&m.c), C, 24, 7, pe.data());
  for (size_t i = 0; i < C; ++i) {
    // Each dequantized value is within half a level of the binary32 weight.
    const float s_te = std::fabs(te[i] - m.f32[123 * C + i]);
    EXPECT_LE(s_te, 0.1f / 127 * 0.5f + 1e-9f) << i;  // |wte| <= 0.1
    const float s_pe = std::fabs(pe[i] - m.f32[300 * C + 7 * C + i]);
    EXPECT_LE(s_pe, 0.02f / 127 * 0.5f + 1e-9f) << i;  // |wpe| <= 0.02
  }
}

TEST(Gpt2Q8Session, ReferenceAndCpuGiveTheCoreBits) {
  // Gpt2Session on int8 weights: "reference" and "cpu" (the int8
  // reference until a fast path exists, named so) return the core's step
  // bits through a chunked prefill and then steps.
  const Model m = RandomModel({300, 24, 64, 4, 2}, 51);
  const std::vector<int32_t> tokens = RandomTokens(m.c, 12, 52);
  const Trace want = Steps(m, tokens);
  const size_t V = size_t(m.c.n_vocab);
  const Gpt2View view{m.c,         nullptr,    0, LS_GPT2_LAYOUT_PLAIN,
                      m.q8.data(), m.q8.size()};
  for (const char* name : {"reference", "cpu"}) {
    SCOPED_TRACE(name);
    Gpt2Session s(view, Gpt2SessionOptions{name, 2, 5});
    EXPECT_NE(std::string::npos, s.backend_name().find("int8"));
    const std::span<const float> p = s.prefill({tokens.data(), 7}, true);
    ASSERT_EQ(7 * V, p.size());
    EXPECT_TRUE(BytesEqual(p.data(), want.logits.data(), 7 * V));
    for (size_t t = 7; t < tokens.size(); ++t) {
      const std::span<const float> l = s.step(tokens[t]);
      EXPECT_TRUE(BytesEqual(l.data(), want.logits.data() + t * V, V)) << t;
    }
    const std::span<const float> cache = s.cache();
    EXPECT_TRUE(BytesEqual(cache.data(), want.cache.data(), want.cache.size()));
    EXPECT_EQ(m.q8.size(), s.memory().weights);
  }
  EXPECT_THROW(Gpt2Session(view, Gpt2SessionOptions{"cuda", 1, 5}), Error);
  Gpt2View short_view = view;
  short_view.q8_bytes -= 64;
  EXPECT_THROW(Gpt2Session(short_view, Gpt2SessionOptions{"reference", 1, 5}),
               Error);
}

// ------------------------------------------------------------ the file

class Gpt2Q8File : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep_q8_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ / name; }
  fs::path dir_;
};

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             std::streamsize(bytes.size()));
}

TEST_F(Gpt2Q8File, ConvertFromEverySourceGivesOnePayload) {
  const Model m = HfModel();
  const std::string plain = Path("a.lockstep"), panels = Path("p.lockstep");
  convert_gpt2(kHf, plain, LS_GPT2_LAYOUT_PLAIN);
  convert_gpt2(kHf, panels, LS_GPT2_LAYOUT_PANEL64);
  const std::string binary32_plain = load_gpt2(plain).payload_sha256;
  for (const std::string& src : {kHf, plain, panels}) {
    SCOPED_TRACE(src);
    const std::string out = Path("q8.lockstep");
    convert_gpt2_q8(src, out);
    EXPECT_TRUE(is_gpt2_q8_file(out));
    const Gpt2Weights w = load_gpt2_q8(out);
    EXPECT_EQ("int8", w.quant);
    EXPECT_EQ(nullptr, w.data());
    EXPECT_EQ(0u, w.words());
    ASSERT_EQ(m.q8.size(), w.q8_bytes());
    EXPECT_EQ(0, std::memcmp(m.q8.data(), w.q8_data(), m.q8.size()));
    EXPECT_EQ(0u, reinterpret_cast<uintptr_t>(w.q8_data()) % 64);
    EXPECT_EQ(to_hex(sha256(m.q8.data(), m.q8.size())), w.payload_sha256);
    EXPECT_EQ(binary32_plain, w.plain_sha256);
    // The binary32 loader refuses it rather than read bytes as floats.
    EXPECT_THROW(load_gpt2(out), Error);
    // Re-quantizing is refused.
    EXPECT_THROW(convert_gpt2_q8(out, Path("again.lockstep")), Error);
  }
  EXPECT_FALSE(is_gpt2_q8_file(plain));
  EXPECT_FALSE(is_gpt2_q8_file(kHf));
}

// The message of load_gpt2_q8 on `path`, or "" when it loads.
std::string LoadError(const std::string& path, bool verify = true) {
  try {
    load_gpt2_q8(path, verify);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(Gpt2Q8File, DamagedFilesAreRefusedWithAReason) {
  const Model m = RandomModel({300, 24, 64, 4, 2}, 31);
  const std::string good = Path("good.lockstep");
  write_gpt2_q8(good, m.c, m.f32.data());
  ASSERT_EQ("", LoadError(good));
  const std::vector<uint8_t> bytes = ReadAll(good);
  const size_t payload = bytes.size() - m.q8.size();
  ASSERT_EQ(0u, payload % 64);

  const std::string bad = Path("bad.lockstep");
  std::vector<uint8_t> b = bytes;
  b.resize(bytes.size() - 100);  // truncated
  WriteAll(bad, b);
  EXPECT_NE(std::string::npos, LoadError(bad).find("truncated"))
      << LoadError(bad);

  b = bytes;
  b[payload + 1000] ^= 1;  // a flipped bit in the payload
  WriteAll(bad, b);
  EXPECT_NE(std::string::npos, LoadError(bad).find("SHA-256"))
      << LoadError(bad);

  b = bytes;
  const ls_gpt2_q8_block blk = ls_gpt2_q8_block_offsets(&m.c, 0);
  b[payload + blk.proj_w + 5] = 0x80;  // -128, digest not checked
  WriteAll(bad, b);
  EXPECT_NE(std::string::npos, LoadError(bad, false).find("-128"))
      << LoadError(bad, false);

  const std::string header(bytes.begin() + 56, bytes.begin() + long(payload));
  auto with_header = [&](const std::string& from, const std::string& to) {
    std::string h = header;
    const size_t at = h.find(from);
    EXPECT_NE(std::string::npos, at) << from;
    h.replace(at, from.size(), to);
    std::vector<uint8_t> out(bytes.begin(), bytes.begin() + 56);
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), bytes.begin() + long(payload), bytes.end());
    WriteAll(bad, out);
    return LoadError(bad);
  };
  EXPECT_NE(std::string::npos,
            with_header("\"q8panel64\"", "\"q8panel32\"").find("layout"));
  EXPECT_NE(std::string::npos,
            with_header("\"n_layer\":2", "\"n_layer\":3").find("bytes"));
  EXPECT_NE(std::string::npos,
            with_header("\"name\":\"h0.ln_1.b\"", "\"name\":\"h0.ln_1.c\"")
                .find("tensor table entry"));
  EXPECT_EQ("", LoadError(good));
}

// The full-size 124M file: at most 26% of the binary32 packed file
// (labelled slow in tests/CMakeLists.txt: two files of 0.5 GB and 0.13 GB).
TEST_F(Gpt2Q8File, Slow124MFileIsAtMost26PercentOfBinary32) {
  const ls_gpt2_config c = kGpt2_124M;
  const std::vector<float> w = random_gpt2_weights(c, 20261201);
  const std::string f32 = Path("f32.lockstep"), q8 = Path("q8.lockstep");
  write_gpt2_packed(f32, c, w.data(), w.size());
  convert_gpt2_q8(f32, q8);
  const double ratio = double(fs::file_size(q8)) / double(fs::file_size(f32));
  std::printf("124M: binary32 %ju bytes, int8 %ju bytes, %.4f%%\n",
              uintmax_t(fs::file_size(f32)), uintmax_t(fs::file_size(q8)),
              100 * ratio);
  EXPECT_LE(ratio, 0.26);
  const Gpt2Weights l = load_gpt2_q8(q8);
  EXPECT_EQ(ls_gpt2_q8_bytes(&c), l.q8_bytes());
}

// ------------------------------------------------------------ quality
// Not a test (DISABLED_: run with --gtest_also_run_disabled_tests
// --gtest_filter=*Measure*): the numbers docs/int8.md records. Greedy
// agreement with binary32 over 128 seeded prefixes of 8 tokens (16 tokens
// generated each), top-1 agreement at every position of one 128-token
// sequence, and the largest logit error there.
int Argmax(const float* v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) best = v[i] > v[best] ? i : best;
  return int(best);
}

void Measure(const char* name, const Model& m, int prefixes = 128,
             int kGen = 16, int positions = 128) {
  const ls_gpt2_config& c = m.c;
  const size_t V = size_t(c.n_vocab), row = ls_gpt2_cache_row_floats(&c);
  const int n = std::min(positions, c.n_ctx);
  const std::vector<int32_t> seq = RandomTokens(c, n, 99);
  std::vector<float> s32(ls_gpt2_infer_scratch_floats(&c, n));
  std::vector<float> cache(size_t(n) * row), l32(size_t(n) * V),
      l8(size_t(n) * V);
  ASSERT_EQ(LS_OK, ls_gpt2_prefill(&c, m.f32.data(), m.f32.size(), cache.data(),
                                   cache.size(), 0, seq.data(), n, 0, 1,
                                   s32.data(), s32.size(), l32.data()));
  ASSERT_EQ(LS_OK,
            ls_gpt2_q8_prefill(&c, m.q8.data(), m.q8.size(), cache.data(),
                               cache.size(), 0, seq.data(), n, 0, 1, s32.data(),
                               s32.size(), l8.data()));
  int top1 = 0;
  double err = 0, mag = 0;
  for (int t = 0; t < n; ++t) {
    top1 += Argmax(&l32[size_t(t) * V], V) == Argmax(&l8[size_t(t) * V], V);
  }
  for (size_t i = 0; i < l32.size(); ++i) {
    err = std::max(err, double(std::fabs(l32[i] - l8[i])));
    mag = std::max(mag, double(std::fabs(l32[i])));
  }
  // Greedy continuations.
  int same = 0;
  const int kPrefix = 8;
  std::vector<float> step(ls_gpt2_step_scratch_floats(&c)), l(V);
  for (int p = 0; p < prefixes; ++p) {
    const std::vector<int32_t> prefix = RandomTokens(c, kPrefix, 1000 + p);
    std::vector<int32_t> out[2];
    for (int q = 0; q < 2; ++q) {
      std::vector<float> kv(size_t(kPrefix + kGen) * row);
      int32_t tok = 0;
      for (int i = 0; i < kPrefix + kGen - 1; ++i) {
        tok = i < kPrefix ? prefix[size_t(i)] : tok;
        const ls_status st =
            q == 0 ? ls_gpt2_step(&c, m.f32.data(), m.f32.size(), kv.data(),
                                  kv.size(), size_t(i) * row, tok, i,
                                  step.data(), step.size(), l.data())
                   : ls_gpt2_q8_step(&c, m.q8.data(), m.q8.size(), kv.data(),
                                     kv.size(), size_t(i) * row, tok, i,
                                     step.data(), step.size(), l.data());
        ASSERT_EQ(LS_OK, st);
        if (i >= kPrefix - 1) {
          tok = Argmax(l.data(), V);
          out[q].push_back(tok);
        }
      }
    }
    same += out[0] == out[1];
  }
  std::printf(
      "%s: greedy %d/%d prefixes agree over %d tokens; top-1 %d/%d "
      "positions; largest |logit error| %.4g (largest |logit| %.4g)\n",
      name, same, prefixes, kGen, top1, n, err, mag);
}

TEST(Gpt2Q8Quality, DISABLED_MeasureAgreementWithBinary32) {
  Measure("HF fixture hf-gpt2-A", HfModel());
  Measure("random {V 2000, T 128, C 128, H 4, L 2}",
          RandomModel({2000, 128, 128, 4, 2}, 41));
}

// A random 124M (docs/gpt2-format.md "Random checkpoints"), fewer prefixes
// to keep the run short (the scalar references: about 0.15 s a token).
TEST(Gpt2Q8Quality, DISABLED_Measure124MAgreementWithBinary32) {
  Measure("random 124M (seed 20261201)", RandomModel(kGpt2_124M, 20261201), 16,
          8, 64);
}

}  // namespace
