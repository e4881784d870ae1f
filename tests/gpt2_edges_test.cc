// docs/arithmetic.md 1.6 at the edges: which positions' logits a call
// checks for non-finite values, and what it has written when it fails.
//
// The model: seeded random weights, one layer, with three words changed so
// that position 0 overflows after the last attention has read its keys and
// values: wte[5][0] = 2^127 and wpe[0][0] = 2^126 (their sum, 1.5 * 2^127,
// is finite), and the attention projection's bias[0] = 2^126, which every
// position adds to its residual. Position 0 then holds 2^128 = +inf in
// dimension 0, its MLP LayerNorm gives NaN and so do its logits; the other
// positions' residuals stay finite (about 2^126; LayerNorm's variance
// overflows to +inf and r = 0, so h = b), and so do their logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "ls_gpt2.h"
#include "tests/gpt2_test_util.h"

namespace {

const ls_gpt2_config kConfig = {64, 8, 32, 2, 1};
const int32_t kPrompt[4] = {5, 7, 9, 11};

std::vector<float> EarlyOverflowWeights() {
  std::vector<float> w = lockstep::random_gpt2_weights(kConfig, 31);
  const ls_gpt2_block b = ls_gpt2_block_offsets(&kConfig, 0);
  w[size_t(5) * size_t(kConfig.n_embd)] = 0x1p127f;
  w[ls_gpt2_wpe_offset(&kConfig)] = 0x1p126f;
  w[b.proj_b] = 0x1p126f;
  return w;
}

bool AllFinite(const float* v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) return false;
  }
  return true;
}

class PositionsChecked : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<lockstep::Gpt2Backend> Make(const std::vector<float>& w) {
    const std::string name = GetParam();
    return lockstep::make_gpt2_backend(name, kConfig, w.data(), w.size(),
                                       name == "reference" ? 1 : 2,
                                       kConfig.n_ctx);
  }
};

// Stepping checks every position (each step returns that position's
// logits); the full pass and the prefill check the last (or, with
// all_positions, every position they return). Every backend alike.
TEST_P(PositionsChecked, EachCallChecksTheLogitsItReturns) {
  const std::vector<float> w = EarlyOverflowWeights();
  auto b = Make(w);
  const size_t row = ls_gpt2_cache_row_floats(&kConfig);
  const size_t V = size_t(kConfig.n_vocab);
  std::vector<float> cache(ls_gpt2_cache_floats(&kConfig)), logits(4 * V);

  // The step at position 0 fails; it has written its cache row and logits
  // (1.6: what an LS_ERR_OUTPUT_NONFINITE call leaves behind).
  std::fill(cache.begin(), cache.end(), 7.0f);
  std::fill(logits.begin(), logits.end(), 7.0f);
  EXPECT_EQ(
      b->step(cache.data(), cache.size(), 0, kPrompt[0], 0, logits.data()),
      LS_ERR_OUTPUT_NONFINITE);
  EXPECT_FALSE(AllFinite(logits.data(), V));
  EXPECT_NE(cache[0], 7.0f) << "the step did not write its cache row";
  EXPECT_EQ(cache[row], 7.0f) << "the step wrote past its row";

  // Its cache row is complete, so the next positions step on from it, and
  // their logits are finite.
  for (int p = 1; p < 4; ++p) {
    ASSERT_EQ(b->step(cache.data(), cache.size(), size_t(p) * row, kPrompt[p],
                      p, logits.data()),
              LS_OK)
        << "position " << p;
  }
  const std::vector<float> stepped_last(logits.begin(), logits.begin() + V);
  const std::vector<float> stepped_cache(cache.begin(),
                                         cache.begin() + 4 * row);

  // The full pass and the prefill check the last position only: OK, with
  // the stepped bits.
  std::vector<float> full(V);
  ASSERT_EQ(b->infer(kPrompt, 4, full.data()), LS_OK);
  EXPECT_TRUE(lockstep::test::BytesEqual(full.data(), stepped_last.data(), V));
  std::vector<float> cache2(cache.size());
  ASSERT_EQ(b->prefill(cache2.data(), cache2.size(), 0, kPrompt, 4, 0, 0,
                       logits.data()),
            LS_OK);
  EXPECT_TRUE(
      lockstep::test::BytesEqual(logits.data(), stepped_last.data(), V));
  EXPECT_TRUE(
      lockstep::test::BytesEqual(cache2.data(), stepped_cache.data(), 4 * row));
  // Asked for every position's logits, the prefill checks them all.
  EXPECT_EQ(b->prefill(cache2.data(), cache2.size(), 0, kPrompt, 4, 0, 1,
                       logits.data()),
            LS_ERR_OUTPUT_NONFINITE);
  // A prompt that starts after the overflowing position is fine.
  EXPECT_EQ(b->prefill(cache2.data(), cache2.size(), row, kPrompt + 1, 3, 1, 1,
                       logits.data()),
            LS_OK);
}

// Gpt2Session::prefill's chunking does not change what is checked: any
// max_prefix gives the full pass's result (an intermediate chunk's last
// logits are not the caller's); with all_positions it fails, consuming
// nothing.
TEST_P(PositionsChecked, SessionChunkingDoesNotChangeTheCheck) {
  const std::vector<float> w = EarlyOverflowWeights();
  std::vector<float> want(size_t(kConfig.n_vocab));
  ASSERT_EQ(Make(w)->infer(kPrompt, 4, want.data()), LS_OK);
  for (int max_prefix : {1, 2, 3, 4}) {
    lockstep::Gpt2Session s({kConfig, w.data(), w.size(), LS_GPT2_LAYOUT_PLAIN},
                            {GetParam(), 2, max_prefix});
    const std::span<const float> got = s.prefill(kPrompt);
    EXPECT_TRUE(
        lockstep::test::BytesEqual(got.data(), want.data(), want.size()))
        << "max_prefix " << max_prefix;
    EXPECT_EQ(s.position(), 4);
    s.reset();
    EXPECT_THROW(s.prefill(kPrompt, true), lockstep::Error);
    EXPECT_EQ(s.position(), 0) << "a failed prefill consumed tokens";
    EXPECT_THROW(s.step(kPrompt[0]), lockstep::Error);
    EXPECT_EQ(s.position(), 0) << "a failed step consumed its token";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, PositionsChecked,
                         ::testing::Values("reference", "cpu", "cpu-generic"));

}  // namespace
