// docs/checkpoint-format.md: round trips, and every kind of damage gives an
// error that names the problem (never a crash, never a half-read model).
#include "formats/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "lockstep/error.h"
#include "lockstep/tiny.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using lockstep::test::BytesEqual;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::mt19937_64 rng(77);
    weights_ =
        lockstep::test::Uniform(rng, lockstep::tiny_param_count(64), -2, 2);
    path_ = (dir_ / "m.lockstep").string();
    lockstep::save_tiny(path_, 64, weights_, {{"note", "test"}});
    std::ifstream in(path_, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::vector<uint8_t>& b) {
    const std::string p = (dir_ / "damaged.lockstep").string();
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()),
              std::streamsize(b.size()));
    return p;
  }
  std::string LoadError(const std::vector<uint8_t>& b) {
    try {
      lockstep::load_tiny(Write(b));
    } catch (const lockstep::Error& e) {
      return e.what();
    }
    return "loaded";
  }

  fs::path dir_;
  std::string path_;
  std::vector<double> weights_;
  std::vector<uint8_t> bytes_;
};

TEST_F(CheckpointTest, RoundTripIsExactAndDigestsAreStable) {
  const lockstep::TinyModel m = lockstep::load_tiny(path_);
  EXPECT_EQ(m.n_ctx, 64);
  EXPECT_TRUE(BytesEqual(m.weights, weights_));
  EXPECT_EQ(m.payload_sha256, lockstep::to_hex(lockstep::sha256(
                                  weights_.data(), weights_.size() * 8)));
  EXPECT_EQ(m.file_sha256, lockstep::sha256_file_hex(path_));
  EXPECT_EQ(m.meta["note"], "test");
  // The payload starts on a 64-byte boundary and fills the file's end.
  EXPECT_EQ((bytes_.size() - weights_.size() * 8) % 64, 0u);
  // Writing the same model twice gives the same bytes.
  lockstep::save_tiny(path_, 64, weights_, {{"note", "test"}});
  std::ifstream in(path_, std::ios::binary);
  std::vector<uint8_t> again(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(again, bytes_);
}

TEST_F(CheckpointTest, TruncationsAreRejected) {
  for (size_t len : {size_t(0), size_t(7), size_t(55), size_t(56), size_t(100),
                     bytes_.size() - 8 * 100, bytes_.size() - 1}) {
    std::vector<uint8_t> b(bytes_.begin(), bytes_.begin() + long(len));
    const std::string e = LoadError(b);
    EXPECT_NE(e.find("truncated"), std::string::npos) << len << ": " << e;
  }
}

TEST_F(CheckpointTest, DamageIsNamed) {
  auto b = bytes_;
  b[0] = 'X';
  EXPECT_NE(LoadError(b).find("bad magic"), std::string::npos);
  b = bytes_;
  b[8] = 2;
  EXPECT_NE(LoadError(b).find("version 2"), std::string::npos);
  b = bytes_;
  b[b.size() - 3] ^= 0x10;  // one bit of one weight
  EXPECT_NE(LoadError(b).find("SHA-256"), std::string::npos);
  b = bytes_;
  b[56] = '[';  // the header is no longer an object
  EXPECT_NE(LoadError(b).find("header"), std::string::npos);
  b = bytes_;
  b[57] = '#';
  EXPECT_NE(LoadError(b).find("JSON"), std::string::npos);
}

TEST_F(CheckpointTest, WrongLayoutOrModelIsRejected) {
  lockstep::Checkpoint c = lockstep::read_checkpoint(path_);
  c.tensors[4].name = "h0.attn.qkv";
  std::string e = LoadError(lockstep::encode_checkpoint(c));
  EXPECT_NE(e.find("expected 'h0.attn.c_attn.w'"), std::string::npos) << e;
  c = lockstep::read_checkpoint(path_);
  c.model = "gpt2";
  e = LoadError(lockstep::encode_checkpoint(c));
  EXPECT_NE(e.find("expected 'tiny'"), std::string::npos) << e;
  c = lockstep::read_checkpoint(path_);
  c.config["n_embd"] = 8;
  e = LoadError(lockstep::encode_checkpoint(c));
  EXPECT_NE(e.find("not the tiny architecture"), std::string::npos) << e;
}

TEST_F(CheckpointTest, RandomByteFlipsNeverCrash) {
  std::mt19937_64 rng(5);
  int rejected = 0;
  for (int i = 0; i < 300; ++i) {
    auto b = bytes_;
    const size_t at = rng() % (bytes_.size() - weights_.size() * 8);
    b[at] = uint8_t(rng());
    rejected += LoadError(b) != "loaded";
  }
  EXPECT_GT(rejected, 0);
}

TEST_F(CheckpointTest, AtomicWriteLeavesNoTemporaryAndFailsCleanly) {
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos);
  }
  const std::string nowhere = (dir_ / "no-such-dir" / "m.lockstep").string();
  EXPECT_THROW(lockstep::save_tiny(nowhere, 64, weights_, {}), lockstep::Error);
  EXPECT_FALSE(fs::exists(nowhere));
  EXPECT_THROW(lockstep::save_tiny(path_, 4, weights_, {}), lockstep::Error);
  EXPECT_TRUE(BytesEqual(lockstep::load_tiny(path_).weights, weights_));
}

}  // namespace
