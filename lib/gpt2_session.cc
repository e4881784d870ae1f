#include <algorithm>
#include <thread>

#include "backends/backend.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"

namespace lockstep {
namespace {

void check(ls_status s, const std::string& what) {
  if (s != LS_OK) throw Error(what + ": " + ls_status_message(s));
}

// The step path's check: the message is built only on error, so a
// successful step, pass or prefill allocates nothing (lib/lockstep/gpt2.h
// promises it; tests/gpt2_session_alloc_test.cc counts).
template <typename What>
void check_lazy(ls_status s, What&& what) {
  if (s != LS_OK) [[unlikely]] {
    throw Error(what() + ": " + ls_status_message(s));
  }
}

// Gpt2SessionOptions::threads = 0: one thread per hardware thread.
int all_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

}  // namespace

Gpt2Memory gpt2_memory_plan(const ls_gpt2_config& c, int max_prefix) {
  if (!ls_gpt2_config_valid(&c)) check(LS_ERR_CONFIG, "GPT-2 memory plan");
  const int n = max_prefix > 0 ? std::min(max_prefix, c.n_ctx) : c.n_ctx;
  Gpt2Memory m;
  m.weights = ls_gpt2_param_count(&c) * sizeof(float);
  m.cache = ls_gpt2_cache_floats(&c) * sizeof(float);
  m.scratch = std::max(ls_gpt2_step_scratch_floats(&c),
                       ls_gpt2_infer_scratch_floats(&c, n)) *
              sizeof(float);
  m.logits = size_t(c.n_vocab) * sizeof(float);
  return m;
}

Gpt2Session::Gpt2Session(const Gpt2View& view, const Gpt2SessionOptions& o)
    : view_(view) {
  const ls_gpt2_config& c = view.config;
  if (!ls_gpt2_config_valid(&c)) check(LS_ERR_CONFIG, "GPT-2 session");
  if (!view.q8 && (!view.weights || view.words != ls_gpt2_param_count(&c))) {
    throw Error("GPT-2 session: " + std::to_string(view.words) +
                " weights, the config needs " +
                std::to_string(ls_gpt2_param_count(&c)));
  }
  max_prefix_ = o.max_prefix > 0 ? std::min(o.max_prefix, c.n_ctx) : c.n_ctx;
  const int threads = o.backend == "reference" ? 1
                      : o.threads == 0         ? all_cores()
                                               : o.threads;
  if (view.q8) {  // int8 (docs/int8.md): the backend checks the byte count
    backend_ = make_gpt2_q8_backend(o.backend, c, view.q8, view.q8_bytes,
                                    threads, max_prefix_);
  } else {
    backend_ = make_gpt2_backend(o.backend, c, view.weights, view.words,
                                 threads, max_prefix_, view.layout);
  }
  memory_ = gpt2_memory_plan(c, max_prefix_);
  if (view.q8) memory_.weights = view.q8_bytes;
  memory_.scratch = backend_->extra_memory_bytes();
  cache_ = HugeFloats(memory_.cache / sizeof(float));
  logits_.assign(memory_.logits / sizeof(float), 0.0f);
}

Gpt2Session::~Gpt2Session() = default;

std::string Gpt2Session::backend_name() const { return backend_->name(); }

std::span<const float> Gpt2Session::step(int32_t token) {
  const ls_gpt2_config& c = view_.config;
  if (position_ >= c.n_ctx) {
    throw Error("GPT-2 step: the context is full (" + std::to_string(c.n_ctx) +
                " positions)");
  }
  const size_t used = size_t(position_) * ls_gpt2_cache_row_floats(&c);
  check_lazy(backend_->step(cache_.data(), cache_.size(), used, token,
                            position_, logits_.data()),
             [&] {
               return "GPT-2 step at position " + std::to_string(position_) +
                      " (token " + std::to_string(token) + ")";
             });
  ++position_;
  return logits_;
}

std::span<const float> Gpt2Session::infer(std::span<const int32_t> tokens) {
  if (tokens.size() > size_t(max_prefix_) &&
      tokens.size() <= size_t(view_.config.n_ctx)) {
    throw Error("GPT-2 infer: " + std::to_string(tokens.size()) +
                " tokens, but this session was sized for " +
                std::to_string(max_prefix_));
  }
  check_lazy(backend_->infer(tokens.data(),
                             int(std::min<size_t>(tokens.size(), 1u << 30)),
                             logits_.data()),
             [&] {
               return "GPT-2 infer over " + std::to_string(tokens.size()) +
                      " tokens";
             });
  return logits_;
}

std::span<const float> Gpt2Session::prefill(std::span<const int32_t> tokens,
                                            bool all_positions) {
  const ls_gpt2_config& c = view_.config;
  if (tokens.empty()) throw Error("GPT-2 prefill: no tokens");
  if (tokens.size() > size_t(c.n_ctx - position_)) {
    throw Error("GPT-2 prefill: " + std::to_string(tokens.size()) +
                " tokens at position " + std::to_string(position_) +
                " do not fit the context of " + std::to_string(c.n_ctx));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.n_vocab) {
      throw Error("GPT-2 prefill: token " + std::to_string(tokens[i]) +
                  " at index " + std::to_string(i) +
                  " is outside the vocabulary (0 .. " +
                  std::to_string(c.n_vocab - 1) + ")");
    }
  }
  const size_t V = size_t(c.n_vocab), row = ls_gpt2_cache_row_floats(&c);
  if (all_positions) all_logits_.resize(tokens.size() * V);
  const int start = position_;
  for (size_t done = 0; done < tokens.size();) {
    const int n = int(std::min(tokens.size() - done, size_t(max_prefix_)));
    float* out = all_positions ? all_logits_.data() + done * V : logits_.data();
    ls_status st = backend_->prefill(
        cache_.data(), cache_.size(), size_t(position_) * row,
        tokens.data() + done, n, position_, all_positions, out);
    // A chunk before the last computes its last position's logits only
    // because the backend's prefill returns some; the caller asked for the
    // prompt's last position. Their check is not the caller's, so the
    // chunking cannot change what is checked (docs/arithmetic.md 1.6): on
    // LS_ERR_OUTPUT_NONFINITE the chunk's cache rows are complete.
    if (st == LS_ERR_OUTPUT_NONFINITE && !all_positions &&
        done + size_t(n) < tokens.size()) {
      st = LS_OK;
    }
    if (st != LS_OK) [[unlikely]] {
      // Nothing consumed: the rows written are past position() again.
      const int at = position_;
      position_ = start;
      check_lazy(st, [&] {
        return "GPT-2 prefill of " + std::to_string(n) +
               " tokens at position " + std::to_string(at);
      });
    }
    position_ += n;
    done += size_t(n);
  }
  if (!all_positions) return logits_;
  // The last position's logits are also the session's current logits.
  std::copy(all_logits_.end() - long(V), all_logits_.end(), logits_.begin());
  return all_logits_;
}

std::span<const float> Gpt2Session::cache() const {
  return {cache_.data(),
          size_t(position_) * ls_gpt2_cache_row_floats(&view_.config)};
}

}  // namespace lockstep
