// Helpers shared by the tests: byte-exact comparison with a useful message,
// and seeded random inputs.
#ifndef LOCKSTEP_TESTS_TEST_UTIL_H_
#define LOCKSTEP_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace lockstep::test {

// memcmp-equality of two double arrays; on failure names the first
// differing index with both values as hex floats.
inline ::testing::AssertionResult BytesEqual(const double* a, const double* b,
                                             size_t n) {
  if (n == 0 || std::memcmp(a, b, n * sizeof(double)) == 0) {
    return ::testing::AssertionSuccess();
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "first difference at index %zu: %a vs %a",
                    i, a[i], b[i]);
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionFailure() << "unreachable";
}

inline ::testing::AssertionResult BytesEqual(const std::vector<double>& a,
                                             const std::vector<double>& b) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure()
           << "sizes differ: " << a.size() << " vs " << b.size();
  }
  return BytesEqual(a.data(), b.data(), a.size());
}

// Uniform doubles in [lo, hi) from a seeded engine.
inline std::vector<double> Uniform(std::mt19937_64& rng, size_t n, double lo,
                                   double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::vector<int32_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::uniform_int_distribution<int32_t> d(0, 255);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace lockstep::test

#endif  // LOCKSTEP_TESTS_TEST_UTIL_H_
