// Helpers shared by the GPT-2 backend tests (gpt2_backend_test,
// gpt2_prefill_test): byte-exact float comparison with the first
// difference in hex, seeded random tokens, and the backend variants the
// tests are instantiated over.
#ifndef LOCKSTEP_TESTS_GPT2_TEST_UTIL_H_
#define LOCKSTEP_TESTS_GPT2_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ls_gpt2.h"

namespace lockstep::test {

// memcmp-equality; on failure the first differing index and both values in
// hex.
inline ::testing::AssertionResult BytesEqual(const float* got,
                                             const float* want, size_t n) {
  if (n == 0 || std::memcmp(got, want, n * sizeof(float)) == 0) {
    return ::testing::AssertionSuccess();
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "first difference at index %zu of %zu: got %a, want %a", i,
                    n, double(got[i]), double(want[i]));
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionFailure();
}

inline ::testing::AssertionResult BytesEqual(const std::vector<float>& got,
                                             const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << got.size() << " vs " << want.size();
  }
  return BytesEqual(got.data(), want.data(), got.size());
}

inline std::vector<int32_t> RandomTokens(const ls_gpt2_config& c, int n,
                                         uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, c.n_vocab - 1);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

// What a backend is asked for: a name and a thread count.
struct Variant {
  std::string name;
  int threads;
};

// The thread counts every fast backend is checked with: 3 is not a power of
// two, and 4 and 8 split the K of the decode products along the §2.1
// blocks (cpu_backend.cc's split_k). More threads than cores is fine.
inline constexpr int kThreadCounts[] = {1, 2, 3, 4, 8};

inline void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name << " x" << v.threads;
}

inline std::string VariantName(const ::testing::TestParamInfo<Variant>& i) {
  std::string s = i.param.name + "_x" + std::to_string(i.param.threads);
  for (auto& ch : s) {
    if (ch == '-') ch = '_';
  }
  return s;
}

// The outputs of a run of cached steps and full passes.
struct Trace {
  std::vector<std::vector<float>> step_logits;   // per position
  std::vector<float> cache;                      // after the last step
  std::vector<std::vector<float>> infer_logits;  // per prefix length
};

// Steps over all tokens (recording every position's logits and the cache),
// then full passes over the prefixes in `prefixes`.
inline Trace RunTrace(Gpt2Backend& b, const ls_gpt2_config& c,
                      const std::vector<int32_t>& tokens,
                      const std::vector<int>& prefixes) {
  Trace t;
  const size_t row = ls_gpt2_cache_row_floats(&c);
  t.cache.assign(tokens.size() * row, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> logits(size_t(c.n_vocab));
  for (size_t p = 0; p < tokens.size(); ++p) {
    EXPECT_EQ(b.step(t.cache.data(), t.cache.size(), p * row, tokens[p],
                     int32_t(p), logits.data()),
              LS_OK)
        << b.name() << " step at position " << p;
    t.step_logits.push_back(logits);
  }
  for (int n : prefixes) {
    EXPECT_EQ(b.infer(tokens.data(), n, logits.data()), LS_OK)
        << b.name() << " infer over " << n;
    t.infer_logits.push_back(logits);
  }
  return t;
}

inline void ExpectSameTrace(const Trace& got, const Trace& want,
                            const std::string& what) {
  ASSERT_EQ(got.step_logits.size(), want.step_logits.size());
  for (size_t p = 0; p < want.step_logits.size(); ++p) {
    EXPECT_TRUE(BytesEqual(got.step_logits[p], want.step_logits[p]))
        << what << ": step logits at position " << p;
  }
  EXPECT_TRUE(BytesEqual(got.cache, want.cache)) << what << ": cache words";
  ASSERT_EQ(got.infer_logits.size(), want.infer_logits.size());
  for (size_t i = 0; i < want.infer_logits.size(); ++i) {
    EXPECT_TRUE(BytesEqual(got.infer_logits[i], want.infer_logits[i]))
        << what << ": infer logits, pass " << i;
  }
}

}  // namespace lockstep::test

#endif  // LOCKSTEP_TESTS_GPT2_TEST_UTIL_H_
