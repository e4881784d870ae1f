// What the CUDA tests share (tests/cuda_backend_test.cc,
// tests/cuda_q8_scale_test.cc, tests/cuda_observer_test.cc): the skip on a
// machine without a device, and byte comparisons of float ranges.
#ifndef LOCKSTEP_TESTS_CUDA_TEST_UTIL_H_
#define LOCKSTEP_TESTS_CUDA_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "backends/cuda/cuda_backend.h"

// Every CUDA test starts with it: the build has the backend, the machine
// may have no device (the development VM, CI).
#define SKIP_WITHOUT_DEVICE()                           \
  do {                                                  \
    if (!lockstep::backends::cuda_device_available()) { \
      GTEST_SKIP() << "no CUDA device on this machine"; \
    }                                                   \
  } while (0)

namespace lockstep::test {

// Floats whose bytes differ.
inline size_t CountDifferent(const float* a, const float* b, size_t n) {
  size_t d = 0;
  for (size_t i = 0; i < n; ++i) d += std::memcmp(a + i, b + i, 4) != 0;
  return d;
}

// memcmp of n floats; on failure the first differing index, both values'
// bits in hex (and as hex floats) and how many differ.
inline ::testing::AssertionResult SameBits(const float* got, const float* want,
                                           size_t n) {
  if (n == 0 || std::memcmp(got, want, n * sizeof(float)) == 0) {
    return ::testing::AssertionSuccess();
  }
  size_t i = 0;
  while (std::memcmp(got + i, want + i, sizeof(float)) == 0) ++i;
  uint32_t a, b;
  std::memcpy(&a, got + i, 4);
  std::memcpy(&b, want + i, 4);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "first difference at index %zu of %zu: got 0x%08x (%a), want "
                "0x%08x (%a); %zu differ",
                i, n, unsigned(a), double(got[i]), unsigned(b), double(want[i]),
                CountDifferent(got, want, n));
  return ::testing::AssertionFailure() << buf;
}

}  // namespace lockstep::test

#endif  // LOCKSTEP_TESTS_CUDA_TEST_UTIL_H_
