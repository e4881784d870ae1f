// Token selection over any vocabulary (docs/arithmetic.md §5): greedy, or
// seeded top-k and/or top-p (nucleus) sampling with temperature. Binary32
// logits are widened exactly to binary64 first, so GPT-2 and the tiny models
// share one sampler.
#ifndef LOCKSTEP_LIB_LOCKSTEP_SAMPLING_H_
#define LOCKSTEP_LIB_LOCKSTEP_SAMPLING_H_

#include <cstdint>
#include <span>
#include <vector>

namespace lockstep {

struct SamplerOptions {
  int top_k = 0;             // 0: greedy unless top_p < 1
  double temperature = 1.0;  // > 0, finite
  uint64_t seed = 0;
  // In (0, 1]. Below 1: nucleus sampling (§5.4) within the top_k
  // candidates, or within the whole vocabulary when top_k is 0. At 1: off
  // (§5.4 with P = 1 chooses what §5.3 chooses).
  double top_p = 1.0;
};

class Sampler {
 public:
  // Validates the options against the vocabulary size (top_k in
  // [0, vocab], temperature finite and > 0, top_p in (0, 1]); throws
  // lockstep::Error.
  Sampler(const SamplerOptions& options, int vocab);
  int32_t next(std::span<const double> logits);
  int32_t next(std::span<const float> logits);

 private:
  SamplerOptions options_;
  int vocab_;
  uint64_t state_;
  std::vector<double> wide_, weight_;
  std::vector<int> rank_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_LOCKSTEP_SAMPLING_H_
