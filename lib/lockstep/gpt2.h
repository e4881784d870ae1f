// GPT-2 sessions over packed binary32 weights: the cached step and the
// full-prefix pass of core/ls_gpt2.h with their buffers allocated once, and
// errors as exceptions. The memory a session needs is computed from the
// config up front; nothing is allocated inside a step.
#ifndef LOCKSTEP_LIB_LOCKSTEP_GPT2_H_
#define LOCKSTEP_LIB_LOCKSTEP_GPT2_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/huge_floats.h"
#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"

namespace lockstep {

// Packed weights in the order of core/ls_gpt2.h, in `layout`
// (core/ls_gpt2_layout.h), checked finite by whoever produced the view (the
// loaders do).
struct Gpt2View {
  ls_gpt2_config config{};
  const float* weights = nullptr;
  size_t words = 0;
  ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN;
  // Grouped int8 weights instead (core/ls_gpt2_q8.h, docs/int8.md):
  // ls_gpt2_q8_bytes(config) bytes checked by load_gpt2_q8; weights and
  // words are then unused.
  const uint8_t* q8 = nullptr;
  size_t q8_bytes = 0;
};

// The config's memory plan, in bytes.
struct Gpt2Memory {
  size_t weights = 0;  // the packed weights (mapped or owned by the loader)
  size_t cache = 0;    // n_ctx positions of keys and values
  size_t scratch = 0;  // the backend's working buffers (and repacking)
  size_t logits = 0;
  size_t total() const { return weights + cache + scratch + logits; }
};
Gpt2Memory gpt2_memory_plan(const ls_gpt2_config& c, int max_prefix);

class Gpt2Backend;  // backends/backend.h

struct Gpt2SessionOptions {
  // "cpu" (the fast path, best ISA), "cpu-avx512", "cpu-avx2",
  // "cpu-generic" or "reference" (core/ls_gpt2.c): all give the same bits.
  std::string backend = "cpu";
  // Compute threads of a cpu backend, 1 .. 256; 0: one per hardware thread
  // (std::thread::hardware_concurrency(), at least 1). The reference uses
  // 1 whatever is asked. The results do not depend on it.
  int threads = 0;
  int max_prefix = 0;  // longest infer() (<= 0: n_ctx)
};

class Gpt2Session {
 public:
  // Checks the view (config, word count), creates the backend once and
  // allocates the cache and logits; the backend allocates its scratch.
  explicit Gpt2Session(const Gpt2View& view,
                       const Gpt2SessionOptions& options = {});
  ~Gpt2Session();

  // The cached step: consumes `token` at position(), appends its keys and
  // values and returns the n_vocab logits (valid until the next call).
  std::span<const float> step(int32_t token);
  // The full-prefix pass over 1..n_ctx tokens: the last position's logits.
  // Leaves the cache alone.
  std::span<const float> infer(std::span<const int32_t> tokens);
  // Batched prefill (ls_gpt2_prefill): consumes `tokens` at positions
  // position() .. position() + n - 1 as matrix products, appends their keys
  // and values to the cache and returns the last position's logits, or
  // with all_positions every position's (n * n_vocab, position()+i's at
  // i * n_vocab). Runs in chunks of at most max_prefix positions. The same
  // logits and cache words, bit for bit, as step() on each token in turn,
  // from an empty or a partly filled cache. Throws (and consumes nothing)
  // when the tokens do not fit the context or a checked logit is not
  // finite. The logits checked are those returned (docs/arithmetic.md
  // 1.6): the last position's, or every position's; how the prompt is
  // chunked does not change that.
  std::span<const float> prefill(std::span<const int32_t> tokens,
                                 bool all_positions = false);

  int position() const { return position_; }
  void reset() { position_ = 0; }
  // The used part of the cache: position() rows of n_layer * 2 * n_embd.
  std::span<const float> cache() const;
  const ls_gpt2_config& config() const { return view_.config; }
  const Gpt2Memory& memory() const { return memory_; }
  // The backend's name, e.g. "cpu-avx512 x2".
  std::string backend_name() const;

 private:
  Gpt2View view_;
  int max_prefix_;
  int position_ = 0;
  std::unique_ptr<Gpt2Backend> backend_;
  HugeFloats cache_;  // on 2 MB pages: its rows are far apart
  std::vector<float> logits_;
  std::vector<float> all_logits_;  // prefill(all_positions): grown on demand
  Gpt2Memory memory_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_LOCKSTEP_GPT2_H_
