// Every backend answers a bad call as the scalar core does: for each bad
// argument of prefill, step and infer, and for pairs of bad arguments (which
// show the order of the checks), the reference backend, every cpu ISA at 1
// and 2 threads and the wasm backend (WasmGpt2Backend, in builds with the
// module) return the status core/ls_gpt2.c's ls_gpt2_prefill /
// ls_gpt2_step / ls_gpt2_infer return on the same arguments, and a failed
// call writes nothing (backends/prefill_args.h holds the shared checks).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_isa.h"
#include "formats/gpt2_checkpoint.h"
#include "ls_gpt2.h"
#include "ls_status.h"
#ifdef LOCKSTEP_TEST_WASM
#include "hosts/native/wasm_host.h"
#endif

namespace lockstep {
namespace {

namespace fs = std::filesystem;

// 50 tokens, 8 positions, one layer; every backend planned for 4 positions
// a call, the core given scratch for 4 (its LS_ERR_SCRATCH).
constexpr ls_gpt2_config kC = {50, 8, 32, 2, 1};
constexpr int kMaxPrefix = 4;

// The bytes of a float buffer; the first differing index with both bytes
// in hex when two differ.
::testing::AssertionResult SameBytes(const std::vector<float>& a,
                                     const std::vector<float>& b) {
  const auto* x = reinterpret_cast<const unsigned char*>(a.data());
  const auto* y = reinterpret_cast<const unsigned char*>(b.data());
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure() << a.size() << " vs " << b.size();
  }
  for (size_t i = 0; i < a.size() * sizeof(float); ++i) {
    if (x[i] != y[i]) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "byte %zu: 0x%02x vs 0x%02x", i,
                    unsigned(x[i]), unsigned(y[i]));
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionSuccess();
}

// The packed model file the wasm backend loads, removed at the end.
struct ModelFile {
  std::string path;
  explicit ModelFile(const std::vector<float>& w) {
    path =
        (fs::temp_directory_path() /
         ("lockstep_prefill_status_" + std::to_string(getpid()) + ".lockstep"))
            .string();
    write_gpt2_packed(path, kC, w.data(), w.size());
  }
  ~ModelFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

struct Backend {
  std::string name;
  int threads;
};

std::vector<Backend> AllBackends() {
  std::vector<Backend> v{{"reference", 1}};
  for (const auto& isa : cpu::supported_isas()) {
    v.push_back({"cpu-" + isa, 1});
    v.push_back({"cpu-" + isa, 2});
  }
  v.push_back({"wasm", 1});
  return v;
}

std::string BackendName(const ::testing::TestParamInfo<Backend>& p) {
  std::string s = p.param.name + "_x" + std::to_string(p.param.threads);
  for (char& ch : s) {
    if (ch == '-') ch = '_';
  }
  return s;
}

// One call's arguments; nullptrs stand in by flags so that the table can
// be built before the buffers.
struct Call {
  const char* what;
  bool no_cache, no_logits, no_tokens;
  size_t cap_rows;  // capacity in cache rows (kC.n_ctx: all of it)
  size_t len_rows;  // cache_len in rows
  int n;
  int32_t position;
  int32_t bad_token_at;  // -1: none; else tokens[i] = bad_value
  int32_t bad_value;
};

// Single faults, then pairs of faults whose status shows the order of the
// checks (null, empty, position, too long, tokens, cache length, scratch).
const Call kPrefillCalls[] = {
    {"cache null", true, false, false, 8, 0, 2, 0, -1, 0},
    {"logits null", false, true, false, 8, 0, 2, 0, -1, 0},
    {"tokens null", false, false, true, 8, 0, 2, 0, -1, 0},
    {"empty", false, false, false, 8, 0, 0, 0, -1, 0},
    {"negative n", false, false, false, 8, 0, -3, 0, -1, 0},
    {"position n_ctx", false, false, false, 8, 8, 1, 8, -1, 0},
    {"position -1", false, false, false, 8, 0, 2, -1, -1, 0},
    {"too long", false, false, false, 8, 6, 3, 6, -1, 0},
    {"token n_vocab", false, false, false, 8, 0, 2, 0, 1, 50},
    {"token -1", false, false, false, 8, 0, 2, 0, 0, -1},
    {"cache_len not the position's", false, false, false, 8, 1, 2, 0, -1, 0},
    {"capacity short", false, false, false, 2, 1, 2, 1, -1, 0},
    {"more than max_prefix", false, false, false, 8, 0, 5, 0, -1, 0},
    {"cache null, empty", true, false, false, 8, 0, 0, 0, -1, 0},
    {"tokens null, empty", false, false, true, 8, 0, 0, 0, -1, 0},
    {"tokens null, negative n", false, false, true, 8, 0, -1, 0, -1, 0},
    {"empty, position -1", false, false, false, 8, 0, 0, -1, -1, 0},
    {"position n_ctx, too long", false, false, false, 8, 8, 9, 8, -1, 0},
    {"position -1, bad token", false, false, false, 8, 0, 2, -1, 0, 99},
    {"too long, bad token", false, false, false, 8, 6, 3, 6, 2, 50},
    {"bad token, cache_len", false, false, false, 8, 3, 2, 0, 1, 50},
    {"cache_len, more than max_prefix", false, false, false, 8, 1, 5, 0, -1, 0},
    {"capacity, more than max_prefix", false, false, false, 4, 0, 5, 0, -1, 0},
    // Position 0 only: the wasm backend continues its own rows alone.
    {"capacity exactly", false, false, false, 4, 0, 4, 0, -1, 0},
    {"fine", false, false, false, 8, 0, 2, 0, -1, 0},
};

// step: token and position only (n is 1).
const Call kStepCalls[] = {
    {"cache null", true, false, false, 8, 0, 1, 0, -1, 0},
    {"logits null", false, true, false, 8, 0, 1, 0, -1, 0},
    {"token n_vocab", false, false, false, 8, 0, 1, 0, 0, 50},
    {"position n_ctx", false, false, false, 8, 8, 1, 8, -1, 0},
    {"position -1", false, false, false, 8, 0, 1, -1, -1, 0},
    {"cache_len", false, false, false, 8, 1, 1, 0, -1, 0},
    {"capacity", false, false, false, 0, 0, 1, 0, -1, 0},
    {"cache null, bad token", true, false, false, 8, 0, 1, 0, 0, 50},
    {"bad token, position -1", false, false, false, 8, 0, 1, -1, 0, -1},
    {"bad token, position n_ctx", false, false, false, 8, 8, 1, 8, 0, 50},
    {"position n_ctx, cache_len", false, false, false, 8, 0, 1, 8, -1, 0},
    {"fine", false, false, false, 8, 0, 1, 0, -1, 0},
};

// infer: tokens and n only.
const Call kInferCalls[] = {
    {"logits null", false, true, false, 0, 0, 2, 0, -1, 0},
    {"tokens null", false, false, true, 0, 0, 2, 0, -1, 0},
    {"empty", false, false, false, 0, 0, 0, 0, -1, 0},
    {"longer than n_ctx", false, false, false, 0, 0, 9, 0, -1, 0},
    {"bad token", false, false, false, 0, 0, 2, 0, 1, 50},
    {"more than max_prefix", false, false, false, 0, 0, 5, 0, -1, 0},
    {"tokens null, empty", false, false, true, 0, 0, 0, 0, -1, 0},
    {"logits null, empty", false, true, false, 0, 0, 0, 0, -1, 0},
    {"longer than n_ctx, bad token", false, false, false, 0, 0, 9, 0, 3, 50},
    {"bad token, more than max_prefix", false, false, false, 0, 0, 5, 0, 4, -2},
    {"fine", false, false, false, 0, 0, 3, 0, -1, 0},
};

// The buffers of one call: a NaN-filled cache of n_ctx rows, logits for
// n_ctx positions, 9 tokens.
struct Buffers {
  std::vector<float> cache, logits;
  std::vector<int32_t> tokens;
  explicit Buffers(const Call& k) {
    const size_t row = ls_gpt2_cache_row_floats(&kC);
    cache.assign(size_t(kC.n_ctx) * row, 0.0f);
    for (size_t i = 0; i < cache.size(); ++i) {
      const uint32_t bits = 0x7fc00000u | uint32_t(i & 0xffff);
      std::memcpy(&cache[i], &bits, 4);
    }
    logits.assign(size_t(kC.n_ctx) * size_t(kC.n_vocab), -1.0f);
    for (int t = 0; t < 9; ++t) tokens.push_back(int32_t(1 + 5 * t));
    if (k.bad_token_at >= 0) tokens[size_t(k.bad_token_at)] = k.bad_value;
  }
  float* cache_ptr(const Call& k) {
    return k.no_cache ? nullptr : cache.data();
  }
  float* logits_ptr(const Call& k) {
    return k.no_logits ? nullptr : logits.data();
  }
  const int32_t* tokens_ptr(const Call& k) const {
    return k.no_tokens ? nullptr : tokens.data();
  }
  size_t cap(const Call& k) const {
    return k.cap_rows * ls_gpt2_cache_row_floats(&kC);
  }
  size_t len(const Call& k) const {
    return k.len_rows * ls_gpt2_cache_row_floats(&kC);
  }
};

class PrefillStatus : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    w_ = random_gpt2_weights(kC, 21);
    const Backend& b = GetParam();
    if (b.name == "wasm") {
#ifdef LOCKSTEP_TEST_WASM
      file_ = std::make_unique<ModelFile>(w_);
      backend_ = std::make_unique<WasmGpt2Backend>(file_->path, kC, kMaxPrefix);
#else
      GTEST_SKIP() << "a build without the WebAssembly module "
                      "(LOCKSTEP_WASM=OFF or sanitizers)";
#endif
    } else {
      backend_ = make_gpt2_backend(b.name, kC, w_.data(), w_.size(), b.threads,
                                   kMaxPrefix);
    }
  }

  // The core's answer, on its own copy of the buffers.
  ls_status CorePrefill(const Call& k, bool all) {
    Buffers x(k);
    std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&kC, kMaxPrefix));
    return ls_gpt2_prefill(&kC, w_.data(), w_.size(), x.cache_ptr(k), x.cap(k),
                           x.len(k), x.tokens_ptr(k), k.n, k.position, all,
                           scratch.data(), scratch.size(), x.logits_ptr(k));
  }
  ls_status CoreStep(const Call& k) {
    Buffers x(k);
    std::vector<float> scratch(ls_gpt2_step_scratch_floats(&kC));
    return ls_gpt2_step(&kC, w_.data(), w_.size(), x.cache_ptr(k), x.cap(k),
                        x.len(k), x.tokens[0], k.position, scratch.data(),
                        scratch.size(), x.logits_ptr(k));
  }
  ls_status CoreInfer(const Call& k) {
    Buffers x(k);
    std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&kC, kMaxPrefix));
    return ls_gpt2_infer(&kC, w_.data(), w_.size(), x.tokens_ptr(k), k.n,
                         scratch.data(), scratch.size(), x.logits_ptr(k));
  }

  std::vector<float> w_;
  std::unique_ptr<ModelFile> file_;
  std::unique_ptr<Gpt2Backend> backend_;
};

// The backend's status is the core's, and a failed call leaves the cache
// and the logits as they were.
void ExpectTheCores(ls_status s, ls_status want, Buffers& got, const Call& k,
                    const std::string& what) {
  EXPECT_EQ(s, want) << what << ": " << ls_status_message(s)
                     << " where the core says " << ls_status_message(want);
  if (s == LS_OK) return;
  const Buffers fresh(k);
  EXPECT_TRUE(SameBytes(got.cache, fresh.cache)) << what << ": cache written";
  EXPECT_TRUE(SameBytes(got.logits, fresh.logits))
      << what << ": logits written";
}

TEST_P(PrefillStatus, PrefillIsTheCores) {
  for (const Call& k : kPrefillCalls) {
    for (bool all : {false, true}) {
      const ls_status want = CorePrefill(k, all);
      Buffers x(k);
      const ls_status got =
          backend_->prefill(x.cache_ptr(k), x.cap(k), x.len(k), x.tokens_ptr(k),
                            k.n, k.position, all, x.logits_ptr(k));
      const std::string what = backend_->name() + " prefill, " + k.what +
                               (all ? " (every position)" : "");
      ExpectTheCores(got, want, x, k, what);
    }
  }
}

TEST_P(PrefillStatus, StepIsTheCores) {
  for (const Call& k : kStepCalls) {
    const ls_status want = CoreStep(k);
    Buffers x(k);
    const ls_status got =
        backend_->step(x.cache_ptr(k), x.cap(k), x.len(k), x.tokens[0],
                       k.position, x.logits_ptr(k));
    const std::string what = backend_->name() + " step, " + k.what;
    ExpectTheCores(got, want, x, k, what);
  }
}

TEST_P(PrefillStatus, InferIsTheCores) {
  for (const Call& k : kInferCalls) {
    const ls_status want = CoreInfer(k);
    Buffers x(k);
    const ls_status got =
        backend_->infer(x.tokens_ptr(k), k.n, x.logits_ptr(k));
    const std::string what = backend_->name() + " infer, " + k.what;
    ExpectTheCores(got, want, x, k, what);
  }
}

// The table's statuses, pinned, so that the core cannot drift unseen.
TEST(PrefillStatusTable, TheCoresAnswers) {
  const std::vector<float> w = random_gpt2_weights(kC, 21);
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&kC, kMaxPrefix));
  const ls_status want[] = {LS_ERR_NULL,
                            LS_ERR_NULL,
                            LS_ERR_NULL,
                            LS_ERR_EMPTY_SEQUENCE,
                            LS_ERR_EMPTY_SEQUENCE,
                            LS_ERR_POSITION,
                            LS_ERR_POSITION,
                            LS_ERR_SEQUENCE_TOO_LONG,
                            LS_ERR_TOKEN,
                            LS_ERR_TOKEN,
                            LS_ERR_CACHE_LENGTH,
                            LS_ERR_CACHE_LENGTH,
                            LS_ERR_SCRATCH,
                            LS_ERR_NULL,
                            LS_ERR_EMPTY_SEQUENCE,
                            LS_ERR_EMPTY_SEQUENCE,
                            LS_ERR_EMPTY_SEQUENCE,
                            LS_ERR_POSITION,
                            LS_ERR_POSITION,
                            LS_ERR_SEQUENCE_TOO_LONG,
                            LS_ERR_TOKEN,
                            LS_ERR_CACHE_LENGTH,
                            LS_ERR_CACHE_LENGTH,
                            LS_OK,
                            LS_OK};
  ASSERT_EQ(std::size(want), std::size(kPrefillCalls));
  for (size_t i = 0; i < std::size(kPrefillCalls); ++i) {
    const Call& k = kPrefillCalls[i];
    Buffers x(k);
    EXPECT_EQ(ls_gpt2_prefill(&kC, w.data(), w.size(), x.cache_ptr(k), x.cap(k),
                              x.len(k), x.tokens_ptr(k), k.n, k.position, 1,
                              scratch.data(), scratch.size(), x.logits_ptr(k)),
              want[i])
        << k.what;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PrefillStatus,
                         ::testing::ValuesIn(AllBackends()), BackendName);

}  // namespace
}  // namespace lockstep
