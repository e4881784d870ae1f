// ls_gpt2_prefill's argument checks (core/ls_gpt2.c), written once for the
// backends that hold their config and weights themselves (cpu, cuda, wasm):
// each must return the reference's status for every bad call, in the
// reference's order, so a caller sees one contract whatever the backend
// (tests/prefill_status_test.cc). Header-only and C++17 so that nvcc's
// host pass compiles it too.
#ifndef LOCKSTEP_BACKENDS_PREFILL_ARGS_H_
#define LOCKSTEP_BACKENDS_PREFILL_ARGS_H_

#include <cstddef>
#include <cstdint>

#include "ls_gpt2.h"
#include "ls_status.h"

namespace lockstep {

// The checks of ls_gpt2_prefill after its config and weight-count ones
// (the backend's config is valid and its weights counted at creation), in
// its order: null (cache, logits, tokens when n > 0), empty, position, too
// long, tokens, cache length, scratch. `max_positions` stands for the
// reference's scratch size: the most positions one call of this backend
// may take (its max_prefix). LS_OK when every check passes.
inline ls_status check_prefill_args(const ls_gpt2_config& c, const float* cache,
                                    size_t cache_capacity, size_t cache_len,
                                    const int32_t* tokens, int n,
                                    int32_t position, const float* logits,
                                    int max_positions) {
  if (!cache || !logits || (n > 0 && !tokens)) return LS_ERR_NULL;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (position < 0 || position >= c.n_ctx) return LS_ERR_POSITION;
  if (n > c.n_ctx - position) return LS_ERR_SEQUENCE_TOO_LONG;
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.n_vocab) return LS_ERR_TOKEN;
  }
  const size_t row = ls_gpt2_cache_row_floats(&c);
  if (cache_len != size_t(position) * row ||
      cache_capacity < cache_len + size_t(n) * row) {
    return LS_ERR_CACHE_LENGTH;
  }
  if (n > max_positions) return LS_ERR_SCRATCH;
  return LS_OK;
}

}  // namespace lockstep

#endif  // LOCKSTEP_BACKENDS_PREFILL_ARGS_H_
