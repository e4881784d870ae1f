// lib/lockstep/gpt2.h promises that nothing is allocated inside a step:
// checked here at the session level (Gpt2Session::step, infer and prefill
// of the last position's logits), where the error text is built, on every
// backend. Every operator new in this binary is counted.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"

std::atomic<long> g_allocations{0};

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// (GCC 12 sees the inlined free() of a replaced operator delete as a
// mismatch with new; it is the replacement pair, so it is not.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

class SessionAllocation : public ::testing::TestWithParam<const char*> {};

TEST_P(SessionAllocation, StepInferAndPrefillAllocateNothing) {
  const ls_gpt2_config c = {300, 16, 64, 4, 2};
  const std::vector<float> w = lockstep::random_gpt2_weights(c, 13);
  lockstep::Gpt2Session s({c, w.data(), w.size(), LS_GPT2_LAYOUT_PLAIN},
                          {GetParam(), 2, 8});
  const int32_t toks[8] = {17, 250, 3, 99, 4, 280, 61, 7};
  // Warm up: the first call of each kind (gtest's own bookkeeping).
  s.step(toks[0]);
  s.infer(std::span<const int32_t>(toks, 8));
  s.prefill(std::span<const int32_t>(toks + 1, 2));
  const long before = g_allocations.load();
  for (int p = 3; p < 8; ++p) s.step(toks[p]);
  s.infer(std::span<const int32_t>(toks, 8));
  s.prefill(std::span<const int32_t>(toks, 3));
  const long after = g_allocations.load();
  EXPECT_EQ(after - before, 0) << "allocations inside step/infer/prefill";
  EXPECT_EQ(s.position(), 11);
}

// The error text is still built, on error only.
TEST_P(SessionAllocation, ErrorsStillNameThePosition) {
  const ls_gpt2_config c = {300, 16, 64, 4, 2};
  const std::vector<float> w = lockstep::random_gpt2_weights(c, 13);
  lockstep::Gpt2Session s({c, w.data(), w.size(), LS_GPT2_LAYOUT_PLAIN},
                          {GetParam(), 1, 8});
  s.step(1);
  try {
    s.step(300);
    FAIL() << "token 300 of 300 accepted";
  } catch (const lockstep::Error& e) {
    EXPECT_STREQ(e.what(),
                 "GPT-2 step at position 1 (token 300): a token is outside "
                 "the vocabulary");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SessionAllocation,
                         ::testing::Values("reference", "cpu", "cpu-generic"));

}  // namespace
