// The real-arithmetic GPT-2 in interval arithmetic, and certificates of
// greedy choices (issue 14, docs/certify.md).
//
// lockstep computes GPT-2 in binary32 (docs/arithmetic.md §6). The *real*
// model is the same formula evaluated exactly over the reals on the same
// binary32 weights and token ids: real exp, real tanh, real square root
// and division, GELU with the real constants sqrt(2/pi) and 0.044715, and
// LayerNorm's eps = 10^-5. IntervalGpt2 encloses that model's values in
// intervals with outward rounding: the blocks in MPFR intervals of P bits
// (every endpoint operation rounded down or up by MPFR; exp and tanh are
// increasing, so taken at the endpoints), the head in binary64 intervals
// (each operation rounded to nearest, then widened by one ulp on each
// side), so every interval contains the real value. certify_choice then proves
// that the real model's argmax is a given token: its logit's lower bound
// exceeds every other upper bound (or, for the few tokens whose bounds overlap,
// the enclosure of the logit difference is positive).
#ifndef LOCKSTEP_LIB_CERTIFY_H_
#define LOCKSTEP_LIB_CERTIFY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "ls_gpt2.h"

namespace lockstep {

// A closed interval of reals, lo <= hi (binary64 endpoints; +-inf allowed
// when an enclosure overflows).
struct Interval {
  double lo = 0.0, hi = 0.0;
  double width() const { return hi - lo; }
  double mid() const { return lo * 0.5 + hi * 0.5; }
  bool contains(double x) const { return lo <= x && x <= hi; }
};

// Interval operations with outward rounding (lib/certify.cc). Each result
// contains every real result of the operation on reals in the operands.
namespace iv {
Interval point(double x);
Interval add(Interval a, Interval b);
Interval sub(Interval a, Interval b);
Interval mul(Interval a, Interval b);
Interval mul(Interval a, double w);  // w a real given exactly
Interval div(Interval a, Interval b);
Interval square(Interval a);
Interval sqrt(Interval a);
Interval exp(Interval a);   // MPFR, MPFR_RNDD / MPFR_RNDU on the endpoints
Interval tanh(Interval a);  // MPFR, likewise
// The real GELU x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Interval gelu(Interval x);
// The smallest binary64 above / below x (x itself at +inf / -inf).
double next_up(double x);
double next_down(double x);
}  // namespace iv

// The real GPT-2 over 1..n_ctx positions, one position at a time (its keys
// and values kept, as the cached step does). The weights are in the plain
// layout (core/ls_gpt2.h), ls_gpt2_param_count(config) finite binary32
// words; they are read in place and must outlive the model. The blocks
// run in MPFR intervals of `precision` bits (53: binary64's precision,
// with MPFR's directed rounding instead of one-ulp widening); the head in
// binary64 intervals.
class IntervalGpt2 {
 public:
  IntervalGpt2(const ls_gpt2_config& config, const float* weights, size_t words,
               int precision = 128);
  ~IntervalGpt2();
  IntervalGpt2(const IntervalGpt2&) = delete;
  IntervalGpt2& operator=(const IntervalGpt2&) = delete;

  // Consumes `token` at position(); with `logits`, also encloses the
  // n_vocab logits of this position (logits()), the expensive part.
  // Throws lockstep::Error for a token outside the vocabulary or a full
  // context.
  void step(int32_t token, bool logits = true);
  // The last step's logit enclosures (n_vocab), and its final LayerNorm
  // output (n_embd), valid when that step was asked for logits.
  const std::vector<Interval>& logits() const { return logits_; }
  const std::vector<Interval>& final_hidden() const { return hidden_; }
  int position() const { return position_; }
  const ls_gpt2_config& config() const { return c_; }
  // The interval of logit[a] - logit[b] from final_hidden() and the
  // embeddings (tighter than the difference of the two logit intervals).
  Interval logit_difference(int32_t a, int32_t b) const;

 private:
  struct Impl;
  ls_gpt2_config c_;
  const float* w_;
  int position_ = 0;
  std::vector<Interval> logits_, hidden_;
  std::unique_ptr<Impl> impl_;
};

// Whether the real model's greedy choice is `chosen`.
struct ChoiceCertificate {
  int32_t chosen = -1;
  Interval chosen_logit;
  // The other token with the largest upper bound, and that bound.
  int32_t rival = -1;
  double rival_hi = 0.0;
  // chosen_logit.lo - rival_hi: positive when certified by bounds alone.
  double margin = 0.0;
  // The widest logit interval of the step.
  double max_width = 0.0;
  // Tokens whose upper bound reaches chosen_logit.lo (0 when margin > 0),
  // and, when there are some, the smallest lower bound of
  // logit[chosen] - logit[v] over them (logit_difference).
  int32_t overlapping = 0;
  double difference_margin = 0.0;
  // margin > 0, or every overlapping token's difference is positive.
  bool certified = false;
};

// Certifies `chosen` against the last step's logits (`model` stepped with
// logits). Overlapping tokens are tried by logit_difference, at most
// `max_difference_checks` of them (more: not certified).
ChoiceCertificate certify_choice(const IntervalGpt2& model, int32_t chosen,
                                 int max_difference_checks = 64);

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_CERTIFY_H_
