// formats/gpt2_checkpoint.h (docs/gpt2-format.md): HF GPT-2 checkpoints land
// at the packed offsets of core/ls_gpt2.h, both key styles, exact F16/BF16
// widening, every kind of bad checkpoint rejected with a named error, the
// packed file round trip, and a full-size 124M checkpoint.
#include "formats/gpt2_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "ls_gpt2.h"

namespace {

namespace fs = std::filesystem;
using lockstep::StDtype;

const std::string kFixture = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
constexpr ls_gpt2_config kFixtureConfig = {50257, 128, 64, 4, 2};

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::vector<uint8_t> b(fs::file_size(path));
  in.read(reinterpret_cast<char*>(b.data()), std::streamsize(b.size()));
  return b;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& b) {
  fs::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

void WriteText(const std::string& path, const std::string& s) {
  WriteFile(path, std::vector<uint8_t>(s.begin(), s.end()));
}

// memcmp-equality of float arrays; on failure the first differing index
// with both values' bits in hex.
::testing::AssertionResult WordsEqual(const float* a, const float* b,
                                      size_t n) {
  if (std::memcmp(a, b, n * 4) == 0) return ::testing::AssertionSuccess();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t x = std::bit_cast<uint32_t>(a[i]);
    const uint32_t y = std::bit_cast<uint32_t>(b[i]);
    if (x != y) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "first difference at index %zu: 0x%08x (%a) vs 0x%08x (%a)",
                    i, x, double(a[i]), y, double(b[i]));
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionFailure() << "unreachable";
}

// A safetensors file parsed here, independently of formats/safetensors.
struct RawTensor {
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
};

std::map<std::string, RawTensor> ReadRaw(const std::string& path) {
  const std::vector<uint8_t> b = ReadFile(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | b[size_t(i)];
  const auto h = nlohmann::json::parse(b.begin() + 8, b.begin() + 8 + long(n));
  std::map<std::string, RawTensor> out;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    RawTensor t;
    t.dtype = it.value()["dtype"];
    t.shape = it.value()["shape"].get<std::vector<uint64_t>>();
    const uint64_t s = it.value()["data_offsets"][0];
    const uint64_t e = it.value()["data_offsets"][1];
    t.bytes.assign(b.begin() + long(8 + n + s), b.begin() + long(8 + n + e));
    out[it.key()] = std::move(t);
  }
  return out;
}

float RefF16(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31  ? (m ? std::numeric_limits<double>::quiet_NaN()
                           : std::numeric_limits<double>::infinity())
             : e == 0 ? std::ldexp(double(m), -24)
                      : std::ldexp(double(1024 + m), e - 25);
  return float((h & 0x8000) ? -v : v);
}

float RefBF16(uint16_t h) {
  const int e = (h >> 7) & 255, m = h & 127;
  double v = e == 255 ? (m ? std::numeric_limits<double>::quiet_NaN()
                           : std::numeric_limits<double>::infinity())
             : e == 0 ? std::ldexp(double(m), -133)
                      : std::ldexp(double(128 + m), e - 134);
  return float((h & 0x8000) ? -v : v);
}

// The widened values of a raw tensor, computed here.
std::vector<float> RefWiden(const RawTensor& t) {
  std::vector<float> v;
  if (t.dtype == "F32") {
    v.resize(t.bytes.size() / 4);
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
    return v;
  }
  for (size_t i = 0; i < t.bytes.size(); i += 2) {
    const uint16_t h = uint16_t(t.bytes[i] | t.bytes[i + 1] << 8);
    v.push_back(t.dtype == "F16" ? RefF16(h) : RefBF16(h));
  }
  return v;
}

// HF key (no prefix) -> word offset, from core/ls_gpt2.h directly.
std::map<std::string, size_t> CoreOffsets(const ls_gpt2_config& c) {
  std::map<std::string, size_t> m;
  m["wte.weight"] = 0;
  m["wpe.weight"] = ls_gpt2_wpe_offset(&c);
  for (int l = 0; l < c.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
    const std::string h = "h." + std::to_string(l) + ".";
    m[h + "ln_1.weight"] = b.ln1_g;
    m[h + "ln_1.bias"] = b.ln1_b;
    m[h + "attn.c_attn.weight"] = b.attn_w;
    m[h + "attn.c_attn.bias"] = b.attn_b;
    m[h + "attn.c_proj.weight"] = b.proj_w;
    m[h + "attn.c_proj.bias"] = b.proj_b;
    m[h + "ln_2.weight"] = b.ln2_g;
    m[h + "ln_2.bias"] = b.ln2_b;
    m[h + "mlp.c_fc.weight"] = b.fc_w;
    m[h + "mlp.c_fc.bias"] = b.fc_b;
    m[h + "mlp.c_proj.weight"] = b.out_w;
    m[h + "mlp.c_proj.bias"] = b.out_b;
  }
  m["ln_f.weight"] = ls_gpt2_lnf_offset(&c);
  m["ln_f.bias"] = ls_gpt2_lnf_offset(&c) + size_t(c.n_embd);
  return m;
}

// Every packed tensor equals the independently widened file tensor.
void ExpectPackedMatchesFile(const lockstep::Gpt2Weights& w,
                             const std::string& safetensors_path) {
  const auto raw = ReadRaw(safetensors_path);
  const auto offsets = CoreOffsets(w.config);
  size_t covered = 0;
  for (const auto& [name, t] : raw) {
    std::string key = name;
    if (key.rfind("transformer.", 0) == 0) key = key.substr(12);
    const auto it = offsets.find(key);
    if (it == offsets.end()) continue;  // buffers, lm_head
    const std::vector<float> want = RefWiden(t);
    ASSERT_LE(it->second + want.size(), w.words()) << name;
    EXPECT_TRUE(WordsEqual(w.data() + it->second, want.data(), want.size()))
        << name;
    covered += want.size();
  }
  EXPECT_EQ(covered, w.words());
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const lockstep::Error& e) {
    return e.what();
  }
  return "no error";
}

class Gpt2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep_gpt2_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  // A folder with the fixture's config.json and the given tensors.
  std::string HfDir(const std::string& name,
                    const std::vector<lockstep::SafetensorsTensorData>& t,
                    const std::string& config_from = kFixture) {
    const std::string d = Path(name);
    fs::create_directories(d);
    fs::copy_file(config_from + "/config.json", d + "/config.json",
                  fs::copy_options::overwrite_existing);
    lockstep::write_safetensors(d + "/model.safetensors", t,
                                {{"format", "pt"}});
    return d;
  }

  // The tensors of a safetensors file, as writer input.
  static std::vector<lockstep::SafetensorsTensorData> Tensors(
      const std::string& path) {
    std::vector<lockstep::SafetensorsTensorData> out;
    for (auto& [name, t] : ReadRaw(path)) {
      out.push_back(
          {name, *lockstep::st_dtype_from_name(t.dtype), t.shape, t.bytes});
    }
    return out;
  }

  // Expects load_gpt2 and convert_hf_to_packed of dir to fail with a message
  // containing `expect`, and the conversion to leave no file behind.
  void ExpectRejected(const std::string& dir, const std::string& expect) {
    const std::string e = ErrorOf([&] { lockstep::load_gpt2(dir); });
    EXPECT_NE(e.find(expect), std::string::npos)
        << "expected '" << expect << "', got '" << e << "'";
    const std::string out = Path("rejected.lockstep");
    const std::string e2 =
        ErrorOf([&] { lockstep::convert_hf_to_packed(dir, out); });
    EXPECT_EQ(e2, e);
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(out + ".tmp." + std::to_string(::getpid())));
  }

  fs::path dir_;
};

TEST_F(Gpt2Test, FixtureCopiesMatchSha256Sums) {
  std::ifstream in(kFixture + "/SHA256SUMS");
  std::string digest, name;
  int n = 0;
  while (in >> digest >> name) {
    EXPECT_EQ(lockstep::sha256_file_hex(kFixture + "/" + name), digest) << name;
    ++n;
  }
  EXPECT_EQ(n, 5);
}

TEST_F(Gpt2Test, FixtureConfigIsRead) {
  const ls_gpt2_config c =
      lockstep::read_hf_gpt2_config(kFixture + "/config.json");
  EXPECT_EQ(c.n_vocab, 50257);
  EXPECT_EQ(c.n_ctx, 128);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_layer, 2);
  std::ifstream in(kFixture + "/cases.json");
  const auto cases = nlohmann::json::parse(in);
  EXPECT_EQ(cases["config"]["n_positions"], c.n_ctx);
  EXPECT_EQ(cases["config"]["vocab_size"], c.n_vocab);
}

TEST_F(Gpt2Test, TensorTableFollowsCore) {
  for (const ls_gpt2_config& c :
       {kFixtureConfig, lockstep::kGpt2_124M, lockstep::kGpt2_355M,
        lockstep::kGpt2_774M, lockstep::kGpt2_1558M}) {
    const auto table = lockstep::gpt2_tensor_table(c);
    ASSERT_EQ(table.size(), size_t(4 + 12 * c.n_layer));
    const auto core = CoreOffsets(c);
    uint64_t next = 0;
    for (const auto& t : table) {
      EXPECT_EQ(t.offset, core.at(lockstep::gpt2_hf_key(t.name))) << t.name;
      EXPECT_EQ(t.offset, next) << t.name;
      next += t.words();
    }
    EXPECT_EQ(next, ls_gpt2_param_count(&c));
  }
  const auto t = lockstep::gpt2_tensor_table(lockstep::kGpt2_124M);
  EXPECT_EQ(ls_gpt2_param_count(&lockstep::kGpt2_124M), 124439808u);
  const std::vector<std::string> names0 = {"wte",
                                           "wpe",
                                           "h0.ln_1.g",
                                           "h0.ln_1.b",
                                           "h0.attn.c_attn.w",
                                           "h0.attn.c_attn.b",
                                           "h0.attn.c_proj.w",
                                           "h0.attn.c_proj.b",
                                           "h0.ln_2.g",
                                           "h0.ln_2.b",
                                           "h0.mlp.c_fc.w",
                                           "h0.mlp.c_fc.b",
                                           "h0.mlp.c_proj.w",
                                           "h0.mlp.c_proj.b"};
  for (size_t i = 0; i < names0.size(); ++i) EXPECT_EQ(t[i].name, names0[i]);
  EXPECT_EQ(t[t.size() - 2].name, "ln_f.g");
  EXPECT_EQ(t.back().name, "ln_f.b");
  // docs/gpt2-format.md's 124M numbers.
  EXPECT_EQ(t[1].offset, 38597376u);
  EXPECT_EQ(t[2].offset, 39383808u);
  EXPECT_EQ(t[14].offset, 39383808u + 7087872u);
  EXPECT_EQ(t[t.size() - 2].offset, 124438272u);
  EXPECT_EQ(t[4].shape, (std::vector<int64_t>{768, 2304}));
  EXPECT_EQ(lockstep::gpt2_hf_key("h11.mlp.c_proj.w"),
            "h.11.mlp.c_proj.weight");
  EXPECT_EQ(lockstep::gpt2_hf_key("h3.ln_2.b"), "h.3.ln_2.bias");
  EXPECT_EQ(lockstep::gpt2_hf_key("ln_f.g"), "ln_f.weight");
  EXPECT_EQ(lockstep::gpt2_hf_key("wpe"), "wpe.weight");
  EXPECT_THROW(lockstep::gpt2_tensor_table({50257, 1024, 768, 7, 12}),
               lockstep::Error);
}

TEST_F(Gpt2Test, FixtureLandsAtThePackedOffsets) {
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(kFixture);
  EXPECT_EQ(w.format, "hf");
  EXPECT_FALSE(w.mapped());
  EXPECT_EQ(w.config.n_vocab, kFixtureConfig.n_vocab);
  EXPECT_EQ(w.config.n_layer, kFixtureConfig.n_layer);
  ASSERT_EQ(w.words(), ls_gpt2_param_count(&kFixtureConfig));
  ExpectPackedMatchesFile(w, kFixture + "/model.safetensors");
  // A few spelled out against the raw bytes.
  const auto raw = ReadRaw(kFixture + "/model.safetensors");
  const ls_gpt2_block b1 = ls_gpt2_block_offsets(&kFixtureConfig, 1);
  EXPECT_EQ(
      0, std::memcmp(w.data() + b1.attn_w,
                     raw.at("transformer.h.1.attn.c_attn.weight").bytes.data(),
                     64 * 192 * 4));
  EXPECT_EQ(0,
            std::memcmp(w.data() + ls_gpt2_lnf_offset(&kFixtureConfig) + 64,
                        raw.at("transformer.ln_f.bias").bytes.data(), 64 * 4));
  EXPECT_EQ(0, std::memcmp(w.data() + ls_gpt2_wpe_offset(&kFixtureConfig),
                           raw.at("transformer.wpe.weight").bytes.data(),
                           128 * 64 * 4));
  EXPECT_EQ(w.payload_sha256,
            lockstep::to_hex(lockstep::sha256(w.data(), w.words() * 4)));
  EXPECT_TRUE(ls_gpt2_weights_finite(w.data(), w.words()));
  // The model.safetensors path itself also names the folder.
  const lockstep::Gpt2Weights w2 =
      lockstep::load_gpt2(kFixture + "/model.safetensors");
  EXPECT_TRUE(WordsEqual(w2.data(), w.data(), w.words()));
}

TEST_F(Gpt2Test, BothKeyStylesBuffersAndTiedHead) {
  const lockstep::Gpt2Weights ref = lockstep::load_gpt2(kFixture);
  auto tensors = Tensors(kFixture + "/model.safetensors");
  std::vector<lockstep::SafetensorsTensorData> plain;
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    auto t = *it;
    t.name = t.name.substr(12);  // drop "transformer."
    plain.push_back(t);
  }
  std::vector<uint8_t> mask(128 * 128);
  for (size_t i = 0; i < 128; ++i) {
    for (size_t j = 0; j <= i; ++j) mask[i * 128 + j] = 1;
  }
  std::vector<uint8_t> masked_bias(4);
  const float m = -1e4f;
  std::memcpy(masked_bias.data(), &m, 4);
  for (int l = 0; l < 2; ++l) {
    const std::string h = "h." + std::to_string(l) + ".attn.";
    plain.push_back({h + "bias", StDtype::kU8, {1, 1, 128, 128}, mask});
    plain.push_back({h + "masked_bias", StDtype::kF32, {}, masked_bias});
  }
  const auto& wte = *std::find_if(plain.begin(), plain.end(), [](auto& t) {
    return t.name == "wte.weight";
  });
  auto lm = wte;
  lm.name = "lm_head.weight";
  plain.push_back(lm);
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(HfDir("plain", plain));
  ASSERT_EQ(w.words(), ref.words());
  EXPECT_TRUE(WordsEqual(w.data(), ref.data(), ref.words()));
  EXPECT_EQ(w.payload_sha256, ref.payload_sha256);

  // An lm_head that is not wte bit for bit.
  auto untied = plain;
  uint8_t& byte = untied.back().bytes[4 * 12345];
  byte ^= 1;
  ExpectRejected(HfDir("untied", untied),
                 "tensor 'lm_head.weight' differs from 'wte.weight' at "
                 "element 12345");
  // Both spellings of one key.
  auto both = plain;
  both.push_back(tensors.back());  // "transformer.wte.weight"
  ExpectRejected(HfDir("both", both), "are both present");
  // A layer the config does not have.
  auto extra = plain;
  auto ln = *std::find_if(plain.begin(), plain.end(),
                          [](auto& t) { return t.name == "h.1.ln_1.weight"; });
  ln.name = "h.2.ln_1.weight";
  extra.push_back(ln);
  ExpectRejected(HfDir("extra", extra),
                 "tensor 'h.2.ln_1.weight' is not part of a GPT-2 with");
}

// A small config whose wte holds every finite F16 and BF16 pattern.
constexpr ls_gpt2_config kWideConfig = {1024, 16, 64, 4, 1};

std::vector<lockstep::SafetensorsTensorData> PatternTensors(StDtype dtype,
                                                            uint64_t seed) {
  const bool f16 = dtype == StDtype::kF16;
  auto finite = [f16](uint16_t h) {
    return f16 ? ((h >> 10) & 31) != 31 : ((h >> 7) & 255) != 255;
  };
  std::mt19937_64 rng(seed);
  std::vector<lockstep::SafetensorsTensorData> out;
  for (const auto& t : lockstep::gpt2_tensor_table(kWideConfig)) {
    std::vector<uint16_t> v;
    if (t.name == "wte") {
      for (uint32_t p = 0; p < 65536; ++p) {
        if (finite(uint16_t(p))) v.push_back(uint16_t(p));
      }
    }
    while (v.size() < t.words()) {
      const uint16_t h = uint16_t(rng());
      if (finite(h)) v.push_back(h);
    }
    std::vector<uint8_t> bytes(v.size() * 2);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    out.push_back({"transformer." + lockstep::gpt2_hf_key(t.name), dtype,
                   std::vector<uint64_t>(t.shape.begin(), t.shape.end()),
                   bytes});
  }
  return out;
}

std::string WideConfigJson() {
  return nlohmann::json{{"model_type", "gpt2"},
                        {"vocab_size", kWideConfig.n_vocab},
                        {"n_positions", kWideConfig.n_ctx},
                        {"n_embd", kWideConfig.n_embd},
                        {"n_head", kWideConfig.n_head},
                        {"n_layer", kWideConfig.n_layer},
                        {"layer_norm_epsilon", 1e-5},
                        {"activation_function", "gelu_new"}}
      .dump();
}

TEST_F(Gpt2Test, F16AndBF16AreWidenedExactly) {
  for (StDtype dtype : {StDtype::kF16, StDtype::kBF16}) {
    SCOPED_TRACE(lockstep::st_dtype_name(dtype));
    const bool f16 = dtype == StDtype::kF16;
    const std::string d = Path(f16 ? "f16" : "bf16");
    fs::create_directories(d);
    WriteText(d + "/config.json", WideConfigJson());
    const auto tensors = PatternTensors(dtype, f16 ? 16 : 17);
    lockstep::write_safetensors(d + "/model.safetensors", tensors);
    const lockstep::Gpt2Weights w = lockstep::load_gpt2(d);
    ASSERT_EQ(w.words(), ls_gpt2_param_count(&kWideConfig));
    ExpectPackedMatchesFile(w, d + "/model.safetensors");
    // wte[0] is +0, the next ones the smallest subnormals; -0 is the
    // pattern 0x8000, preserved.
    EXPECT_EQ(std::bit_cast<uint32_t>(w.data()[0]), 0u);
    EXPECT_EQ(w.data()[1],
              f16 ? std::ldexp(1.0f, -24) : std::ldexp(1.0f, -133));
    const size_t neg0 = f16 ? 0x8000 - 1024 : 0x8000 - 128;  // after +inf/NaN
    EXPECT_EQ(std::bit_cast<uint32_t>(w.data()[neg0]), 0x80000000u);
    // The converted file holds the same words.
    lockstep::convert_hf_to_packed(d, d + ".lockstep");
    const lockstep::Gpt2Weights p = lockstep::load_gpt2(d + ".lockstep");
    EXPECT_TRUE(WordsEqual(p.data(), w.data(), w.words()));
    EXPECT_EQ(p.meta["source_dtypes"][0], lockstep::st_dtype_name(dtype));

    // Infinities and NaNs are rejected as non-finite, naming the tensor.
    const std::vector<uint16_t> bad =
        f16 ? std::vector<uint16_t>{0x7c00, 0xfc00, 0x7e00, 0x7c01}
            : std::vector<uint16_t>{0x7f80, 0xff80, 0x7fc0, 0xffc1};
    for (uint16_t h : bad) {
      auto t = tensors;
      auto& fc = *std::find_if(t.begin(), t.end(), [](auto& x) {
        return x.name == "transformer.h.0.mlp.c_fc.weight";
      });
      fc.bytes[2 * 777] = uint8_t(h);
      fc.bytes[2 * 777 + 1] = uint8_t(h >> 8);
      const std::string bd = Path("bad_" + std::to_string(h));
      fs::create_directories(bd);
      WriteText(bd + "/config.json", WideConfigJson());
      lockstep::write_safetensors(bd + "/model.safetensors", t);
      ExpectRejected(bd,
                     "tensor 'transformer.h.0.mlp.c_fc.weight' element 777 is");
      ExpectRejected(bd, "non-finite weights are rejected");
    }
  }
}

constexpr ls_gpt2_config kSmall = {300, 32, 48, 4, 2};

TEST_F(Gpt2Test, RandomCheckpointsAreSeededAndKeyStyleFree) {
  lockstep::write_random_gpt2_safetensors(Path("a"), kSmall, 7, "F32", true);
  lockstep::write_random_gpt2_safetensors(Path("b"), kSmall, 7, "F32", false);
  lockstep::write_random_gpt2_safetensors(Path("c"), kSmall, 8, "F32", true);
  lockstep::write_random_gpt2_safetensors(Path("h"), kSmall, 7, "F16", false);
  lockstep::write_random_gpt2_safetensors(Path("bf"), kSmall, 7, "BF16", true);
  const auto a = lockstep::load_gpt2(Path("a"));
  const auto b = lockstep::load_gpt2(Path("b"));
  const auto c = lockstep::load_gpt2(Path("c"));
  const auto h = lockstep::load_gpt2(Path("h"));
  const auto bf = lockstep::load_gpt2(Path("bf"));
  EXPECT_TRUE(WordsEqual(a.data(), b.data(), a.words()));
  EXPECT_NE(0, std::memcmp(a.data(), c.data(), a.words() * 4));
  for (size_t i = 0; i < a.words(); ++i) {
    const float x = a.data()[i];
    ASSERT_NE(x, 0.0f) << i;  // never zeros
    ASSERT_EQ(std::bit_cast<uint32_t>(h.data()[i]),
              std::bit_cast<uint32_t>(RefF16(lockstep::narrow_f16(x))))
        << i;
    ASSERT_EQ(std::bit_cast<uint32_t>(bf.data()[i]),
              std::bit_cast<uint32_t>(RefBF16(lockstep::narrow_bf16(x))))
        << i;
  }
  // LayerNorm gains near 1, everything else small.
  for (const auto& t : lockstep::gpt2_tensor_table(kSmall)) {
    const bool gain = t.name.size() > 2 && t.name.ends_with(".g");
    for (size_t i = 0; i < t.words(); ++i) {
      const float x = a.data()[t.offset + i];
      if (gain) {
        ASSERT_TRUE(x >= 0.9f && x <= 1.1f) << t.name << " " << x;
      } else {
        ASSERT_TRUE(std::fabs(x) <= 0.1f) << t.name << " " << x;
      }
    }
  }
  // The file lists tensors by name, as HF does; keys as asked.
  const auto raw = ReadRaw(Path("a") + "/model.safetensors");
  EXPECT_EQ(raw.size(), 4u + 12 * 2);
  EXPECT_TRUE(raw.count("transformer.wte.weight"));
  EXPECT_TRUE(ReadRaw(Path("b") + "/model.safetensors").count("wte.weight"));
  const ls_gpt2_config rc =
      lockstep::read_hf_gpt2_config(Path("a") + "/config.json");
  EXPECT_EQ(rc.n_ctx, kSmall.n_ctx);
  EXPECT_EQ(rc.n_vocab, kSmall.n_vocab);
  EXPECT_THROW(lockstep::write_random_gpt2_safetensors(Path("x"), kSmall, 1,
                                                       "F64", true),
               lockstep::Error);
}

// The in-memory generator (tests and benchmarks) gives the very words the
// file writer streams; wte of 144,000 words spans three of the writer's
// 65,536-word buffers, so the stream's restart at an offset is covered.
TEST_F(Gpt2Test, RandomWeightsInMemoryEqualTheWrittenFile) {
  const ls_gpt2_config c = {3000, 32, 48, 4, 1};
  lockstep::write_random_gpt2_safetensors(Path("m"), c, 11, "F32", false);
  const auto file = lockstep::load_gpt2(Path("m"));
  const std::vector<float> mem = lockstep::random_gpt2_weights(c, 11);
  ASSERT_EQ(mem.size(), file.words());
  EXPECT_TRUE(WordsEqual(mem.data(), file.data(), mem.size()));
  EXPECT_NE(0,
            std::memcmp(mem.data(), lockstep::random_gpt2_weights(c, 12).data(),
                        mem.size() * 4));
}

TEST_F(Gpt2Test, BadHfCheckpointsAreRejected) {
  lockstep::write_random_gpt2_safetensors(Path("base"), kSmall, 3, "F32", true);
  const std::string base_cfg = Path("base") + "/config.json";
  const auto tensors = Tensors(Path("base") + "/model.safetensors");
  std::ifstream cfg_in(base_cfg);
  const nlohmann::json cfg = nlohmann::json::parse(cfg_in);

  // Folder problems.
  fs::create_directories(Path("nocfg"));
  fs::copy_file(Path("base") + "/model.safetensors",
                Path("nocfg") + "/model.safetensors");
  ExpectRejected(Path("nocfg"), "has no config.json");
  fs::create_directories(Path("nost"));
  fs::copy_file(base_cfg, Path("nost") + "/config.json");
  ExpectRejected(Path("nost"), "has no model.safetensors");
  WriteText(Path("nost") + "/model.safetensors.index.json", "{}");
  ExpectRejected(Path("nost"), "is sharded");

  // config.json problems.
  struct CfgCase {
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  };
  const std::vector<CfgCase> cfg_cases = {
      {[](auto& j) { j["layer_norm_epsilon"] = 1e-6; }, "layer_norm_epsilon"},
      {[](auto& j) { j["activation_function"] = "gelu"; },
       "activation_function is \"gelu\""},
      {[](auto& j) { j["n_head"] = 5; }, "not a usable GPT-2"},
      {[](auto& j) { j["n_ctx"] = 64; }, "n_positions 32 and n_ctx 64 differ"},
      {[](auto& j) { j.erase("vocab_size"); }, "lacks the key 'vocab_size'"},
      {[](auto& j) { j["n_embd"] = -48; }, "'n_embd' is -48"},
      {[](auto& j) { j["model_type"] = "bert"; }, "model_type is \"bert\""},
      {[](auto& j) { j["n_inner"] = 100; }, "n_inner is 100"},
      {[](auto& j) { j["tie_word_embeddings"] = false; },
       "tie_word_embeddings is false but there is no lm_head.weight"},
      {[](auto& j) { j["n_layer"] = 3; }, "missing tensor 'h.2.ln_1.weight'"},
      {[](auto& j) { j["n_layer"] = 1; },
       "tensor 'transformer.h.1.attn.c_attn.bias' is not part of a GPT-2"},
      {[](auto& j) { j["n_embd"] = 64; },
       "tensor 'transformer.wte.weight' has shape [300, 48], expected "
       "[300, 64]"},
  };
  int k = 0;
  for (const auto& c : cfg_cases) {
    const std::string d = Path("cfg" + std::to_string(k++));
    fs::create_directories(d);
    fs::copy_file(Path("base") + "/model.safetensors",
                  d + "/model.safetensors");
    nlohmann::json j = cfg;
    c.edit(j);
    WriteText(d + "/config.json", j.dump());
    ExpectRejected(d, c.expect);
  }
  {
    const std::string d = Path("cfgjson");
    fs::create_directories(d);
    fs::copy_file(Path("base") + "/model.safetensors",
                  d + "/model.safetensors");
    WriteText(d + "/config.json", "{\"n_embd\": 48,");
    ExpectRejected(d, "not valid JSON");
  }

  // model.safetensors problems.
  auto edit = [&](const std::string& name, auto f) {
    auto t = tensors;
    auto it = std::find_if(t.begin(), t.end(),
                           [&](auto& x) { return x.name == name; });
    EXPECT_NE(it, t.end()) << name;
    f(t, it);
    return t;
  };
  const std::string mis = "transformer.h.1.mlp.c_fc.bias";
  ExpectRejected(
      HfDir("missing", edit(mis, [](auto& t, auto it) { t.erase(it); }),
            Path("base")),
      "missing tensor 'h.1.mlp.c_fc.bias' (or "
      "'transformer.h.1.mlp.c_fc.bias')");
  ExpectRejected(
      HfDir("transposed",
            edit("transformer.h.0.attn.c_attn.weight",
                 [](auto&, auto it) {
                   it->shape = {144, 48};
                 }),
            Path("base")),
      "tensor 'transformer.h.0.attn.c_attn.weight' has shape [144, 48], "
      "expected [48, 144]");
  ExpectRejected(HfDir("nan",
                       edit("transformer.h.0.ln_2.weight",
                            [](auto&, auto it) {
                              const float nan =
                                  std::numeric_limits<float>::quiet_NaN();
                              std::memcpy(it->bytes.data() + 4 * 7, &nan, 4);
                            }),
                       Path("base")),
                 "tensor 'transformer.h.0.ln_2.weight' element 7 is nan");
  ExpectRejected(HfDir("int",
                       edit("transformer.ln_f.bias",
                            [](auto&, auto it) { it->dtype = StDtype::kI32; }),
                       Path("base")),
                 "tensor 'transformer.ln_f.bias' has dtype I32");
  ExpectRejected(
      HfDir("f64",
            edit("transformer.ln_f.bias",
                 [](auto&, auto it) {
                   it->dtype = StDtype::kF64;
                   it->shape = {24};  // same bytes, 8 per element
                 }),
            Path("base")),
      "tensor 'transformer.ln_f.bias' has shape [24], expected [48]");
  // A damaged safetensors file is named by the parser.
  {
    const std::string d = Path("trunc");
    fs::create_directories(d);
    fs::copy_file(base_cfg, d + "/config.json");
    const auto b = ReadFile(Path("base") + "/model.safetensors");
    WriteFile(d + "/model.safetensors", {b.begin(), b.end() - 3});
    ExpectRejected(d, "run outside the data section");
  }
  // Neither a folder nor a packed file.
  WriteText(Path("junk.bin"), "not a checkpoint at all, just some text");
  EXPECT_NE(
      ErrorOf([&] { lockstep::load_gpt2(Path("junk.bin")); }).find("bad magic"),
      std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              lockstep::load_gpt2(Path("nothing"));
            }).find("cannot open"),
            std::string::npos);
}

TEST_F(Gpt2Test, ConvertThenLoadIsByteIdentical) {
  const lockstep::Gpt2Weights hf = lockstep::load_gpt2(kFixture);
  const std::string out = Path("a.lockstep");
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  lockstep::convert_hf_to_packed(
      kFixture, out, [&](uint64_t d, uint64_t t) { calls.emplace_back(d, t); });
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls.front(), std::make_pair(uint64_t(0), uint64_t(hf.words())));
  EXPECT_EQ(calls.back(),
            std::make_pair(uint64_t(hf.words()), uint64_t(hf.words())));
  for (size_t i = 1; i < calls.size(); ++i) {
    EXPECT_GE(calls[i].first, calls[i - 1].first);
  }
  for (bool verify : {true, false}) {
    const lockstep::Gpt2Weights p = lockstep::load_gpt2(out, verify);
    EXPECT_EQ(p.format, "packed");
    EXPECT_TRUE(p.mapped());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.data()) % 64, 0u);
    ASSERT_EQ(p.words(), hf.words());
    EXPECT_TRUE(WordsEqual(p.data(), hf.data(), hf.words()));
    EXPECT_EQ(p.payload_sha256, hf.payload_sha256);
    EXPECT_EQ(p.meta, hf.meta);
    EXPECT_EQ(p.source, out);
  }
  // Moving keeps the mapping and the pointer.
  lockstep::Gpt2Weights p = lockstep::load_gpt2(out);
  const float* at = p.data();
  lockstep::Gpt2Weights q = std::move(p);
  EXPECT_EQ(q.data(), at);

  // The container of docs/checkpoint-format.md, bit for bit: the generic
  // reader accepts it and the generic encoder reproduces it.
  const std::vector<uint8_t> bytes = ReadFile(out);
  const lockstep::Checkpoint c = lockstep::read_checkpoint(out);
  EXPECT_EQ(c.model, "gpt2");
  EXPECT_EQ(c.dtype, "f32");
  EXPECT_EQ(c.words, hf.words());
  EXPECT_EQ(lockstep::to_hex(c.payload_sha256), hf.payload_sha256);
  EXPECT_EQ(lockstep::encode_checkpoint(c), bytes);
  // Deterministic: converting again gives the same bytes, leaves no temp.
  lockstep::convert_hf_to_packed(kFixture, out);
  EXPECT_EQ(ReadFile(out), bytes);
  // A progress callback that throws cancels: nothing is left behind and
  // the existing file is untouched.
  const std::string cancelled = Path("cancelled.lockstep");
  EXPECT_THROW(
      lockstep::convert_hf_to_packed(kFixture, cancelled,
                                     [](uint64_t done, uint64_t) {
                                       if (done > 0)
                                         throw lockstep::Error("cancelled");
                                     }),
      lockstep::Error);
  EXPECT_FALSE(fs::exists(cancelled));
  EXPECT_THROW(
      lockstep::convert_hf_to_packed(kFixture, out,
                                     [](uint64_t done, uint64_t) {
                                       if (done > 0)
                                         throw lockstep::Error("cancelled");
                                     }),
      lockstep::Error);
  EXPECT_EQ(ReadFile(out), bytes);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename(), "a.lockstep");
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(Gpt2Test, DamagedPackedFilesAreRejected) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> w(ls_gpt2_param_count(&kSmall));
  for (auto& x : w) x = u(rng);
  const std::string good = Path("good.lockstep");
  lockstep::write_gpt2_packed(good, kSmall, w.data(), w.size(),
                              {{"note", "test"}});
  const lockstep::Gpt2Weights g = lockstep::load_gpt2(good);
  ASSERT_TRUE(WordsEqual(g.data(), w.data(), w.size()));
  EXPECT_EQ(g.meta["note"], "test");
  const std::vector<uint8_t> bytes = ReadFile(good);
  const lockstep::Checkpoint base = lockstep::read_checkpoint(good);

  auto load_error = [&](const std::vector<uint8_t>& b, bool verify = true) {
    WriteFile(Path("bad.lockstep"), b);
    return ErrorOf([&] { lockstep::load_gpt2(Path("bad.lockstep"), verify); });
  };
  auto expect = [](const std::string& e, const std::string& want) {
    EXPECT_NE(e.find(want), std::string::npos)
        << "expected '" << want << "', got '" << e << "'";
  };
  for (size_t len : {size_t(7), size_t(55), size_t(56), size_t(100),
                     bytes.size() - 4, bytes.size() - 1}) {
    expect(load_error({bytes.begin(), bytes.begin() + long(len)}),
           len < 8    ? "bad magic"
           : len < 56 ? "shorter than the 56-byte fixed header"
                      : "!= file size");
  }
  expect(load_error({bytes.begin(), bytes.begin() + 20}), "not a lockstep");
  auto damaged = [&](size_t at, uint8_t x) {
    auto b = bytes;
    b[at] ^= x;
    return b;
  };
  expect(load_error(damaged(0, 1)), "bad magic");
  expect(load_error(damaged(8, 2)), "format version 3 is not supported");
  expect(load_error(damaged(12, 64)), "!= file size");
  const size_t payload = bytes.size() - w.size() * 4;
  expect(load_error(damaged(payload + 1000, 0x10)), "payload SHA-256 is");
  // Unverified, the damaged payload loads (the benchmark option).
  EXPECT_EQ(load_error(damaged(payload + 1000, 0x10), false), "no error");

  struct Case {
    std::function<void(lockstep::Checkpoint&)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {[](auto& c) { c.model = "tiny"; }, "model is \"tiny\", not \"gpt2\""},
      {[](auto& c) { c.dtype = "f64"; }, "dtype is \"f64\""},
      {[](auto& c) { c.config["n_ff"] = 192; }, "must have exactly the keys"},
      {[](auto& c) { c.config["n_embd"] = 0; }, "is not a usable GPT-2"},
      {[](auto& c) {
         c.config.erase("n_head");
         c.config["n_heads"] = 4;
       },
       "config lacks a non-negative integer 'n_head'"},
      {[](auto& c) { c.config["n_layer"] = 3; }, "words but"},
      {[](auto& c) { std::swap(c.tensors[2], c.tensors[3]); },
       "tensor table entry 2"},
      {[](auto& c) {
         c.tensors[4].shape = {144, 48};
       },
       "tensor table entry 4"},
      {[](auto& c) { c.tensors[5].name = "h0.attn.c_attn.bias"; },
       "expected 'h0.attn.c_attn.b' [144] at word"},
      {[](auto& c) { c.tensors.pop_back(); }, "tensor table has 27 entries"},
      {[&](auto& c) {
         const auto t = lockstep::gpt2_tensor_table(kSmall);
         const float inf = std::numeric_limits<float>::infinity();
         std::memcpy(c.payload.data() + 4 * (t[11].offset + 5), &inf, 4);
       },
       "(tensor 'h0.mlp.c_fc.b' element 5) is inf"},
  };
  for (const auto& c : cases) {
    lockstep::Checkpoint ck = base;
    c.edit(ck);
    const std::string e = load_error(lockstep::encode_checkpoint(ck));
    expect(e, c.expect);
    expect(e, Path("bad.lockstep"));
  }
  // The in-memory writer checks what it writes and leaves nothing behind.
  w[1234] = std::numeric_limits<float>::quiet_NaN();
  const std::string nan_out = Path("nan.lockstep");
  expect(ErrorOf([&] {
           lockstep::write_gpt2_packed(nan_out, kSmall, w.data(), w.size());
         }),
         "tensor 'wte' element 1234 is nan");
  expect(ErrorOf([&] {
           lockstep::write_gpt2_packed(nan_out, kSmall, w.data(), 10);
         }),
         "10 words given");
  EXPECT_FALSE(fs::exists(nan_out));
  EXPECT_FALSE(fs::exists(nan_out + ".tmp." + std::to_string(::getpid())));
}

// The full-size check: a 124M checkpoint with seeded random weights,
// written, converted and loaded at test time.
TEST_F(Gpt2Test, Full124MWritesConvertsAndLoads) {
  using Clock = std::chrono::steady_clock;
  auto secs = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const std::string hf = Path("gpt2-124m");
  const std::string out = Path("gpt2-124m.lockstep");
  const auto t0 = Clock::now();
  lockstep::write_random_gpt2_safetensors(hf, c, 20240611, "F32", false);
  const auto t1 = Clock::now();
  int calls = 0;
  uint64_t last = 0;
  lockstep::convert_hf_to_packed(hf, out, [&](uint64_t d, uint64_t t) {
    ++calls;
    last = d;
    EXPECT_EQ(t, 124439808u);
  });
  const auto t2 = Clock::now();
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(out);
  const auto t3 = Clock::now();
  std::printf(
      "124M: write safetensors %.2f s, convert %.2f s, load (verified) "
      "%.2f s\n",
      secs(t0, t1), secs(t1, t2), secs(t2, t3));
  EXPECT_EQ(last, 124439808u);
  EXPECT_GT(calls, 100);
  ASSERT_EQ(w.words(), 124439808u);
  EXPECT_EQ(w.words() * 4, 497759232u);
  EXPECT_TRUE(w.mapped());
  // The file: 56 fixed bytes, the padded header, the payload.
  const uint64_t size = fs::file_size(out);
  EXPECT_EQ((size - 497759232u) % 64, 0u);
  EXPECT_LT(size - 497759232u, 16384u);
  // The source: the same data bytes plus its header.
  const lockstep::SafetensorsFile st =
      lockstep::SafetensorsFile::open(hf + "/model.safetensors");
  EXPECT_EQ(st.data_bytes(), 497759232u);
  const auto table = lockstep::gpt2_tensor_table(c);
  for (const auto& t : table) {
    const auto* s = st.find(lockstep::gpt2_hf_key(t.name));
    ASSERT_NE(s, nullptr) << t.name;
    ASSERT_EQ(s->elements(), t.words());
    const size_t n = std::min<size_t>(t.words(), 4096);
    EXPECT_EQ(0, std::memcmp(w.data() + t.offset, s->data, n * 4)) << t.name;
    EXPECT_EQ(0, std::memcmp(w.data() + t.offset + t.words() - n,
                             s->data + (t.words() - n) * 4, n * 4))
        << t.name;
  }
}

}  // namespace
