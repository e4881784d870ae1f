// docs/tokenizer.md: GPT-2's byte-level BPE. Ids against Hugging Face's
// `tokenizers` (tests/data/tokenizer_hf_ref.json) and pinned on Tiny
// Shakespeare (the same ids as gpt-3-encoder@1.1.4, checked by the CTest
// tokenizer_vs_gpt3_encoder); the BPE stage against a direct transcription of
// GPT-2's encoder.py; pre-tokenisation on JavaScript's classes; the
// invalid-UTF-8 rule; round trips; errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "formats/sha256.h"
#include "lockstep/error.h"
#include "reference_bpe.h"
#include "tokenizer/bpe.h"

namespace {

namespace fs = std::filesystem;
using lockstep::Tokenizer;
using Ids = std::vector<int32_t>;

const std::string kDataDir = LOCKSTEP_SOURCE_DIR "/data/gpt2";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open " << path;
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

const Tokenizer& Tok() {
  static const Tokenizer tok = Tokenizer::load(kDataDir);
  return tok;
}

std::string Show(const Ids& ids, size_t from, size_t to) {
  std::string s = "[";
  for (size_t i = from; i < std::min(to, ids.size()); ++i) {
    if (i > from) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

// Exact equality of id sequences; on failure, the first differing index with
// both values and the ids around it.
::testing::AssertionResult IdsEqual(const Ids& got, const Ids& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  auto v = [](const Ids& x, size_t k) {
    return k < x.size() ? std::to_string(x[k]) : std::string("(end)");
  };
  size_t lo = i < 5 ? 0 : i - 5;
  return ::testing::AssertionFailure()
         << "first difference at index " << i << ": got " << v(got, i)
         << ", want " << v(want, i) << " (lengths " << got.size() << " vs "
         << want.size() << "); got " << Show(got, lo, i + 6) << ", want "
         << Show(want, lo, i + 6);
}

// Byte equality with the first differing offset.
::testing::AssertionResult SameBytes(const std::string& got,
                                     const std::string& want) {
  if (got == want) return ::testing::AssertionSuccess();
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  return ::testing::AssertionFailure()
         << "first difference at byte " << i << " (lengths " << got.size()
         << " vs " << want.size() << ")";
}

std::vector<std::string> Pieces(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : Tok().pretokenize(text)) out.emplace_back(p);
  return out;
}

// ---- the BPE stage's reference: a transcription of GPT-2's encoder.py
// (tests/reference_bpe.h), sharing nothing with tokenizer/bpe.cc.
class ReferenceBpe : public lockstep::test::ReferenceBpe {
 public:
  ReferenceBpe() : lockstep::test::ReferenceBpe(kDataDir) {}
};

Ids ReferenceEncode(ReferenceBpe& ref, std::string_view text) {
  Ids ids;
  for (std::string_view p : Tok().pretokenize(text)) {
    Ids part = ref.Encode(p);
    ids.insert(ids.end(), part.begin(), part.end());
  }
  return ids;
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::uniform_int_distribution<int> d(0, 255);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(d(rng));
  return s;
}

// ---- vocabulary and known ids

TEST(Tokenizer, VocabularyOfGpt2) {
  const Tokenizer& tok = Tok();
  EXPECT_EQ(tok.vocab_size(), 50257);
  EXPECT_EQ(tok.token_bytes(50256), "<|endoftext|>");
  EXPECT_EQ(tok.token_bytes(0), "!");
  EXPECT_EQ(tok.token_bytes(198), "\n");
  EXPECT_EQ(tok.token_bytes(220), " ");
  EXPECT_EQ(tok.token_bytes(188), std::string(1, '\0'));
  EXPECT_EQ(tok.token_bytes(255), "\xAD");
  EXPECT_EQ(tok.token_bytes(15496), "Hello");
  EXPECT_EQ(tok.token_bytes(995), " world");
  // Every byte has a one-byte token.
  std::array<int, 256> count{};
  for (int32_t id = 0; id < 50256; ++id) {
    if (tok.token_bytes(id).size() == 1) {
      ++count[static_cast<unsigned char>(tok.token_bytes(id)[0])];
    }
  }
  for (int b = 0; b < 256; ++b) EXPECT_EQ(count[b], 1) << "byte " << b;
}

// The ten strings of tests/data/tokenizer_hf_ref.json (Hugging Face
// `tokenizers` ids, copied from /work/shared/fixtures).
TEST(Tokenizer, MatchesHuggingFaceFixture) {
  auto cases = nlohmann::json::parse(
      ReadFile(LOCKSTEP_SOURCE_DIR "/tests/data/tokenizer_hf_ref.json"));
  ASSERT_EQ(cases.size(), 10u);
  for (const auto& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    EXPECT_TRUE(IdsEqual(Tok().encode(text), c.at("ids").get<Ids>()))
        << "text " << nlohmann::json(text).dump();
  }
}

TEST(Tokenizer, KnownIds) {
  EXPECT_TRUE(IdsEqual(Tok().encode("Hello world"), {15496, 995}));
  EXPECT_TRUE(IdsEqual(Tok().encode(" Hello"), {18435}));
  EXPECT_TRUE(IdsEqual(Tok().encode("\n\n"), {628}));
  EXPECT_TRUE(IdsEqual(Tok().encode("a\n\nb"), {64, 198, 198, 65}));
  EXPECT_TRUE(IdsEqual(Tok().encode(""), {}));
}

// Tiny Shakespeare's ids, pinned: the count and the SHA-256 of the ids as
// little-endian int32. tokenizer_vs_gpt3_encoder checks the same ids against
// gpt-3-encoder@1.1.4 id by id.
TEST(Tokenizer, TinyShakespearePinned) {
  const std::string text =
      ReadFile(LOCKSTEP_SOURCE_DIR "/data/tinyshakespeare.txt");
  ASSERT_EQ(text.size(), 1115394u);
  const Ids ids = Tok().encode(text);
  EXPECT_EQ(ids.size(), 338025u);
  std::string le;
  for (int32_t id : ids) {
    for (int k = 0; k < 4; ++k) le.push_back(static_cast<char>(id >> (8 * k)));
  }
  EXPECT_EQ(lockstep::to_hex(lockstep::sha256(le.data(), le.size())),
            "0c00ab83dc7f46665805762aa7688fb7852f03f28c4a5d84061871e85ea7c815");
  EXPECT_TRUE(IdsEqual(
      Ids(ids.begin(), ids.begin() + 12),
      {5962, 22307, 25, 198, 8421, 356, 5120, 597, 2252, 11, 3285, 502}));
  EXPECT_TRUE(SameBytes(Tok().decode(ids), text));
}

// ---- the BPE stage against encoder.py

TEST(Tokenizer, BpeEqualsEncoderPyOnTinyShakespeare) {
  ReferenceBpe ref;
  const std::string text =
      ReadFile(LOCKSTEP_SOURCE_DIR "/data/tinyshakespeare.txt");
  EXPECT_TRUE(IdsEqual(Tok().encode(text), ReferenceEncode(ref, text)));
}

TEST(Tokenizer, BpeEqualsEncoderPyOnRandomBytes) {
  ReferenceBpe ref;
  std::mt19937_64 rng(2024);
  for (int k = 0; k < 300; ++k) {
    const std::string text = RandomBytes(rng, 1 + k % 97);
    ASSERT_TRUE(IdsEqual(Tok().encode(text), ReferenceEncode(ref, text)))
        << "random string " << k;
  }
  // Long single pre-tokens: letters, digits, punctuation, spaces.
  for (std::string text :
       {std::string(3000, 'x'), std::string(3000, '7'), std::string(3000, '!'),
        "a" + std::string(3000, ' ') + "b", std::string(1500, ',')}) {
    ASSERT_TRUE(IdsEqual(Tok().encode(text), ReferenceEncode(ref, text)))
        << "long run of " << text.substr(0, 2);
  }
}

// ---- pre-tokenisation: the GPT-2 pattern with JavaScript's \s

TEST(Tokenizer, PretokensOfThePattern) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Pieces("I'm can't we'll they've"),
            (V{"I", "'m", " can", "'t", " we", "'ll", " they", "'ve"}));
  // Contractions are case-sensitive and take no other apostrophe.
  EXPECT_EQ(Pieces("IT'S I\u2019m"), (V{"IT", "'", "S", " I", "\u2019", "m"}));
  EXPECT_EQ(Pieces("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(Pieces("a   \nb"), (V{"a", "   ", "\n", "b"}));
  EXPECT_EQ(Pieces("x  "), (V{"x", "  "}));
  EXPECT_EQ(Pieces(" 123 4.5"), (V{" 123", " 4", ".", "5"}));
  EXPECT_EQ(Pieces("?!. ,,x"), (V{"?!.", " ,,", "x"}));
  // Letters and numbers of every script; combining marks are neither.
  EXPECT_EQ(Pieces("x\u0663y 12\u06634"),
            (V{"x", "\u0663", "y", " 12\u06634"}));
  EXPECT_EQ(Pieces("\u00bd\u2167\u00b2"), (V{"\u00bd\u2167\u00b2"}));
  EXPECT_EQ(Pieces("cafe\u0301s"), (V{"cafe", "\u0301", "s"}));
  EXPECT_EQ(Pieces("\u65e5\u672c\u8a9e\u3002"),
            (V{"\u65e5\u672c\u8a9e", "\u3002"}));
}

// JavaScript's \s (gpt-3-encoder's): U+00A0, U+3000, U+FEFF, U+2028 are
// spaces; U+0085 and U+180E are not (PCRE2's own \s would say the opposite
// for those three; docs/tokenizer.md).
TEST(Tokenizer, WhitespaceIsJavaScriptWhitespace) {
  using V = std::vector<std::string>;
  for (const char* space : {"\u00a0", "\u2009", "\u3000", "\ufeff", "\u2028",
                            "\u2029", "\u1680", "\u202f", "\t", "\v", "\f"}) {
    const std::string s = space;
    EXPECT_EQ(Pieces("!" + s + "!"), (V{"!", s, "!"})) << "U+" << s;
    EXPECT_EQ(Pieces("!" + s + s + "a"), (V{"!", s, s, "a"})) << "U+" << s;
  }
  for (const char* other : {"\u0085", "\u180e", "\u200b", "\u200d"}) {
    const std::string s = other;
    EXPECT_EQ(Pieces("!" + s + "!"), (V{"!" + s + "!"}));
    EXPECT_EQ(Pieces(" " + s + "a"), (V{" " + s, "a"}));
  }
}

// ---- <|endoftext|>

TEST(Tokenizer, EndOfTextIsPlainTextByDefault) {
  const Ids plain = {27, 91, 437, 1659, 5239, 91, 29};
  EXPECT_TRUE(IdsEqual(Tok().encode("<|endoftext|>"), plain));
  EXPECT_TRUE(IdsEqual(Tok().encode("<|endoftext|>", false), plain));
  EXPECT_TRUE(IdsEqual(Tok().encode("<|endoftext|>", true), {50256}));
  EXPECT_TRUE(IdsEqual(Tok().encode("Hi<|endoftext|> there", true),
                       {17250, 50256, 612}));
  EXPECT_TRUE(IdsEqual(Tok().encode("<|endoftext|><|endoftext|>", true),
                       {50256, 50256}));
  // Text around the marker is encoded separately (no pre-token crosses it).
  EXPECT_TRUE(
      IdsEqual(Tok().encode("a <|endoftext|> b", true), {64, 220, 50256, 275}));
  // Near misses stay text.
  EXPECT_TRUE(IdsEqual(Tok().encode("<|endoftext|", true),
                       Tok().encode("<|endoftext|")));
  EXPECT_EQ(Tok().decode(Ids{50256}), "<|endoftext|>");
  EXPECT_EQ(Tok().decode(Tok().encode("x<|endoftext|>y", true)),
            "x<|endoftext|>y");
}

// ---- round trips

TEST(Tokenizer, RoundTripsValidUtf8) {
  auto cases = nlohmann::json::parse(
      ReadFile(LOCKSTEP_SOURCE_DIR "/tests/data/tokenizer_adversarial.json"));
  ASSERT_GE(cases.size(), 80u);
  for (const auto& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    EXPECT_TRUE(SameBytes(Tok().decode(Tok().encode(text)), text))
        << c.at("name");
    EXPECT_TRUE(SameBytes(Tok().decode(Tok().encode(text, true)), text))
        << c.at("name");
  }
}

// The rule for ill-formed UTF-8 (docs/tokenizer.md): a byte that does not
// start a well-formed sequence (Unicode Table 3-7) stands alone and is
// pre-tokenised as U+FFFD would be (neither letter, number nor space); BPE
// then runs on the original bytes. So encode is total and
// decode(encode(bytes)) == bytes for all bytes.
TEST(Tokenizer, InvalidUtf8Rule) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Pieces("ab\xFF"
                   "cd"),
            (V{"ab", "\xFF", "cd"}));
  EXPECT_EQ(Pieces("!\xFF?"), (V{"!\xFF?"}));
  EXPECT_EQ(Pieces(" \xFFx"), (V{" \xFF", "x"}));
  EXPECT_EQ(Pieces("a \xC3"), (V{"a", " \xC3"}));          // truncated
  EXPECT_EQ(Pieces("\xE2\x82x"), (V{"\xE2\x82", "x"}));    // truncated
  EXPECT_EQ(Pieces("\xC0\x80"), (V{"\xC0\x80"}));          // overlong NUL
  EXPECT_EQ(Pieces("\xED\xA0\x80"), (V{"\xED\xA0\x80"}));  // surrogate
  EXPECT_EQ(Pieces("\xF4\x90\x80\x80"), (V{"\xF4\x90\x80\x80"}));  // >10FFFF
  EXPECT_EQ(Pieces("\x80"
                   "abc\xBF"),
            (V{"\x80", "abc", "\xBF"}));
  // A valid sequence right after an invalid byte keeps its class.
  EXPECT_EQ(Pieces("\xFF\xC3\xA9t\xC3\xA9"), (V{"\xFF", "\xC3\xA9t\xC3\xA9"}));
  // Single bytes encode to their byte tokens.
  ASSERT_EQ(Tok().encode("\xFF").size(), 1u);
  ASSERT_EQ(Tok().encode("\x80").size(), 1u);
  EXPECT_EQ(Tok().token_bytes(Tok().encode("\xFF")[0]), "\xFF");
  EXPECT_EQ(Tok().token_bytes(Tok().encode("\x80")[0]), "\x80");
  // The same pre-tokens as the text with each such byte replaced by U+FFFD.
  std::mt19937_64 rng(11);
  const std::array<std::string, 12> parts = {"a",    "Z",        "1",
                                             " ",    "\n",       "!",
                                             "'s",   "\xC3\xA9", "\xE3\x80\x80",
                                             "\xFF", "\x80",     "\xE2\x82"};
  std::uniform_int_distribution<size_t> pick(0, parts.size() - 1);
  for (int k = 0; k < 2000; ++k) {
    std::string text, replaced;
    std::vector<size_t> where;  // offset in text of each byte of replaced
    for (int j = 0, prev = 0; j < 12; ++j) {
      int index = static_cast<int>(pick(rng));
      // E2 82 then 80 would be U+2080, a valid sequence.
      if (parts[prev] == "\xE2\x82" && parts[index] == "\x80") index = 5;
      prev = index;
      const std::string& p = parts[index];
      for (size_t b = 0; b < p.size(); ++b) {
        unsigned char c = static_cast<unsigned char>(p[b]);
        bool invalid = p == "\xFF" || p == "\x80" || p == "\xE2\x82";
        if (invalid) {
          for (int r = 0; r < 3; ++r) where.push_back(text.size());
          replaced += "\xEF\xBF\xBD";
        } else {
          where.push_back(text.size());
          replaced.push_back(static_cast<char>(c));
        }
        text.push_back(static_cast<char>(c));
      }
    }
    where.push_back(text.size());
    std::vector<size_t> want, got;
    size_t at = 0;
    for (std::string_view p : Tok().pretokenize(replaced)) {
      want.push_back(where[at += p.size()]);
    }
    at = 0;
    for (std::string_view p : Tok().pretokenize(text)) {
      got.push_back(at += p.size());
    }
    ASSERT_EQ(got, want) << "case " << k;
  }
}

TEST(Tokenizer, RoundTripsAnyBytes) {
  std::mt19937_64 rng(5);
  for (int k = 0; k < 2000; ++k) {
    const std::string text = RandomBytes(rng, k % 300);
    ASSERT_TRUE(SameBytes(Tok().decode(Tok().encode(text)), text))
        << "random bytes " << k;
  }
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_TRUE(SameBytes(Tok().decode(Tok().encode(all)), all));
}

// Long inputs stay fast (no quadratic step, no PCRE2 stack limit).
TEST(Tokenizer, LongRuns) {
  const std::string spaces(1 << 20, ' ');
  const Ids ids = Tok().encode(spaces);
  EXPECT_TRUE(SameBytes(Tok().decode(ids), spaces));
  const std::string letters(1 << 20, 'q');
  EXPECT_TRUE(SameBytes(Tok().decode(Tok().encode(letters)), letters));
  std::string mixed;
  for (int k = 0; k < 100000; ++k) mixed += "\u3000 \n\t\u00a0";
  EXPECT_TRUE(SameBytes(Tok().decode(Tok().encode(mixed)), mixed));
  EXPECT_EQ(Tok().pretokenize(std::string(1 << 20, '\n') + "x").size(), 3u);
}

TEST(Tokenizer, ConcurrentEncodesAgree) {
  const std::string text =
      ReadFile(LOCKSTEP_SOURCE_DIR "/data/tinyshakespeare.txt")
          .substr(0, 200000);
  const Ids want = Tok().encode(text);
  std::vector<Ids> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { got[t] = Tok().encode(text); });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(IdsEqual(got[t], want));
}

// ---- errors

TEST(Tokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  try {
    Tok().decode(Ids{1, 2, 50257});
    FAIL() << "no error for 50257";
  } catch (const lockstep::Error& e) {
    EXPECT_STREQ(e.what(),
                 "token id 50257 at position 2 is outside [0, 50257)");
  }
  EXPECT_THROW(Tok().decode(Ids{-1}), lockstep::Error);
  EXPECT_THROW(Tok().token_bytes(50257), lockstep::Error);
  EXPECT_THROW(Tok().token_bytes(-1), lockstep::Error);
  EXPECT_EQ(Tok().decode(Ids{}), "");
}

class TokenizerFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lockstep_tok_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    for (const char* f : {"encoder.json", "vocab.bpe"}) {
      fs::copy_file(kDataDir + "/" + f, dir_ / f);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string LoadError() {
    try {
      Tokenizer::load(dir_.string());
    } catch (const lockstep::Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

TEST_F(TokenizerFiles, CopiesLoad) {
  EXPECT_TRUE(IdsEqual(Tokenizer::load(dir_.string()).encode("Hello world"),
                       {15496, 995}));
}

TEST_F(TokenizerFiles, MissingFileIsNamed) {
  fs::remove(dir_ / "vocab.bpe");
  const std::string msg = LoadError();
  EXPECT_NE(msg.find((dir_ / "vocab.bpe").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  fs::remove(dir_ / "encoder.json");
  EXPECT_NE(LoadError().find("encoder.json"), std::string::npos);
}

TEST_F(TokenizerFiles, AlteredFileIsNamedWithItsDigest) {
  {
    std::fstream f(dir_ / "encoder.json",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('#');
  }
  const std::string msg = LoadError();
  EXPECT_NE(msg.find((dir_ / "encoder.json").string()), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("SHA-256"), std::string::npos) << msg;
  EXPECT_NE(msg.find("196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed225"
                     "6dbf636783"),
            std::string::npos)
      << msg;
}

TEST_F(TokenizerFiles, TruncatedVocabIsRejected) {
  const std::string bpe = ReadFile((dir_ / "vocab.bpe").string());
  std::ofstream(dir_ / "vocab.bpe", std::ios::binary | std::ios::trunc)
      << bpe.substr(0, bpe.size() / 2);
  const std::string msg = LoadError();
  EXPECT_NE(msg.find("vocab.bpe"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SHA-256"), std::string::npos) << msg;
}

}  // namespace
