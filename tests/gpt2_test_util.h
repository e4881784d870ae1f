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
#include <ostream>
#include <random>
#include <string>
#include <vector>

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

}  // namespace lockstep::test

#endif  // LOCKSTEP_TESTS_GPT2_TEST_UTIL_H_
