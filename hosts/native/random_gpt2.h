// Seeded random GPT-2 weights for the WebAssembly tests and benchmark:
// every weight uniform in [-0.05, 0.05] from SplitMix64 (docs/arithmetic.md
// §5.1), LayerNorm gains around 1, so that every parameter matters and
// activations stay in a realistic range.
#ifndef LOCKSTEP_HOSTS_NATIVE_RANDOM_GPT2_H_
#define LOCKSTEP_HOSTS_NATIVE_RANDOM_GPT2_H_

#include <cstdint>
#include <vector>

#include "ls_gpt2.h"
#include "ls_sampler.h"

namespace lockstep {

inline std::vector<float> seeded_gpt2_weights(const ls_gpt2_config& c,
                                              uint64_t seed) {
  std::vector<float> w(ls_gpt2_param_count(&c));
  uint64_t state = seed;
  for (auto& x : w) x = float((ls_uniform64(&state) * 2.0 - 1.0) * 0.05);
  const size_t C = size_t(c.n_embd);
  auto gains = [&](size_t at) {
    for (size_t i = 0; i < C; ++i) w[at + i] += 1.0f;
  };
  for (int l = 0; l < c.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
    gains(b.ln1_g);
    gains(b.ln2_g);
  }
  gains(ls_gpt2_lnf_offset(&c));
  return w;
}

}  // namespace lockstep

#endif  // LOCKSTEP_HOSTS_NATIVE_RANDOM_GPT2_H_
