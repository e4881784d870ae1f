// The C ABI (capi/lockstep.h, docs/library.md "C"): every bad input is a
// status and a message, never a crash; the two-call buffer protocol; the
// session's logits equal the C++ session's bit for bit; generate equals
// prefill + sample + step by hand; and what docs/library.md says about
// allocation: step, prefill, sampler_next (after its first call) and
// generate allocate nothing. Every operator new in this binary is counted.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "lockstep.h"
#include "lockstep/gpt2.h"

std::atomic<long> g_allocations{0};

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

const std::string kSource = LOCKSTEP_SOURCE_DIR;
const std::string kFixture = kSource + "/tests/data/hf-gpt2-A";
const std::string kData = kSource + "/data/gpt2";
const char kPrompt[] = "Once upon a time, in a small village";
// HF's first eight greedy tokens after kPrompt (examples/CMakeLists.txt).
const std::vector<int32_t> kGreedy = {9243,  37324, 37324, 24520,
                                      13450, 13450, 13450, 38854};

// memcmp of two float arrays; on a difference, the first index and both
// values in hex.
void ExpectSameBits(const float* a, const float* b, size_t n,
                    const std::string& what) {
  if (std::memcmp(a, b, n * sizeof(float)) == 0) return;
  for (size_t i = 0; i < n; ++i) {
    uint32_t x, y;
    std::memcpy(&x, a + i, 4);
    std::memcpy(&y, b + i, 4);
    if (x != y) {
      ADD_FAILURE() << what << ": first difference at " << i << ": 0x"
                    << std::hex << x << " vs 0x" << y;
      return;
    }
  }
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(lockstep_model_load(kFixture.c_str(), &model_), LOCKSTEP_OK)
        << lockstep_last_error();
    ASSERT_EQ(lockstep_tokenizer_load(kData.c_str(), &tok_), LOCKSTEP_OK)
        << lockstep_last_error();
    size_t n = 0;
    ASSERT_EQ(
        lockstep_tokenize(tok_, kPrompt, std::strlen(kPrompt), nullptr, 0, &n),
        LOCKSTEP_ERR_BUFFER);
    prompt_.resize(n);
    ASSERT_EQ(lockstep_tokenize(tok_, kPrompt, std::strlen(kPrompt),
                                prompt_.data(), n, &n),
              LOCKSTEP_OK);
    ASSERT_EQ(n, 9u);
  }
  void TearDown() override {
    lockstep_tokenizer_free(tok_);
    lockstep_model_free(model_);
  }
  lockstep_session* NewSession(const char* backend, int32_t threads = 1) {
    lockstep_session_options o;
    lockstep_session_options_init(&o);
    o.backend = backend;
    o.threads = threads;
    lockstep_session* s = nullptr;
    EXPECT_EQ(lockstep_session_create(model_, &o, &s), LOCKSTEP_OK)
        << lockstep_last_error();
    return s;
  }
  lockstep_sampler* Greedy() {
    lockstep_sampler_options o;
    lockstep_sampler_options_init(&o);
    lockstep_sampler* g = nullptr;
    EXPECT_EQ(lockstep_sampler_create(&o, 50257, &g), LOCKSTEP_OK);
    return g;
  }
  lockstep_model* model_ = nullptr;
  lockstep_tokenizer* tok_ = nullptr;
  std::vector<int32_t> prompt_;
};

TEST_F(CApi, InfoAndDigestAreTheLoadersAndTheVersionIsTheProjects) {
  lockstep_model_info info;
  ASSERT_EQ(lockstep_model_get_info(model_, &info), LOCKSTEP_OK);
  EXPECT_EQ(info.n_vocab, 50257);
  EXPECT_EQ(info.n_ctx, 128);
  EXPECT_EQ(info.n_embd, 64);
  EXPECT_EQ(info.n_head, 4);
  EXPECT_EQ(info.n_layer, 2);
  EXPECT_EQ(info.int8, 0);
  EXPECT_EQ(std::string(lockstep_model_payload_sha256(model_)),
            lockstep::load_gpt2(kFixture).payload_sha256);
  EXPECT_STREQ(lockstep_version(), "0.1.0");
  EXPECT_EQ(LOCKSTEP_C_API_VERSION, 1);
}

TEST_F(CApi, GreedyGenerateIsHfsTokensAndEqualsStepsByHand) {
  for (const char* backend : {"reference", "cpu", "cpu-generic"}) {
    SCOPED_TRACE(backend);
    lockstep_session* s = NewSession(backend, 2);
    lockstep_sampler* g = Greedy();
    int32_t out[8];
    size_t n = 0;
    ASSERT_EQ(
        lockstep_generate(s, g, prompt_.data(), prompt_.size(), 8, -1, out, &n),
        LOCKSTEP_OK)
        << lockstep_last_error();
    EXPECT_EQ(std::vector<int32_t>(out, out + n), kGreedy);
    // The last token is sampled, not stepped.
    EXPECT_EQ(lockstep_session_position(s), int32_t(prompt_.size() + 7));
    // By hand, one token at a time from an empty cache.
    lockstep_session_reset(s);
    EXPECT_EQ(lockstep_session_position(s), 0);
    const float* logits = nullptr;
    for (int32_t t : prompt_) {
      ASSERT_EQ(lockstep_session_step(s, t, &logits), LOCKSTEP_OK);
    }
    std::vector<int32_t> by_hand;
    for (int i = 0; i < 8; ++i) {
      int32_t t = 0;
      ASSERT_EQ(lockstep_sampler_next(g, logits, 50257, &t), LOCKSTEP_OK);
      by_hand.push_back(t);
      ASSERT_EQ(lockstep_session_step(s, t, &logits), LOCKSTEP_OK);
    }
    EXPECT_EQ(by_hand, kGreedy);
    lockstep_sampler_free(g);
    lockstep_session_free(s);
  }
}

TEST_F(CApi, PrefillLogitsEqualTheCppSessionsBits) {
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(kFixture);
  lockstep::Gpt2Session cpp({w.config, w.data(), w.words(), w.layout},
                            {"reference", 1, 0});
  const std::span<const float> want = cpp.prefill(prompt_);
  lockstep_session* s = NewSession("cpu", 2);
  const float* logits = nullptr;
  ASSERT_EQ(
      lockstep_session_prefill(s, prompt_.data(), prompt_.size(), &logits),
      LOCKSTEP_OK);
  ExpectSameBits(logits, want.data(), want.size(), "prefill");
  EXPECT_EQ(std::string(lockstep_session_backend(s)).rfind("cpu", 0), 0u)
      << lockstep_session_backend(s);
  lockstep_session_free(s);
}

TEST_F(CApi, StepPrefillSampleAndGenerateAllocateNothing) {
  lockstep_session* s = NewSession("cpu", 1);
  lockstep_sampler_options o;
  lockstep_sampler_options_init(&o);
  o.top_p = 0.9;
  o.seed = 7;
  lockstep_sampler* g = nullptr;
  ASSERT_EQ(lockstep_sampler_create(&o, 50257, &g), LOCKSTEP_OK);
  const float* logits = nullptr;
  int32_t t = 0;
  // The sampler's first call sizes its work arrays.
  ASSERT_EQ(lockstep_session_prefill(s, prompt_.data(), 3, &logits),
            LOCKSTEP_OK);
  ASSERT_EQ(lockstep_sampler_next(g, logits, 50257, &t), LOCKSTEP_OK);
  int32_t out[16];
  size_t n = 0;
  const long before = g_allocations.load();
  ASSERT_EQ(lockstep_session_step(s, t, &logits), LOCKSTEP_OK);
  ASSERT_EQ(lockstep_sampler_next(g, logits, 50257, &t), LOCKSTEP_OK);
  ASSERT_EQ(lockstep_session_prefill(s, prompt_.data() + 3, 6, &logits),
            LOCKSTEP_OK);
  ASSERT_EQ(lockstep_generate(s, g, &t, 1, 16, -1, out, &n), LOCKSTEP_OK);
  EXPECT_EQ(g_allocations.load() - before, 0);
  EXPECT_EQ(n, 16u);
  lockstep_sampler_free(g);
  lockstep_session_free(s);
}

TEST_F(CApi, BadInputIsAStatusAndAMessage) {
  lockstep_model* m = nullptr;
  EXPECT_EQ(lockstep_model_load("/nonexistent/model", &m), LOCKSTEP_ERR_LOAD);
  EXPECT_EQ(m, nullptr);
  EXPECT_NE(std::string(lockstep_last_error()).find("/nonexistent/model"),
            std::string::npos)
      << lockstep_last_error();
  EXPECT_EQ(lockstep_model_load(nullptr, &m), LOCKSTEP_ERR_ARGUMENT);
  EXPECT_STREQ(lockstep_last_error(), "path is NULL");
  EXPECT_EQ(lockstep_model_load("x", nullptr), LOCKSTEP_ERR_ARGUMENT);
  EXPECT_EQ(lockstep_model_get_info(nullptr, nullptr), LOCKSTEP_ERR_ARGUMENT);

  lockstep_session_options o;
  lockstep_session_options_init(&o);
  lockstep_session* s = nullptr;
  o.backend = "no-such-backend";
  EXPECT_EQ(lockstep_session_create(model_, &o, &s), LOCKSTEP_ERR_ARGUMENT);
  EXPECT_NE(std::string(lockstep_last_error()).find("no-such-backend"),
            std::string::npos)
      << lockstep_last_error();
  o.backend = "cpu";
  o.threads = 257;
  EXPECT_EQ(lockstep_session_create(model_, &o, &s), LOCKSTEP_ERR_ARGUMENT);
  o.threads = -1;
  EXPECT_EQ(lockstep_session_create(model_, &o, &s), LOCKSTEP_ERR_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(lockstep_session_create(nullptr, nullptr, &s),
            LOCKSTEP_ERR_ARGUMENT);

  s = NewSession("cpu", 1);
  const float* logits = nullptr;
  EXPECT_EQ(lockstep_session_step(s, 50257, &logits), LOCKSTEP_ERR_RANGE);
  EXPECT_EQ(lockstep_session_step(s, -1, &logits), LOCKSTEP_ERR_RANGE);
  EXPECT_EQ(lockstep_session_step(s, 0, nullptr), LOCKSTEP_ERR_ARGUMENT);
  EXPECT_EQ(lockstep_session_step(nullptr, 0, &logits), LOCKSTEP_ERR_ARGUMENT);
  EXPECT_EQ(lockstep_session_position(s), 0);
  std::vector<int32_t> long_prompt(129, 1);  // n_ctx is 128
  EXPECT_EQ(lockstep_session_prefill(s, long_prompt.data(), 129, &logits),
            LOCKSTEP_ERR_RANGE);
  EXPECT_NE(std::string(lockstep_last_error()).find("129"), std::string::npos)
      << lockstep_last_error();
  EXPECT_EQ(lockstep_session_prefill(s, long_prompt.data(), 0, &logits),
            LOCKSTEP_ERR_ARGUMENT);
  EXPECT_EQ(lockstep_session_position(s), 0);
  // The context fills: 128 positions, then step is a range error.
  ASSERT_EQ(lockstep_session_prefill(s, long_prompt.data(), 128, &logits),
            LOCKSTEP_OK);
  EXPECT_EQ(lockstep_session_step(s, 1, &logits), LOCKSTEP_ERR_RANGE);
  EXPECT_EQ(lockstep_session_position(s), 128);

  lockstep_sampler_options so;
  lockstep_sampler_options_init(&so);
  lockstep_sampler* g = nullptr;
  so.top_p = 0;
  EXPECT_EQ(lockstep_sampler_create(&so, 50257, &g), LOCKSTEP_ERR_ARGUMENT);
  so.top_p = 1;
  so.temperature = -1;
  EXPECT_EQ(lockstep_sampler_create(&so, 50257, &g), LOCKSTEP_ERR_ARGUMENT);
  so.temperature = 1;
  so.top_k = 50258;
  EXPECT_EQ(lockstep_sampler_create(&so, 50257, &g), LOCKSTEP_ERR_ARGUMENT);
  so.top_k = 0;
  EXPECT_EQ(lockstep_sampler_create(&so, 0, &g), LOCKSTEP_ERR_ARGUMENT);
  EXPECT_EQ(g, nullptr);
  ASSERT_EQ(lockstep_sampler_create(&so, 10, &g), LOCKSTEP_OK);
  int32_t t = 0;
  EXPECT_EQ(lockstep_sampler_next(g, logits, 50257, &t), LOCKSTEP_ERR_ARGUMENT);
  // generate refuses a sampler of another vocabulary size.
  size_t n = 99;
  lockstep_session_reset(s);
  EXPECT_EQ(
      lockstep_generate(s, g, prompt_.data(), prompt_.size(), 4, -1, &t, &n),
      LOCKSTEP_ERR_ARGUMENT);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(lockstep_session_position(s), 0);
  lockstep_sampler_free(g);
  lockstep_session_free(s);

  lockstep_tokenizer* tok = nullptr;
  EXPECT_EQ(lockstep_tokenizer_load("/nonexistent", &tok), LOCKSTEP_ERR_LOAD);
  EXPECT_NE(std::string(lockstep_last_error()).find("/nonexistent"),
            std::string::npos);
  char text[4];
  const int32_t bad = 50257;
  EXPECT_EQ(lockstep_detokenize(tok_, &bad, 1, text, sizeof text, &n),
            LOCKSTEP_ERR_RANGE);
  // Frees take NULL.
  lockstep_model_free(nullptr);
  lockstep_session_free(nullptr);
  lockstep_sampler_free(nullptr);
  lockstep_tokenizer_free(nullptr);
  EXPECT_STREQ(lockstep_status_string(LOCKSTEP_ERR_BUFFER), "buffer too small");
}

TEST_F(CApi, GenerateStopsAfterTheStopTokenAndAtTheContext) {
  lockstep_session* s = NewSession("cpu", 1);
  lockstep_sampler* g = Greedy();
  int32_t out[130];
  size_t n = 0;
  // Greedy's fourth token is 24520: stop there, written.
  ASSERT_EQ(lockstep_generate(s, g, prompt_.data(), prompt_.size(), 8, 24520,
                              out, &n),
            LOCKSTEP_OK);
  EXPECT_EQ(std::vector<int32_t>(out, out + n),
            std::vector<int32_t>(kGreedy.begin(), kGreedy.begin() + 4));
  // 9 prompt tokens in a 128-position context: 119 steps, then the 120th
  // token is sampled and generation ends (the context is full).
  lockstep_session_reset(s);
  ASSERT_EQ(
      lockstep_generate(s, g, prompt_.data(), prompt_.size(), 130, -1, out, &n),
      LOCKSTEP_OK);
  EXPECT_EQ(n, 120u);
  EXPECT_EQ(lockstep_session_position(s), 128);
  lockstep_sampler_free(g);
  lockstep_session_free(s);
}

TEST_F(CApi, TokenizerBufferProtocolAndRoundTrip) {
  const std::string text = "caf\xc3\xa9 <|endoftext|>\n\xff";
  size_t n = 0;
  int32_t ids[64];
  ASSERT_EQ(lockstep_tokenize(tok_, text.data(), text.size(), ids, 2, &n),
            LOCKSTEP_ERR_BUFFER);
  const size_t need = n;
  ASSERT_GT(need, 2u);
  ASSERT_EQ(lockstep_tokenize(tok_, text.data(), text.size(), ids, 64, &n),
            LOCKSTEP_OK);
  EXPECT_EQ(n, need);
  size_t len = 0;
  char buf[64];
  ASSERT_EQ(lockstep_detokenize(tok_, ids, n, buf, 3, &len),
            LOCKSTEP_ERR_BUFFER);
  EXPECT_EQ(len, text.size());
  ASSERT_EQ(lockstep_detokenize(tok_, ids, n, buf, sizeof buf, &len),
            LOCKSTEP_OK);
  EXPECT_EQ(std::string(buf, len), text);
  EXPECT_EQ(buf[len], '\0');
  // Exactly the bytes, no room for the NUL: still OK.
  ASSERT_EQ(lockstep_detokenize(tok_, ids, n, buf, text.size(), &len),
            LOCKSTEP_OK);
  ASSERT_EQ(lockstep_tokenize(tok_, "", 0, nullptr, 0, &n), LOCKSTEP_OK);
  EXPECT_EQ(n, 0u);
}

}  // namespace
