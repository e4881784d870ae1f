// The panel64 weight layout on disk (docs/gpt2-format.md "Weight layouts"):
// the permutation (core/ls_gpt2_layout.h) against its documented index
// formula and back, ragged last panels included; packed files in that
// layout written, read in place from the mapping, converted both ways byte
// for byte; every backend and thread count giving the same logits and cache
// words on the panel64 file as on the plain file (cached steps, full-prefix
// passes, Gpt2Session::prefill); damaged files rejected with named errors;
// the alignment of every panel for the GPT-2 sizes; the memory plan.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "formats/checkpoint.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"

namespace {

namespace fs = std::filesystem;
using lockstep::Gpt2Session;
using lockstep::Gpt2SessionOptions;
using lockstep::Gpt2View;
using lockstep::Gpt2Weights;

// memcmp-equality of float arrays; on failure the first differing index
// with both values' bits in hex.
::testing::AssertionResult WordsEqual(const float* got, const float* want,
                                      size_t n) {
  if (n == 0 || std::memcmp(got, want, n * 4) == 0) {
    return ::testing::AssertionSuccess();
  }
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = std::bit_cast<uint32_t>(got[i]);
    const uint32_t y = std::bit_cast<uint32_t>(want[i]);
    if (x != y) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "first difference at index %zu of %zu: got 0x%08x (%a), "
                    "want 0x%08x (%a)",
                    i, n, x, double(got[i]), y, double(want[i]));
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionFailure() << "unreachable";
}

::testing::AssertionResult BytesEqual(const std::vector<uint8_t>& got,
                                      const std::vector<uint8_t>& want) {
  if (got == want) return ::testing::AssertionSuccess();
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "sizes " << got.size() << " and " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      char buf[120];
      std::snprintf(buf, sizeof buf,
                    "first difference at byte %zu: got 0x%02x, want 0x%02x", i,
                    got[i], want[i]);
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionFailure() << "unreachable";
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> b(fs::file_size(path));
  in.read(reinterpret_cast<char*>(b.data()), std::streamsize(b.size()));
  return b;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// Random bit patterns that are finite floats.
std::vector<float> RandomWords(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> w(n);
  for (auto& x : w) {
    uint32_t bits = uint32_t(rng());
    if ((bits & 0x7f800000u) == 0x7f800000u) bits &= 0xbfffffffu;
    x = std::bit_cast<float>(bits);
  }
  return w;
}

std::string Message(const std::function<void()>& f) {
  try {
    f();
  } catch (const lockstep::Error& e) {
    return e.what();
  }
  return "(no error)";
}

class LayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep_layout_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }
  fs::path dir_;
};

// Ragged everywhere: V = 300 (last head panel 44 wide), C = 40 (c_attn
// 120 = 64 + 56, c_proj 40, c_fc 160 = 2 * 64 + 32).
constexpr ls_gpt2_config kRagged = {300, 24, 40, 2, 2};

TEST(Permutation, RoundTripsAndFollowsTheDocumentedIndex) {
  const ls_gpt2_config configs[] = {
      kRagged,           {64, 8, 64, 4, 1},   {65, 4, 16, 1, 3},
      {1, 1, 4, 1, 1},   {130, 16, 48, 3, 2}, {513, 3, 24, 8, 1},
      {200, 5, 72, 6, 2}};
  uint64_t seed = 1;
  for (const ls_gpt2_config& c : configs) {
    SCOPED_TRACE("n_vocab " + std::to_string(c.n_vocab) + " n_embd " +
                 std::to_string(c.n_embd));
    ASSERT_TRUE(ls_gpt2_config_valid(&c));
    const size_t n = ls_gpt2_param_count(&c);
    const std::vector<float> plain = RandomWords(n, seed++);
    std::vector<float> panels(n), back(n);
    ls_gpt2_to_panels(&c, plain.data(), panels.data());
    ls_gpt2_from_panels(&c, panels.data(), back.data());
    EXPECT_TRUE(WordsEqual(back.data(), plain.data(), n));
    // Every word where docs/gpt2-format.md puts it, and the inverse.
    std::vector<float> expect(n);
    for (const auto& t : lockstep::gpt2_tensor_table(c)) {
      for (uint64_t i = 0; i < t.words(); ++i) {
        const uint64_t s = lockstep::gpt2_panel64_index(c, t, i);
        ASSERT_LT(s, t.words()) << t.name << " " << i;
        ASSERT_EQ(lockstep::gpt2_panel64_plain_index(c, t, s), i) << t.name;
        expect[t.offset + s] = plain[t.offset + i];
      }
    }
    EXPECT_TRUE(WordsEqual(panels.data(), expect.data(), n));
    // The documented formula for W [K, N] and wte, spelled out once more.
    const size_t C = size_t(c.n_embd), V = size_t(c.n_vocab);
    for (size_t v = 0; v < V; v += 7) {
      for (size_t k = 0; k < C; k += 3) {
        const size_t c0 = v / 64 * 64, pw = std::min<size_t>(64, V - c0);
        ASSERT_EQ(std::bit_cast<uint32_t>(panels[c0 * C + k * pw + v - c0]),
                  std::bit_cast<uint32_t>(plain[v * C + k]));
      }
      std::vector<float> row(C);
      ls_gpt2_panel_embedding(&c, panels.data(), int32_t(v), row.data());
      ASSERT_TRUE(WordsEqual(row.data(), plain.data() + v * C, C));
    }
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, c.n_layer - 1);
    const size_t K = C, N = 4 * C;  // mlp.c_fc.w
    for (size_t k = 0; k < K; k += 5) {
      for (size_t o = 0; o < N; ++o) {
        const size_t c0 = o / 64 * 64, pw = std::min<size_t>(64, N - c0);
        ASSERT_EQ(
            std::bit_cast<uint32_t>(panels[b.fc_w + c0 * K + k * pw + o - c0]),
            std::bit_cast<uint32_t>(plain[b.fc_w + k * N + o]));
      }
    }
  }
}

TEST(Permutation, EveryPanelOfTheGpt2SizesIs64ByteAligned) {
  // The payload starts on a 64-byte boundary of a page-aligned mapping;
  // every panel's first word must then be a multiple of 16 words.
  for (const ls_gpt2_config& c :
       {lockstep::kGpt2_124M, lockstep::kGpt2_355M, lockstep::kGpt2_774M,
        lockstep::kGpt2_1558M}) {
    size_t ragged = 0;
    for (const auto& t : lockstep::gpt2_tensor_table(c)) {
      ASSERT_EQ(t.offset % 16, 0u) << t.name;
      const bool head = t.name == "wte";
      if (!head && t.name.back() != 'w') continue;
      const uint64_t K = head ? uint64_t(c.n_embd) : uint64_t(t.shape[0]);
      const uint64_t N = head ? uint64_t(c.n_vocab) : uint64_t(t.shape[1]);
      for (uint64_t c0 = 0; c0 < N; c0 += 64) {
        ASSERT_EQ((t.offset + c0 * K) % 16, 0u) << t.name << " panel " << c0;
        if (N - c0 < 64) ++ragged;
      }
    }
    EXPECT_EQ(ragged, 1u);  // only wte's last panel (50,257 = 785 * 64 + 17)
  }
}

TEST_F(LayoutTest, Panel64FileIsMappedInPlaceAndConvertsBothWays) {
  const ls_gpt2_config c = kRagged;
  const std::vector<float> plain = lockstep::random_gpt2_weights(c, 77);
  const size_t n = plain.size();
  const nlohmann::json meta = {{"test", "layout"}};
  lockstep::write_gpt2_packed(Path("plain.lockstep"), c, plain.data(), n, meta);
  lockstep::write_gpt2_packed(Path("p64.lockstep"), c, plain.data(), n, meta,
                              LS_GPT2_LAYOUT_PANEL64);
  const Gpt2Weights wp = lockstep::load_gpt2(Path("plain.lockstep"));
  const Gpt2Weights w6 = lockstep::load_gpt2(Path("p64.lockstep"));
  EXPECT_EQ(wp.layout, LS_GPT2_LAYOUT_PLAIN);
  EXPECT_EQ(w6.layout, LS_GPT2_LAYOUT_PANEL64);
  EXPECT_TRUE(w6.mapped());  // data() is inside the mapping: no copy
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w6.data()) % 64, 0u);
  std::vector<float> panels(n);
  ls_gpt2_to_panels(&c, plain.data(), panels.data());
  EXPECT_TRUE(WordsEqual(w6.data(), panels.data(), n));
  // The payload as stored is what the file's digest covers.
  const std::vector<uint8_t> file = ReadFile(Path("p64.lockstep"));
  EXPECT_EQ(file[8], 2);  // format version 2
  EXPECT_EQ(w6.payload_sha256,
            lockstep::to_hex(lockstep::sha256(panels.data(), n * 4)));
  EXPECT_EQ(lockstep::to_hex(
                lockstep::sha256(file.data() + file.size() - n * 4, n * 4)),
            w6.payload_sha256);
  EXPECT_NE(w6.payload_sha256, wp.payload_sha256);
  // The two files of one model are matched by the plain digest.
  EXPECT_EQ(w6.plain_sha256, wp.payload_sha256);
  EXPECT_EQ(wp.plain_sha256, wp.payload_sha256);
  EXPECT_EQ(lockstep::gpt2_plain_sha256(w6), wp.payload_sha256);
  EXPECT_EQ(lockstep::gpt2_plain_sha256(wp), wp.payload_sha256);
  EXPECT_EQ(w6.meta, meta);
  // The generic container reader reads it and re-encodes it byte for byte.
  const lockstep::Checkpoint ck =
      lockstep::read_checkpoint(Path("p64.lockstep"));
  EXPECT_EQ(ck.layout, "panel64");
  EXPECT_EQ(ck.plain_sha256, wp.payload_sha256);
  EXPECT_TRUE(BytesEqual(lockstep::encode_checkpoint(ck), file));

  // Conversions: packed plain -> panel64 -> plain, byte for byte.
  lockstep::convert_gpt2(Path("plain.lockstep"), Path("a.lockstep"),
                         LS_GPT2_LAYOUT_PANEL64);
  EXPECT_TRUE(BytesEqual(ReadFile(Path("a.lockstep")), file));
  lockstep::convert_gpt2(Path("p64.lockstep"), Path("b.lockstep"),
                         LS_GPT2_LAYOUT_PLAIN);
  EXPECT_TRUE(BytesEqual(ReadFile(Path("b.lockstep")),
                         ReadFile(Path("plain.lockstep"))));
  lockstep::convert_gpt2(Path("p64.lockstep"), Path("c.lockstep"),
                         LS_GPT2_LAYOUT_PANEL64);
  EXPECT_TRUE(BytesEqual(ReadFile(Path("c.lockstep")), file));
}

TEST_F(LayoutTest, HfFolderConvertsToEitherLayoutWithProgress) {
  const ls_gpt2_config c = kRagged;
  for (const char* dtype : {"F32", "BF16"}) {
    SCOPED_TRACE(dtype);
    const std::string hf = Path(std::string("hf_") + dtype);
    lockstep::write_random_gpt2_safetensors(hf, c, 5, dtype, true);
    uint64_t last = 0, calls = 0;
    lockstep::convert_gpt2(hf, Path("p.lockstep"), LS_GPT2_LAYOUT_PANEL64,
                           [&](uint64_t done, uint64_t total) {
                             EXPECT_GE(done, last);
                             EXPECT_EQ(total, ls_gpt2_param_count(&c));
                             last = done;
                             ++calls;
                           });
    EXPECT_EQ(last, ls_gpt2_param_count(&c));
    EXPECT_GE(calls, 2u);
    lockstep::convert_gpt2(hf, Path("q.lockstep"), LS_GPT2_LAYOUT_PLAIN);
    lockstep::convert_hf_to_packed(hf, Path("r.lockstep"));
    EXPECT_TRUE(
        BytesEqual(ReadFile(Path("q.lockstep")), ReadFile(Path("r.lockstep"))));
    lockstep::convert_gpt2(Path("p.lockstep"), Path("s.lockstep"),
                           LS_GPT2_LAYOUT_PLAIN);
    EXPECT_TRUE(
        BytesEqual(ReadFile(Path("s.lockstep")), ReadFile(Path("q.lockstep"))));
    const Gpt2Weights h = lockstep::load_gpt2(hf);
    const Gpt2Weights p = lockstep::load_gpt2(Path("p.lockstep"));
    EXPECT_EQ(p.plain_sha256, h.payload_sha256);
    EXPECT_EQ(h.plain_sha256, h.payload_sha256);
    EXPECT_EQ(p.meta, h.meta);
  }
}

// Logits and cache words of a session over `w`, through cached steps, full
// passes over every prefix and one prefill with every position's logits.
struct Run {
  std::vector<float> step_logits, step_cache, infer_logits, prefill_logits,
      prefill_cache;
};

Run RunSession(const Gpt2Weights& w, const std::string& backend, int threads,
               const std::vector<int32_t>& tokens) {
  Run r;
  Gpt2Session s(Gpt2View{w.config, w.data(), w.words(), w.layout},
                Gpt2SessionOptions{backend, threads, w.config.n_ctx});
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto l = s.step(tokens[i]);
    r.step_logits.insert(r.step_logits.end(), l.begin(), l.end());
    const auto f = s.infer({tokens.data(), i + 1});
    r.infer_logits.insert(r.infer_logits.end(), f.begin(), f.end());
  }
  const auto cache = s.cache();
  r.step_cache.assign(cache.begin(), cache.end());
  s.reset();
  const auto p = s.prefill(tokens, /*all_positions=*/true);
  r.prefill_logits.assign(p.begin(), p.end());
  const auto cache2 = s.cache();
  r.prefill_cache.assign(cache2.begin(), cache2.end());
  return r;
}

void ExpectSameRun(const Run& got, const Run& want) {
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) {
      return ::testing::AssertionFailure()
             << "sizes " << a.size() << " and " << b.size();
    }
    return WordsEqual(a.data(), b.data(), a.size());
  };
  EXPECT_TRUE(same(got.step_logits, want.step_logits)) << "cached steps";
  EXPECT_TRUE(same(got.step_cache, want.step_cache)) << "step cache";
  EXPECT_TRUE(same(got.infer_logits, want.infer_logits)) << "full passes";
  EXPECT_TRUE(same(got.prefill_logits, want.prefill_logits)) << "prefill";
  EXPECT_TRUE(same(got.prefill_cache, want.prefill_cache)) << "prefill cache";
}

void ExpectEveryBackendAgrees(const std::string& plain_path,
                              const std::string& panel_path, int n_tokens) {
  const Gpt2Weights wp = lockstep::load_gpt2(plain_path);
  const Gpt2Weights w6 = lockstep::load_gpt2(panel_path);
  ASSERT_EQ(w6.layout, LS_GPT2_LAYOUT_PANEL64);
  std::mt19937_64 rng(11);
  std::vector<int32_t> tokens(static_cast<size_t>(n_tokens));
  for (auto& t : tokens) t = int32_t(rng() % uint64_t(wp.config.n_vocab));
  const Run want = RunSession(wp, "reference", 1, tokens);
  for (const std::string& b : lockstep::backends::available_gpt2_backends()) {
    for (int threads : {1, 2}) {
      if (b == "reference" && threads == 2) continue;
      SCOPED_TRACE(b + " x" + std::to_string(threads));
      ExpectSameRun(RunSession(w6, b, threads, tokens), want);
      ExpectSameRun(RunSession(wp, b, threads, tokens), want);
    }
  }
}

TEST_F(LayoutTest, EveryBackendGivesTheSameBitsOnBothFiles) {
  const ls_gpt2_config c = kRagged;
  const std::vector<float> w = lockstep::random_gpt2_weights(c, 3);
  lockstep::write_gpt2_packed(Path("plain.lockstep"), c, w.data(), w.size());
  lockstep::write_gpt2_packed(Path("p64.lockstep"), c, w.data(), w.size(), {},
                              LS_GPT2_LAYOUT_PANEL64);
  ExpectEveryBackendAgrees(Path("plain.lockstep"), Path("p64.lockstep"), 13);
}

TEST_F(LayoutTest, EveryBackendGivesTheSameBitsOnTheFixture) {
  const std::string hf = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
  lockstep::convert_gpt2(hf, Path("plain.lockstep"), LS_GPT2_LAYOUT_PLAIN);
  lockstep::convert_gpt2(hf, Path("p64.lockstep"), LS_GPT2_LAYOUT_PANEL64);
  ExpectEveryBackendAgrees(Path("plain.lockstep"), Path("p64.lockstep"), 9);
}

TEST_F(LayoutTest, DamagedPanel64FilesAreClearErrors) {
  const ls_gpt2_config c = kRagged;
  const std::vector<float> w = lockstep::random_gpt2_weights(c, 9);
  const std::string good = Path("good.lockstep");
  lockstep::write_gpt2_packed(good, c, w.data(), w.size(), {},
                              LS_GPT2_LAYOUT_PANEL64);
  const std::vector<uint8_t> base = ReadFile(good);
  const size_t n = w.size();
  const size_t payload = base.size() - n * 4;
  const std::string text(base.begin() + 56, base.begin() + long(payload));
  auto patched = [&](const std::string& from, const std::string& to) {
    std::vector<uint8_t> b = base;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(from.size(), to.size());
    std::memcpy(b.data() + 56 + at, to.data(), to.size());
    return b;
  };
  auto load_error = [&](const std::vector<uint8_t>& bytes, bool verify = true) {
    const std::string p = Path("bad.lockstep");
    WriteFile(p, bytes);
    return Message([&] { lockstep::load_gpt2(p, verify); });
  };
  auto rehash = [&](std::vector<uint8_t> b) {
    const lockstep::Sha256 d = lockstep::sha256(b.data() + payload, n * 4);
    std::memcpy(b.data() + 24, d.data(), 32);
    return b;
  };

  std::vector<uint8_t> b = base;
  b.resize(b.size() - 4);
  EXPECT_NE(load_error(b).find("truncated"), std::string::npos)
      << load_error(b);
  b = base;
  b[payload + 1000] ^= 1;
  EXPECT_NE(load_error(b).find("SHA-256"), std::string::npos);
  EXPECT_NE(load_error(patched("\"panel64\"", "\"panel32\""))
                .find("unknown weight layout 'panel32'"),
            std::string::npos)
      << load_error(patched("\"panel64\"", "\"panel32\""));
  EXPECT_NE(load_error(patched("\"layout\"", "\"lay0ut\""))
                .find("needs a string field 'layout'"),
            std::string::npos);
  const size_t digest_at = 56 + text.find("\"plain_sha256\":\"") + 16;
  b = base;
  b[digest_at] = 'G';
  EXPECT_NE(load_error(b).find("64 lowercase hex digits"), std::string::npos)
      << load_error(b);
  b = base;
  b[8] = 1;  // version 1 with a layout: an old writer's header, or corrupt
  EXPECT_NE(load_error(b).find("need version 2"), std::string::npos)
      << load_error(b);
  b = base;
  b[8] = 3;
  EXPECT_NE(load_error(b).find("format version 3"), std::string::npos);
  // A non-finite weight (digest recomputed, so the finiteness check sees
  // it): the message gives the stored word and the plain element.
  b = base;
  const ls_gpt2_block blk = ls_gpt2_block_offsets(&c, 1);
  const lockstep::TensorInfo fc = [&] {
    for (const auto& t : lockstep::gpt2_tensor_table(c)) {
      if (t.name == "h1.mlp.c_fc.w") return t;
    }
    return lockstep::TensorInfo{};
  }();
  const uint64_t plain_at = 5 * 160 + 70;  // W[5][70]: panel 1, 64 wide
  const uint64_t stored = lockstep::gpt2_panel64_index(c, fc, plain_at);
  EXPECT_EQ(stored, 64u * 40 + 5 * 64 + 6);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(b.data() + payload + (blk.fc_w + stored) * 4, &nan, 4);
  const std::string m = load_error(rehash(b));
  EXPECT_NE(m.find("'h1.mlp.c_fc.w' stored word " + std::to_string(stored) +
                   ", plain element " + std::to_string(plain_at)),
            std::string::npos)
      << m;
  // A wrong plain digest loads (it is a claim about another file), but the
  // plain-layout conversion refuses to write and leaves nothing behind.
  b = base;
  b[digest_at] = b[digest_at] == '0' ? '1' : '0';
  WriteFile(Path("claim.lockstep"), b);
  EXPECT_NO_THROW(lockstep::load_gpt2(Path("claim.lockstep")));
  const std::string e = Message([&] {
    lockstep::convert_gpt2(Path("claim.lockstep"), Path("out.lockstep"),
                           LS_GPT2_LAYOUT_PLAIN);
  });
  EXPECT_NE(e.find("the source is corrupt"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(Path("out.lockstep")));
  for (const auto& f : fs::directory_iterator(dir_)) {
    EXPECT_EQ(f.path().string().find(".tmp."), std::string::npos) << f.path();
  }
  // An unknown layout name at the API.
  EXPECT_NE(Message([] {
              lockstep::gpt2_layout_from_name("panel128");
            }).find("unknown GPT-2 weight layout 'panel128'"),
            std::string::npos);
  // A v2 tiny model is not a thing.
  EXPECT_NE(Message([&] {
              std::vector<uint8_t> t = patched("\"gpt2\"", "\"tiny\"");
              WriteFile(Path("t.lockstep"), t);
              lockstep::read_checkpoint(Path("t.lockstep"));
            }).find("for GPT-2 files"),
            std::string::npos);
}

TEST(MemoryPlan, Panel64WeightsAreNotCopied) {
  // Structural, computed before anything is allocated: the CPU backend's
  // extra memory over panel64 weights holds no copy of them.
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const size_t C = size_t(c.n_embd);
  const size_t copy =
      (size_t(c.n_layer) * 12 * C * C + size_t(c.n_vocab) * C) * 4;
  for (const std::string& b : lockstep::backends::available_gpt2_backends()) {
    if (b.rfind("cpu-", 0) != 0) continue;
    const std::string isa = b.substr(4);
    for (int threads : {1, 2}) {
      const size_t plain = lockstep::backends::cpu_backend_memory_bytes(
          c, isa, threads, c.n_ctx, LS_GPT2_LAYOUT_PLAIN);
      const size_t p64 = lockstep::backends::cpu_backend_memory_bytes(
          c, isa, threads, c.n_ctx, LS_GPT2_LAYOUT_PANEL64);
      EXPECT_GE(plain - p64, copy) << b;
      EXPECT_LT(p64, 64u << 20) << b;  // working buffers only (~36 MB)
    }
  }
  // A session's plan over a panel64 file: scratch is the backend's
  // extra_memory_bytes(), with no weights in it (a config whose copy is
  // more than the 2 MB page the allocation is rounded to).
  const ls_gpt2_config s = {4096, 16, 256, 4, 1};
  const std::vector<float> w = lockstep::random_gpt2_weights(s, 1);
  std::vector<float> p(w.size());
  ls_gpt2_to_panels(&s, w.data(), p.data());
  for (const std::string& b : lockstep::backends::available_gpt2_backends()) {
    if (b.rfind("cpu-", 0) != 0) continue;
    Gpt2Session in_place(
        Gpt2View{s, p.data(), p.size(), LS_GPT2_LAYOUT_PANEL64},
        Gpt2SessionOptions{b, 2, s.n_ctx});
    Gpt2Session copied(Gpt2View{s, w.data(), w.size(), LS_GPT2_LAYOUT_PLAIN},
                       Gpt2SessionOptions{b, 2, s.n_ctx});
    EXPECT_EQ(in_place.memory().scratch,
              lockstep::backends::cpu_backend_memory_bytes(
                  s, b.substr(4), 2, s.n_ctx, LS_GPT2_LAYOUT_PANEL64));
    EXPECT_EQ(in_place.memory().weights, w.size() * 4);
    EXPECT_LT(in_place.memory().scratch, copied.memory().scratch) << b;
  }
}

}  // namespace
