#include "lockstep/sampling.h"

#include "lockstep/error.h"
#include "ls_sampler.h"

namespace lockstep {

Sampler::Sampler(const SamplerOptions& o, int vocab)
    : options_(o), vocab_(vocab), state_(o.seed) {
  if (o.top_k < 0 || o.top_k > vocab) {
    throw Error("top-k must be in [1, " + std::to_string(vocab) +
                "] (0 means greedy)");
  }
  // Written so that NaN fails too.
  if (!(o.temperature > 0.0 && o.temperature <= 1e300)) {
    throw Error("temperature must be a finite number > 0");
  }
  if (!(o.top_p > 0.0 && o.top_p <= 1.0)) {
    throw Error("top-p must be a number in (0, 1]");
  }
  // Nucleus sampling without top-k ranks the whole vocabulary.
  if (options_.top_p < 1.0 && options_.top_k == 0) options_.top_k = vocab;
  if (options_.top_k > 0) {
    rank_.resize(size_t(options_.top_k));
    weight_.resize(size_t(options_.top_k));
  }
}

int32_t Sampler::next(std::span<const double> logits) {
  if (logits.size() != size_t(vocab_)) {
    throw Error("sampler: " + std::to_string(logits.size()) +
                " logits for a vocabulary of " + std::to_string(vocab_));
  }
  if (options_.top_k == 0) return ls_argmax64(logits.data(), vocab_);
  if (options_.top_p < 1.0) {
    return ls_sample_top_p64(logits.data(), vocab_, options_.top_k,
                             options_.temperature, options_.top_p, &state_,
                             rank_.data(), weight_.data(), nullptr);
  }
  return ls_sample_top_k64(logits.data(), vocab_, options_.top_k,
                           options_.temperature, &state_, rank_.data(),
                           weight_.data());
}

int32_t Sampler::next(std::span<const float> logits) {
  wide_.assign(logits.begin(), logits.end());  // exact widening
  return next(std::span<const double>(wide_));
}

}  // namespace lockstep
