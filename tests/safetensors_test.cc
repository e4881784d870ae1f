// formats/safetensors.h: exact F16/BF16 conversions, the writer, and the
// validating reader, which rejects every kind of damaged file with an error
// naming the file, the tensor and the problem (never a crash).
#include "formats/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "lockstep/error.h"

namespace {

namespace fs = std::filesystem;
using lockstep::SafetensorsFile;
using lockstep::StDtype;

// Independent widenings: the value as sign * significand * 2^exponent in
// binary64 (exact), rounded to binary32 (exact: every input is
// representable).
float RefF16(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31) {
    v = m ? std::numeric_limits<double>::quiet_NaN()
          : std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(double(m), -24);
  } else {
    v = std::ldexp(double(1024 + m), e - 25);
  }
  return float((h & 0x8000) ? -v : v);
}

float RefBF16(uint16_t h) {
  const int e = (h >> 7) & 255, m = h & 127;
  double v;
  if (e == 255) {
    v = m ? std::numeric_limits<double>::quiet_NaN()
          : std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(double(m), -133);
  } else {
    v = std::ldexp(double(128 + m), e - 134);
  }
  return float((h & 0x8000) ? -v : v);
}

std::string Hex(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "0x%08x (%a)", std::bit_cast<uint32_t>(v),
                double(v));
  return buf;
}

::testing::AssertionResult SameBits(float got, float want, uint32_t pattern) {
  if (std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "pattern 0x" << std::hex << pattern << ": got " << Hex(got)
         << ", want " << Hex(want);
}

TEST(Widen, F16EveryPatternIsExact) {
  int subnormals = 0;
  for (uint32_t p = 0; p < 65536; ++p) {
    const float got = lockstep::widen_f16(uint16_t(p));
    const float want = RefF16(uint16_t(p));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << p;
      ASSERT_EQ(std::signbit(got), bool(p & 0x8000)) << std::hex << p;
      continue;
    }
    ASSERT_TRUE(SameBits(got, want, p));
    subnormals += ((p >> 10) & 31) == 0 && (p & 1023) != 0;
  }
  EXPECT_EQ(subnormals, 2 * 1023);
  // Signed zeros and the extremes, spelled out.
  EXPECT_EQ(std::bit_cast<uint32_t>(lockstep::widen_f16(0x8000)), 0x80000000u);
  EXPECT_EQ(lockstep::widen_f16(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(lockstep::widen_f16(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(lockstep::widen_f16(0x7bff), 65504.0f);
  EXPECT_EQ(lockstep::widen_f16(0xfc00),
            -std::numeric_limits<float>::infinity());
}

TEST(Widen, BF16EveryPatternIsExact) {
  for (uint32_t p = 0; p < 65536; ++p) {
    const float got = lockstep::widen_bf16(uint16_t(p));
    const float want = RefBF16(uint16_t(p));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << p;
      continue;
    }
    ASSERT_TRUE(SameBits(got, want, p));
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(lockstep::widen_bf16(0x8000)), 0x80000000u);
}

TEST(Widen, BufferWideningMatchesAndRejectsOtherDtypes) {
  std::mt19937_64 rng(11);
  std::vector<uint8_t> raw(2 * 999 + 1);
  for (auto& b : raw) b = uint8_t(rng());
  std::vector<float> out(999);
  // Odd address: the reader must not assume alignment.
  lockstep::widen_to_f32(StDtype::kF16, raw.data() + 1, 999, out.data());
  for (size_t i = 0; i < 999; ++i) {
    const uint16_t h = uint16_t(raw[1 + 2 * i] | raw[2 + 2 * i] << 8);
    if (!std::isnan(RefF16(h))) {
      ASSERT_TRUE(SameBits(out[i], RefF16(h), h));
    }
  }
  lockstep::widen_to_f32(StDtype::kBF16, raw.data() + 1, 999, out.data());
  for (size_t i = 0; i < 999; ++i) {
    const uint16_t h = uint16_t(raw[1 + 2 * i] | raw[2 + 2 * i] << 8);
    if (!std::isnan(RefBF16(h))) {
      ASSERT_TRUE(SameBits(out[i], RefBF16(h), h));
    }
  }
  EXPECT_THROW(lockstep::widen_to_f32(StDtype::kF64, raw.data(), 1, out.data()),
               lockstep::Error);
}

// Narrowing is round-to-nearest-even: the result is a nearest 16-bit value
// and, on a tie, the even one.
template <typename Widen>
void CheckNearestEven(float f, uint16_t h, Widen widen, uint16_t inf_bits) {
  const double x = f;
  const double got = widen(h);
  if (std::isinf(got)) {
    // Overflow: |x| is at least the midpoint above the largest finite.
    const double max = widen(uint16_t(inf_bits - 1));
    const double ulp = max - double(widen(uint16_t(inf_bits - 2)));
    ASSERT_GE(std::fabs(x), max + ulp / 2) << Hex(f);
    return;
  }
  const uint16_t mag = h & 0x7fff;
  const double err = std::fabs(got - x);
  for (int d : {-1, 1}) {
    const int n = int(mag) + d;
    if (n < 0 || n >= inf_bits) continue;
    const double other = std::copysign(double(widen(uint16_t(n))), x);
    const double e2 = std::fabs(other - x);
    ASSERT_LE(err, e2) << Hex(f) << " -> 0x" << std::hex << h;
    if (err == e2) {
      ASSERT_EQ(mag & 1, 0) << "tie not to even: " << Hex(f);
    }
  }
}

TEST(Narrow, F16RoundsToNearestEven) {
  // Round trip of every non-NaN pattern.
  for (uint32_t p = 0; p < 65536; ++p) {
    if (((p >> 10) & 31) == 31 && (p & 1023)) continue;
    ASSERT_EQ(lockstep::narrow_f16(lockstep::widen_f16(uint16_t(p))), p);
  }
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> expo(-30, 17);
  for (int i = 0; i < 200000; ++i) {
    const float f = float((rng() & 1 ? -1 : 1) * std::exp2(expo(rng)));
    CheckNearestEven(f, lockstep::narrow_f16(f), lockstep::widen_f16,
                     uint16_t(0x7c00));
  }
  // Ties, spelled out: halfway between 0 and the smallest subnormal goes to
  // 0, halfway between 1 and 2 ulps goes to 2, 65520 overflows.
  EXPECT_EQ(lockstep::narrow_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(lockstep::narrow_f16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(lockstep::narrow_f16(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(lockstep::narrow_f16(65519.996f), 0x7bff);
  EXPECT_EQ(lockstep::narrow_f16(65520.0f), 0x7c00);
  EXPECT_EQ(lockstep::narrow_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(lockstep::narrow_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(lockstep::widen_f16(
      lockstep::narrow_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Narrow, BF16RoundsToNearestEven) {
  for (uint32_t p = 0; p < 65536; ++p) {
    if (((p >> 7) & 255) == 255 && (p & 127)) continue;
    ASSERT_EQ(lockstep::narrow_bf16(lockstep::widen_bf16(uint16_t(p))), p);
  }
  std::mt19937_64 rng(6);
  std::uniform_real_distribution<double> expo(-140, 127);
  for (int i = 0; i < 200000; ++i) {
    const float f = float((rng() & 1 ? -1 : 1) * std::exp2(expo(rng)));
    if (std::isinf(f)) continue;
    CheckNearestEven(f, lockstep::narrow_bf16(f), lockstep::widen_bf16,
                     uint16_t(0x7f80));
  }
  EXPECT_EQ(lockstep::narrow_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);
  EXPECT_EQ(lockstep::narrow_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_TRUE(std::isnan(lockstep::widen_bf16(
      lockstep::narrow_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string WriteRaw(const std::vector<uint8_t>& bytes,
                       const std::string& name = "bad.safetensors") {
    const std::string p = (dir_ / name).string();
    fs::remove(p);  // (truncating in place makes ext4 flush on close: slow)
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              std::streamsize(bytes.size()));
    return p;
  }
  // A file from a header text and a data section; n overrides the length.
  std::vector<uint8_t> Raw(const std::string& header, size_t data_bytes,
                           int64_t n = -1) {
    const uint64_t len = n < 0 ? header.size() : uint64_t(n);
    std::vector<uint8_t> b;
    for (int i = 0; i < 8; ++i) b.push_back(uint8_t(len >> (8 * i)));
    b.insert(b.end(), header.begin(), header.end());
    std::mt19937_64 rng(data_bytes);
    for (size_t i = 0; i < data_bytes; ++i) b.push_back(uint8_t(rng() | 1));
    return b;
  }
  // The error message of opening bytes (or "opened").
  std::string Error(const std::vector<uint8_t>& bytes) {
    const std::string p = WriteRaw(bytes);
    try {
      SafetensorsFile::open(p);
    } catch (const lockstep::Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(p), std::string::npos) << "path not named: " << m;
      return m;
    }
    return "opened";
  }

  fs::path dir_;
};

// Two valid tensors, used as the base of the damage tests.
const char* kGood =
    R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F16","shape":[3],"data_offsets":[16,22]}})";

TEST_F(SafetensorsTest, WriterAndReaderRoundTrip) {
  std::mt19937_64 rng(3);
  auto bytes = [&](size_t n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = uint8_t(rng() | 1);
    return b;
  };
  const std::vector<lockstep::SafetensorsTensorData> in = {
      {"z.last", StDtype::kF32, {3, 4}, bytes(48)},
      {"half", StDtype::kF16, {5}, bytes(10)},
      {"brain", StDtype::kBF16, {2, 3}, bytes(12)},
      {"mask", StDtype::kU8, {1, 1, 3, 3}, bytes(9)},
      {"scalar", StDtype::kF32, {}, bytes(4)},
      {"empty", StDtype::kF32, {0, 4}, {}},
      {"ids", StDtype::kI64, {2}, bytes(16)},
  };
  const std::string p = (dir_ / "m.safetensors").string();
  lockstep::write_safetensors(p, in, {{"format", "pt"}, {"who", "test"}});
  EXPECT_FALSE(fs::exists(p + ".tmp." + std::to_string(::getpid())));
  const SafetensorsFile f = SafetensorsFile::open(p);
  EXPECT_EQ(f.header_length() % 8, 0u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("who"), "test");
  ASSERT_EQ(f.tensors().size(), in.size());
  uint64_t at = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    // Written in order, so the offset order is the input order (the empty
    // tensor shares its offset with the next one and sorts first).
    const auto* t = f.find(in[i].name);
    ASSERT_NE(t, nullptr) << in[i].name;
    EXPECT_EQ(t->dtype, in[i].dtype);
    EXPECT_EQ(t->shape, in[i].shape);
    EXPECT_EQ(t->begin, at);
    EXPECT_EQ(t->bytes(), in[i].bytes.size());
    if (!in[i].bytes.empty()) {
      EXPECT_EQ(0, std::memcmp(t->data, in[i].bytes.data(), in[i].bytes.size()))
          << in[i].name;
    }
    at += in[i].bytes.size();
  }
  EXPECT_EQ(f.data_bytes(), at);
  EXPECT_EQ(f.find("nope"), nullptr);
  EXPECT_EQ(f.find("scalar")->elements(), 1u);
  EXPECT_EQ(f.find("empty")->elements(), 0u);
}

TEST_F(SafetensorsTest, WriteFloatsNarrowsPerTensorDtype) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<float> u(-3, 3);
  std::vector<float> v(7000);
  for (auto& x : v) x = u(rng) * std::ldexp(1.0f, int(rng() % 20) - 16);
  const std::string p = (dir_ / "f.safetensors").string();
  {
    lockstep::SafetensorsWriter w(p, {{"a", StDtype::kF32, {1000}},
                                      {"b", StDtype::kF16, {3000}},
                                      {"c", StDtype::kBF16, {3000}}});
    w.write_floats(v.data(), 1234);  // spans tensors
    w.write_floats(v.data() + 1234, v.size() - 1234);
    w.finish();
  }
  const SafetensorsFile f = SafetensorsFile::open(p);
  const auto* a = f.find("a");
  const auto* b = f.find("b");
  const auto* c = f.find("c");
  EXPECT_EQ(0, std::memcmp(a->data, v.data(), 4000));
  for (size_t i = 0; i < 3000; ++i) {
    const uint16_t hb = uint16_t(b->data[2 * i] | b->data[2 * i + 1] << 8);
    const uint16_t hc = uint16_t(c->data[2 * i] | c->data[2 * i + 1] << 8);
    ASSERT_EQ(hb, lockstep::narrow_f16(v[1000 + i])) << i;
    ASSERT_EQ(hc, lockstep::narrow_bf16(v[4000 + i])) << i;
  }
}

TEST_F(SafetensorsTest, WriterIsAtomicAndChecksSizes) {
  const std::string p = (dir_ / "w.safetensors").string();
  const std::string tmp = p + ".tmp." + std::to_string(::getpid());
  const float x[4] = {1.5f, -2.25f, 0.125f, 3.0f};
  {
    lockstep::SafetensorsWriter w(p, {{"a", StDtype::kF32, {4}}});
    w.write_floats(x, 2);
    EXPECT_TRUE(fs::exists(tmp));
    EXPECT_THROW(w.finish(), lockstep::Error);            // two floats missing
    EXPECT_THROW(w.write_floats(x, 3), lockstep::Error);  // one too many
  }
  EXPECT_FALSE(fs::exists(tmp));  // abandoned: removed
  EXPECT_FALSE(fs::exists(p));
  EXPECT_THROW(lockstep::SafetensorsWriter(
                   p, {{"a", StDtype::kF32, {1}}, {"a", StDtype::kF32, {1}}}),
               lockstep::Error);
  {
    lockstep::SafetensorsWriter w(p, {{"ids", StDtype::kI32, {1}}});
    EXPECT_THROW(w.write_floats(x, 1), lockstep::Error);
  }
}

TEST_F(SafetensorsTest, ReadsTheHfFixture) {
  const std::string dir = LOCKSTEP_SOURCE_DIR "/tests/data/hf-gpt2-A";
  const SafetensorsFile f = SafetensorsFile::open(dir + "/model.safetensors");
  std::ifstream in(dir + "/cases.json");
  const nlohmann::json cases = nlohmann::json::parse(in);
  const auto& keys = cases["safetensors_keys"];
  ASSERT_EQ(f.tensors().size(), keys.size());
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    const auto* t = f.find(it.key());
    ASSERT_NE(t, nullptr) << it.key();
    EXPECT_EQ(t->dtype, StDtype::kF32);
    EXPECT_EQ(t->shape, it.value().get<std::vector<uint64_t>>()) << it.key();
  }
  EXPECT_EQ(f.metadata().at("format"), "pt");
}

TEST_F(SafetensorsTest, MissingAndEmptyFiles) {
  const std::string nope = (dir_ / "nope.safetensors").string();
  try {
    SafetensorsFile::open(nope);
    FAIL() << "opened a missing file";
  } catch (const lockstep::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(Error({}).find("is empty"), std::string::npos);
  try {
    SafetensorsFile::open(dir_.string());
    FAIL() << "opened a directory";
  } catch (const lockstep::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SafetensorsTest, DamagedHeadersAreRejectedWithNamedErrors) {
  const std::string good = kGood;
  ASSERT_EQ(Error(Raw(good, 22)), "opened");
  struct Case {
    std::string what;
    std::vector<uint8_t> bytes;
    std::string expect;
  };
  auto with = [&](const std::string& from, const std::string& to) {
    std::string h = good;
    const size_t at = h.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    h.replace(at, from.size(), to);
    return h;
  };
  std::vector<uint8_t> tiny = {1, 2, 3, 4, 5};
  const std::vector<Case> cases = {
      {"truncated header length", tiny, "shorter than the 8-byte header"},
      {"length beyond file", Raw(good, 22, int64_t(good.size() + 23)),
       "runs past the end of the file"},
      {"absurd length", Raw(good, 22, int64_t(1) << 40), "exceeds the limit"},
      {"not an object", Raw("[1,2,3]", 0), "does not start with '{'"},
      {"invalid JSON", Raw(with("}}", "}"), 22), "not valid JSON"},
      {"invalid UTF-8", Raw(with("\"b\"", "\"\xff\""), 22), "not valid JSON"},
      {"duplicate key",
       Raw(with("\"b\":",
                "\"a\":{\"dtype\":\"F32\",\"shape\":[4],"
                "\"data_offsets\":[0,16]},\"b\":"),
           22),
       "the key 'a' twice"},
      {"metadata not strings", Raw(with("\"pt\"", "7"), 22), "is not a string"},
      {"unknown dtype", Raw(with("\"F16\"", "\"F17\""), 22),
       "tensor 'b': unknown dtype 'F17'"},
      {"negative dimension", Raw(with("[3]", "[-3]"), 22),
       "tensor 'b': shape [-3] is not a list"},
      {"fractional dimension", Raw(with("[3]", "[3.0]"), 22),
       "tensor 'b': shape"},
      {"unknown field",
       Raw(with("\"dtype\":\"F16\"",
                "\"dtype\":\"F16\","
                "\"strides\":[1]"),
           22),
       "tensor 'b': unknown field 'strides'"},
      {"missing offsets", Raw(with(",\"data_offsets\":[16,22]", ""), 22),
       "tensor 'b': lacks 'data_offsets'"},
      {"three offsets", Raw(with("[16,22]", "[16,22,24]"), 22),
       "tensor 'b': lacks 'data_offsets'"},
      {"shape/offset size mismatch", Raw(with("[2,2]", "[2,3]"), 22),
       "tensor 'a': data_offsets [0, 16] hold 16 bytes but dtype F32 and "
       "shape [2, 3] need 24"},
      {"end before begin", Raw(with("[16,22]", "[22,16]"), 22),
       "tensor 'b': data_offsets [22, 16] end before they begin"},
      {"shape overflow", Raw(with("[3]", "[4294967296,4294967296]"), 22),
       "tensor 'b': shape [4294967296, 4294967296] overflows"},
      {"offsets outside data", Raw(good, 20),
       "tensor 'b': data_offsets [16, 22] run outside the data section"},
      {"overlapping tensors",
       Raw(with("\"data_offsets\":[16,22]", "\"data_offsets\":[10,16]"), 22),
       "overlaps tensor"},
      {"gap",
       Raw(with("\"shape\":[2,2],\"data_offsets\":[0,16]",
                "\"shape\":[2],\"data_offsets\":[0,8]"),
           22),
       "bytes 8..16 of the data section, before tensor 'b', belong to no "
       "tensor"},
      {"trailing bytes", Raw(good, 30), "trailing bytes are not allowed"},
      {"entry not object", Raw(with("\"b\":{", "\"c\":7,\"b\":{"), 22),
       "tensor 'c': entry is not an object"},
  };
  for (const auto& c : cases) {
    const std::string e = Error(c.bytes);
    if (std::getenv("LOCKSTEP_PRINT_ERRORS")) std::printf("%s\n", e.c_str());
    EXPECT_NE(e.find(c.expect), std::string::npos)
        << c.what << ": got '" << e << "'";
  }
}

TEST_F(SafetensorsTest, EveryTruncationAndRandomDamageIsAnErrorNotACrash) {
  const std::vector<uint8_t> good = Raw(kGood, 22);
  for (size_t len = 0; len < good.size(); ++len) {
    const std::string e =
        Error(std::vector<uint8_t>(good.begin(), good.begin() + long(len)));
    EXPECT_NE(e, "opened") << "length " << len;
  }
  std::mt19937_64 rng(1234);
  int opened = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> b = good;
    const int flips = 1 + int(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      b[rng() % (8 + std::strlen(kGood))] = uint8_t(rng());
    }
    const std::string e = Error(b);
    opened += e == "opened";
    if (e == "opened") {  // still self-consistent: every tensor in range
      const SafetensorsFile f =
          SafetensorsFile::open((dir_ / "bad.safetensors").string());
      for (const auto& t : f.tensors()) EXPECT_LE(t.end, f.data_bytes());
    }
  }
  EXPECT_LT(opened, 3000);
}

}  // namespace
