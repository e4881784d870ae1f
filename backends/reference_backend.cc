#include "backends/reference_backend.h"

#include <algorithm>
#include <string>
#include <vector>

#include "lockstep/error.h"
#include "ls_gpt2_q8.h"

namespace lockstep::backends {
namespace {

class ReferenceBackend final : public Gpt2Backend {
 public:
  ReferenceBackend(const ls_gpt2_config& c, const float* w, size_t words,
                   int max_prefix, ls_gpt2_layout layout)
      : c_(c), w_(w), words_(words) {
    if (layout == LS_GPT2_LAYOUT_PANEL64) {
      plain_.resize(words);
      ls_gpt2_from_panels(&c, w, plain_.data());
      w_ = plain_.data();
    }
    const int n = max_prefix > 0 ? std::min(max_prefix, c.n_ctx) : c.n_ctx;
    scratch_.assign(std::max(ls_gpt2_step_scratch_floats(&c),
                             ls_gpt2_infer_scratch_floats(&c, n)),
                    0.0f);
  }
  std::string name() const override { return "reference"; }
  size_t extra_memory_bytes() const override {
    return (scratch_.size() + plain_.size()) * sizeof(float);
  }
  ls_status step(float* cache, size_t cache_capacity, size_t cache_len,
                 int32_t token, int32_t position, float* logits) override {
    return ls_gpt2_step(&c_, w_, words_, cache, cache_capacity, cache_len,
                        token, position, scratch_.data(), scratch_.size(),
                        logits);
  }
  ls_status infer(const int32_t* tokens, int n, float* logits) override {
    return ls_gpt2_infer(&c_, w_, words_, tokens, n, scratch_.data(),
                         scratch_.size(), logits);
  }
  ls_status prefill(float* cache, size_t cache_capacity, size_t cache_len,
                    const int32_t* tokens, int n, int32_t position,
                    bool all_positions, float* logits) override {
    // Scratch is sized for max_prefix: a longer prefill fails its check.
    return ls_gpt2_prefill(&c_, w_, words_, cache, cache_capacity, cache_len,
                           tokens, n, position, all_positions ? 1 : 0,
                           scratch_.data(), scratch_.size(), logits);
  }

 private:
  ls_gpt2_config c_;
  const float* w_;
  size_t words_;
  std::vector<float> scratch_;
  std::vector<float> plain_;  // PANEL64 weights in the plain layout
};

}  // namespace

std::unique_ptr<Gpt2Backend> make_reference_backend(const ls_gpt2_config& c,
                                                    const float* weights,
                                                    size_t words,
                                                    int max_prefix,
                                                    ls_gpt2_layout layout) {
  return std::make_unique<ReferenceBackend>(c, weights, words, max_prefix,
                                            layout);
}

}  // namespace lockstep::backends

// ------------------------------------------------------------ int8
namespace lockstep {
namespace {

// core/ls_gpt2_q8.c behind the interface; the weights are read in place.
class ReferenceQ8Backend final : public Gpt2Backend {
 public:
  ReferenceQ8Backend(std::string name, const ls_gpt2_config& c,
                     const uint8_t* w, size_t bytes, int max_prefix)
      : name_(std::move(name)), c_(c), w_(w), bytes_(bytes) {
    const int n = max_prefix > 0 ? std::min(max_prefix, c.n_ctx) : c.n_ctx;
    scratch_.assign(std::max(ls_gpt2_step_scratch_floats(&c),
                             ls_gpt2_infer_scratch_floats(&c, n)),
                    0.0f);
  }
  std::string name() const override { return name_; }
  size_t extra_memory_bytes() const override {
    return scratch_.size() * sizeof(float);
  }
  ls_status step(float* cache, size_t cache_capacity, size_t cache_len,
                 int32_t token, int32_t position, float* logits) override {
    return ls_gpt2_q8_step(&c_, w_, bytes_, cache, cache_capacity, cache_len,
                           token, position, scratch_.data(), scratch_.size(),
                           logits);
  }
  ls_status infer(const int32_t* tokens, int n, float* logits) override {
    return ls_gpt2_q8_infer(&c_, w_, bytes_, tokens, n, scratch_.data(),
                            scratch_.size(), logits);
  }
  ls_status prefill(float* cache, size_t cache_capacity, size_t cache_len,
                    const int32_t* tokens, int n, int32_t position,
                    bool all_positions, float* logits) override {
    return ls_gpt2_q8_prefill(&c_, w_, bytes_, cache, cache_capacity, cache_len,
                              tokens, n, position, all_positions ? 1 : 0,
                              scratch_.data(), scratch_.size(), logits);
  }

 private:
  std::string name_;
  ls_gpt2_config c_;
  const uint8_t* w_;
  size_t bytes_;
  std::vector<float> scratch_;
};

}  // namespace

namespace backends {

std::unique_ptr<Gpt2Backend> make_reference_q8_backend(const ls_gpt2_config& c,
                                                       const uint8_t* weights,
                                                       size_t bytes,
                                                       int max_prefix) {
  return std::make_unique<ReferenceQ8Backend>("reference (int8)", c, weights,
                                              bytes, max_prefix);
}

}  // namespace backends
}  // namespace lockstep
