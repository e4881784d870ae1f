// Issue 13, "Fuzzed parsers": the limits every reader enforces before
// anything can go wrong (docs/fuzzing.md). A JSON text nested deeper than
// kMaxJsonDepth is refused while it is parsed, in all four JSON readers
// (safetensors header, HF config.json, packed GPT-2 header, tiny model
// header), instead of overflowing the stack later; every size product is
// checked where it is formed (the issue's own examples); the one atomic
// writer leaves the old file or the new one; and the regressions the fuzz
// harnesses found.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "formats/atomic_file.h"
#include "formats/bounded_json.h"
#include "formats/checkpoint.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/safetensors.h"
#include "lockstep/error.h"
#include "lockstep/tiny.h"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// The message of the lockstep::Error f throws, or "no error". Anything else
// (a crash, another exception type) fails the test.
std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const lockstep::Error& e) {
    return e.what();
  }
  return "no error";
}

::testing::AssertionResult Contains(const std::string& text,
                                    const std::string& want) {
  if (text.find(want) != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "expected '" << want << "' in '" << text.substr(0, 400) << "'";
}

// `depth` nested arrays: [[[...]]].
std::string Nested(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

Bytes ToBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A checkpoint container around a raw header text and payload (the header
// padded to the 64-byte payload alignment; the digest correct).
Bytes Container(std::string header, const Bytes& payload, uint32_t version) {
  while ((56 + header.size()) % 64 != 0) header.push_back(' ');
  Bytes out(lockstep::kCheckpointMagic, lockstep::kCheckpointMagic + 8);
  auto put = [&out](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(uint8_t(v >> (8 * i)));
  };
  put(version, 4);
  put(header.size(), 4);
  put(payload.size(), 8);
  const lockstep::Sha256 d = lockstep::sha256(payload.data(), payload.size());
  out.insert(out.end(), d.begin(), d.end());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

class ParserLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep_limits_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const Bytes& b) {
    const std::string p = (dir_ / name).string();
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()),
              std::streamsize(b.size()));
    return p;
  }
  fs::path dir_;
};

// ---- nesting depth

TEST(BoundedJson, AcceptsTheLimitAndRefusesOneMore) {
  const std::string ok = Nested(lockstep::kMaxJsonDepth);
  EXPECT_NO_THROW(lockstep::parse_bounded_json(ok.begin(), ok.end()));
  const std::string deep = Nested(lockstep::kMaxJsonDepth + 1);
  try {
    lockstep::parse_bounded_json(deep.begin(), deep.end());
    FAIL() << "parsed " << lockstep::kMaxJsonDepth + 1 << " levels";
  } catch (const lockstep::JsonTooDeep& e) {
    EXPECT_EQ(e.depth, lockstep::kMaxJsonDepth + 1);
  }
  // Objects count as levels too.
  std::string obj;
  for (int i = 0; i <= lockstep::kMaxJsonDepth; ++i) obj += "{\"a\":";
  obj += "1" + std::string(size_t(lockstep::kMaxJsonDepth) + 1, '}');
  EXPECT_THROW(lockstep::parse_bounded_json(obj.begin(), obj.end()),
               lockstep::JsonTooDeep);
}

// The issue's example: about 65,000 levels crashed convert and info with a
// stack overflow in all four readers.
constexpr size_t kIssueDepth = 65000;

TEST_F(ParserLimits, DeepSafetensorsHeaderIsAnError) {
  const std::string header =
      "{\"__metadata__\":{\"x\":" + Nested(kIssueDepth) + "}}";
  Bytes b;
  for (int i = 0; i < 8; ++i) b.push_back(uint8_t(header.size() >> (8 * i)));
  for (char ch : header) b.push_back(uint8_t(ch));
  EXPECT_TRUE(
      Contains(ErrorOf([&] { lockstep::SafetensorsFile::parse(b, "s"); }),
               "safetensors 's': the header is nested deeper than 128"));
  const std::string p = Write("deep.safetensors", b);
  EXPECT_TRUE(Contains(ErrorOf([&] { lockstep::SafetensorsFile::open(p); }),
                       "nested deeper than 128"));
}

TEST_F(ParserLimits, DeepHfConfigIsAnError) {
  const std::string cfg = "{\"n_embd\":" + Nested(kIssueDepth) + "}";
  EXPECT_TRUE(Contains(
      ErrorOf([&] { lockstep::parse_hf_gpt2_config(ToBytes(cfg), "c"); }),
      "config 'c': nested deeper than 128"));
  const std::string p = Write("config.json", ToBytes(cfg));
  EXPECT_TRUE(Contains(ErrorOf([&] { lockstep::read_hf_gpt2_config(p); }),
                       "nested deeper than 128"));
}

TEST_F(ParserLimits, DeepPackedAndTinyHeadersAreErrors) {
  for (const char* model : {"gpt2", "tiny"}) {
    const std::string header = std::string("{\"model\":\"") + model +
                               "\",\"dtype\":\"f32\",\"config\":{},"
                               "\"tensors\":[],\"words\":0,\"meta\":" +
                               Nested(kIssueDepth) + "}";
    const Bytes b = Container(header, {}, 1);
    const std::string p = Write(std::string(model) + ".lockstep", b);
    for (const std::string& e :
         {ErrorOf([&] { lockstep::parse_gpt2_packed(b, "k", false); }),
          ErrorOf([&] { lockstep::parse_checkpoint(b, "k"); }),
          ErrorOf([&] { lockstep::load_gpt2(p); }),
          ErrorOf([&] { lockstep::load_tiny(p); }),
          ErrorOf([&] { lockstep::checkpoint_model_kind(p); })}) {
      EXPECT_TRUE(Contains(e, "header at offset 56 is nested deeper than 128"))
          << model;
    }
  }
}

// ---- size products

TEST(SizeProducts, ShapeWhoseProductWrapsIsRefusedWhereItIsRead) {
  // [2^40, 2^40, 2^40] multiplied to 0 words, which "covered" an empty
  // payload.
  const std::string header =
      "{\"model\":\"tiny\",\"dtype\":\"f64\",\"config\":{},\"tensors\":"
      "[{\"name\":\"w\",\"shape\":[1099511627776,1099511627776,"
      "1099511627776],\"offset\":0}],\"words\":0}";
  const Bytes b = Container(header, {}, 1);
  EXPECT_TRUE(Contains(ErrorOf([&] { lockstep::parse_checkpoint(b, "k"); }),
                       "tensor 'w' has a shape whose product of dimensions "
                       "overflows 64 bits"));
  lockstep::TensorInfo t;
  t.name = "w";
  t.shape = {int64_t(1) << 40, int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_TRUE(Contains(ErrorOf([&] { t.words(); }), "overflows 64 bits"));
}

TEST(SizeProducts, WordsTimesEightThatWrapsIsRefused) {
  // "words": 2^61 + 1 times 8 bytes is 8 modulo 2^64: it matched an 8-byte
  // payload.
  const std::string header =
      "{\"model\":\"tiny\",\"dtype\":\"f64\",\"config\":{},\"tensors\":"
      "[{\"name\":\"w\",\"shape\":[1],\"offset\":0}],"
      "\"words\":2305843009213693953}";
  const Bytes b = Container(header, Bytes(8, 0x3f), 1);
  EXPECT_TRUE(Contains(ErrorOf([&] { lockstep::parse_checkpoint(b, "k"); }),
                       "header says 2305843009213693953 words of f64 but the "
                       "payload is 8 bytes"));
}

TEST_F(ParserLimits, SafetensorsWriterRefusesASizeThatOverflows) {
  const std::string p = (dir_ / "big.safetensors").string();
  // 2^62 * 4 elements of 4 bytes: 2^66 bytes.
  EXPECT_TRUE(Contains(
      ErrorOf([&] {
        lockstep::SafetensorsWriter w(
            p, {{"a", lockstep::StDtype::kF32, {uint64_t(1) << 62, 4}}});
      }),
      "cannot write tensor 'a': shape [4611686018427387904, "
      "4] (with the tensors before it) overflows 64 bits"));
  // Each fits, the sum does not.
  EXPECT_TRUE(Contains(ErrorOf([&] {
                         lockstep::SafetensorsWriter w(
                             p, {{"a", lockstep::StDtype::kU8, {~0ull}},
                                 {"b", lockstep::StDtype::kU8, {2}}});
                       }),
                       "cannot write tensor 'b'"));
  EXPECT_TRUE(fs::is_empty(dir_));
}

// ---- the atomic writer

TEST_F(ParserLimits, AtomicFileCommitsOrLeavesNothing) {
  const std::string p = (dir_ / "f.bin").string();
  lockstep::write_file_atomic(p, ToBytes("old"));
  {
    lockstep::AtomicFile f(p);
    f.write("new!", 4);
    EXPECT_TRUE(fs::exists(f.temporary()));
    // Abandoned: the temporary goes, the old file stays.
  }
  std::ifstream in(p, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
  {
    lockstep::AtomicFile f(p);
    f.write("xxxxtail", 8);
    f.pwrite("head", 4, 0);
    f.commit();
  }
  std::ifstream again(p, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(again), {}), "headtail");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename(), "f.bin");
    ++files;
  }
  EXPECT_EQ(files, 1u);
  EXPECT_TRUE(Contains(ErrorOf([&] {
                         lockstep::write_file_atomic(
                             (dir_ / "no-such" / "f.bin").string(), {});
                       }),
                       "cannot open"));
}

// ---- regressions found by the fuzz harnesses (docs/fuzzing.md)

// fuzz_safetensors: widening zero F32 elements called memcpy with null
// pointers (undefined behaviour, reported by UBSan in the sanitizer build).
TEST(FuzzRegressions, WideningNothingTouchesNothing) {
  for (auto d : {lockstep::StDtype::kF32, lockstep::StDtype::kF16,
                 lockstep::StDtype::kBF16}) {
    EXPECT_NO_THROW(lockstep::widen_to_f32(d, nullptr, 0, nullptr));
  }
}

}  // namespace
