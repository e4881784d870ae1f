// Model-level certificates for the tiny binary64 models (issue 14,
// docs/certify-tiny.md): bounds on |computed logit - real logit|, where
// "real" is the same model in exact real arithmetic on the same clipped
// weights (real exp and tanh, eps = 10^-5, sqrt(2), sqrt(2/pi) and 0.044715
// exactly).
//
// (a) apriori_bound: for every input and every weight array clipped to B,
//     a forward error analysis layer by layer built on docs/numerics.md §2's
//     certified component bounds.
// (b) certify_tiny: per input, the real model in interval arithmetic with
//     outward rounding (every binary64 result widened by one ulp each way;
//     exp enclosed through the Gappa-certified exp lemma of docs/numerics.md
//     §2.1; MPFR intervals with directed roundings where binary64 boxes are
//     too wide), the engine's own logits beside it; Tiny4Sweep: the same for
//     all 2^32 four-byte inputs of tiny4, with per-(position, byte) tables.
#ifndef LOCKSTEP_LIB_TINY_CERTIFY_H_
#define LOCKSTEP_LIB_TINY_CERTIFY_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/tiny.h"

namespace lockstep::tiny_certify {

// A closed interval [lo, hi] of reals with binary64 ends.
struct Iv {
  double lo = 0.0, hi = 0.0;
};

// Enclosures of the real exp(z) for a binary64 z (any z; +inf above 709),
// from ls_exp64 and the certified lemma ls_exp64(z) = exp(z)(1 + rho) + eta,
// |rho| <= 2.849e-16, |eta| <= 2^-1075 (1 + 2^-40) (docs/numerics.md §2.1).
double exp_lower(double z);
double exp_upper(double z);
// The real exp over [d.lo, d.hi] (one ls_exp64 call when narrow).
Iv exp_iv(Iv d);
// y[i] = ls_exp64(x[i]) bit for bit, for n arguments at once (the
// batched sweep's exp: loops the compiler vectorizes).
void exp64_batch(const double* x, double* y, int n);
// The real tanh-form GELU (docs/numerics.md §2.2) over an interval.
Iv gelu_enclosure(Iv x);

// Per-input certificate of the last position's 256 logits.
struct Certificate {
  TinyLogits computed{};       // the engine's logits (ls_tiny_logits_checked)
  std::array<Iv, 256> real{};  // encloses each real logit
  TinyLogits bound{};  // max(|computed - lo|, |hi - computed|), rounded up
  double max_bound = 0.0;
};

// Validates like the checked entry (throws lockstep::Error), clips to B.
// Rows (embedding, ln_1, q, k, v) in 256-bit MPFR intervals, the rest in
// binary64 intervals; an input whose bound exceeds 1e-9 is evaluated again
// wholly in MPFR intervals and each logit keeps the intersection.
Certificate certify_tiny(int n_ctx, std::span<const double> weights,
                         std::span<const int32_t> tokens, double bound);

// All 2^32 four-byte inputs of a 4-position model: per (position, byte)
// tables of the computed and interval x, q, k, v; per input the engine's
// tail in its own order beside the interval tail, and a bound valid for
// all 256 logits at once (docs/certify-tiny.md, "The sweep's head").
class Tiny4Sweep {
 public:
  // weights: 2488 words (n_ctx 4), validated and clipped to B here.
  Tiny4Sweep(std::span<const double> weights, double bound);
  // The certified bound on |computed - real| for every logit of this input
  // (above 1e-9, the smaller of it and the whole-MPFR second pass's);
  // with logits non-null, also the engine's 256 logits from the same
  // computed path (for tests: they equal ls_tiny_logits_checked's).
  // refined (if non-null) says whether the second pass ran.
  double input_bound(const std::array<int32_t, 4>& tok,
                     TinyLogits* logits = nullptr,
                     bool* refined = nullptr) const;

  // The batched path (docs/certify-tiny.md, "The batched sweep"): the
  // bounds of position t's 256 logits for the 256 inputs prefix[0..t-1], b
  // (b = 0..255, the lane), all lanes at once in the same operations and
  // order as input_bound (t = 3: bound[b] == input_bound({prefix, b}) bit
  // for bit). A lane whose bound is not below 1e-9 (or is not a number)
  // is redone by the scalar path: input_bound for t = 3, certify_tiny's
  // max_bound (with the second pass) for t < 3, keeping the smaller of the
  // two. refined[b] (if non-null) says whether that ran; lnf (if non-null)
  // receives the engine's ln_f output of each lane (the head's input).
  void batch_bounds(int t, const int32_t* prefix, double* bound,
                    bool* refined = nullptr, double (*lnf)[4] = nullptr) const;

  struct Stats {
    uint64_t inputs = 0;  // inputs certified (of t + 1 bytes for position t)
    double max_bound = 0.0;
    std::array<int32_t, 4> worst{};  // an input attaining max_bound
    double sum_bound = 0.0;          // for the mean
    uint64_t over_goal = 0;          // inputs with a bound above 1e-9
    uint64_t refined = 0;            // inputs that needed the second pass
    void add(const Stats& o);
  };
  struct Result : Stats {  // the last position's logits (four-byte inputs)
    // Positions 0, 1, 2: the logits of the 1-, 2- and 3-byte prefixes
    // (position t's logits depend on bytes 0..t only). Position 0 is
    // counted in unit 0, position 1 of first byte b0 in unit (b0, 0).
    std::array<Stats, 3> prefix{};
    // Over every logit of every position of the inputs run: the largest
    // bound, and the sum over inputs of each input's largest bound.
    double max_all = 0.0, sum_all = 0.0;
  };
  // Units are the 65536 two-byte prefixes (b0, b1), each 65536 inputs.
  // Runs units [first, last) with u % stride == offset on `threads`
  // threads; progress(done_units, total_units) is called from this thread.
  // batched: the batched path (positions 0-3); otherwise the scalar
  // input_bound per input (position 3 only: the reference).
  Result run(int first, int last, int stride, int offset, int threads,
             const std::function<void(long, long)>& progress = {},
             bool batched = true) const;

 private:
  struct Row {
    double x[4], q[4], k[4], v[4];  // the engine's bits
    Iv X[4], Q[4], K[4], V[4];      // real enclosures
  };
  void tail(const Row* rows[4], double* h, Iv* H) const;
  template <int N>
  void batch(const int32_t* prefix, double* bound, bool* refined,
             double (*lnf)[4]) const;
  std::vector<double> w_;
  double B_;
  std::vector<Row> rows_;  // [position][byte]
  void build_soa();
  std::vector<double> soa_;  // rows_ as lanes (build_soa)
  double colmax_[4];         // max_o |head.w[k][o]|
  double bmax_;              // max_o |head.b[o]|
};

// (a): the a-priori bound for every input of up to n_ctx positions and
// every weight array clipped to B; stages name each intermediate quantity's
// magnitude bound M and error bound E (both rounded up).
struct AprioriStage {
  std::string name;
  double magnitude;  // bound on |real value| of every component
  double error;      // bound on |computed - real| of every component
};
struct Apriori {
  double bound;  // the logits' error bound
  std::vector<AprioriStage> stages;
  double gelu_lipschitz;  // certified sup |G'| used
};
Apriori apriori_bound(double B, int n_ctx);

}  // namespace lockstep::tiny_certify

#endif  // LOCKSTEP_LIB_TINY_CERTIFY_H_
