// The one narrow interface every GPT-2 backend implements, chosen once at
// the top (make_gpt2_backend). Every backend computes the operations of
// docs/arithmetic.md §6 in their stated order, so every backend returns the
// same bits as the scalar reference (core/ls_gpt2.c) on every logit and
// every cache word; tests/gpt2_backend_test.cc compares bytes.
#ifndef LOCKSTEP_BACKENDS_BACKEND_H_
#define LOCKSTEP_BACKENDS_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"
#include "ls_status.h"

namespace lockstep {

class Gpt2Backend {
 public:
  virtual ~Gpt2Backend() = default;
  // e.g. "reference", "cpu-avx512 x2".
  virtual std::string name() const = 0;
  // Memory the backend holds beyond the caller's weights, cache and logits
  // (scratch for one step and for a full pass of max_prefix tokens, thread
  // scratch, repacked weights), computed from the config at creation.
  virtual size_t extra_memory_bytes() const = 0;
  // Same contract and status codes as ls_gpt2_step / ls_gpt2_infer
  // (core/ls_gpt2.h). infer over more than max_prefix tokens (and at most
  // n_ctx) returns LS_ERR_SCRATCH. Nothing is allocated inside either.
  virtual ls_status step(float* cache, size_t cache_capacity, size_t cache_len,
                         int32_t token, int32_t position, float* logits) = 0;
  virtual ls_status infer(const int32_t* tokens, int n, float* logits) = 0;
  // Same contract and status codes as ls_gpt2_prefill: tokens[0..n) at
  // positions position .. position+n-1 appended to the cache after its
  // cache_len floats; the last position's logits, or every position's
  // (n * n_vocab) with all_positions. More than max_prefix tokens returns
  // LS_ERR_SCRATCH (callers chunk: chunked prefill gives the same bits).
  virtual ls_status prefill(float* cache, size_t cache_capacity,
                            size_t cache_len, const int32_t* tokens, int n,
                            int32_t position, bool all_positions,
                            float* logits) = 0;
  // Optional: an observer of the backend's own intermediate tensors
  // (docs/verify.md "Per-operation bisect between backends"). A backend
  // that can show them returns true and from then on calls `observer`
  // (core/ls_gpt2.h's taps, names and shapes: one call per position, head
  // -1) on each operation its prefill with every position's logits
  // materializes; nullptr turns it off. The observer only reads: the bits
  // are the unobserved ones. The default shows nothing and returns false.
  virtual bool set_observer(ls_gpt2_observer observer, void* user) {
    (void)observer, (void)user;
    return false;
  }
};

// name: "reference" (wraps core/ls_gpt2.c), "cpu" (the fast path on the
// best ISA, or $LOCKSTEP_ISA = avx512 | avx2 | generic when set),
// "cpu-avx512", "cpu-avx2", "cpu-generic", "cuda" (an NVIDIA GPU, in
// builds with LOCKSTEP_CUDA: docs/cuda.md; it ignores threads). threads: 1
// or 2 (cpu only; the reference takes 1). max_prefix: the longest infer()
// (<= 0: n_ctx).
// `weights` (`words` floats, packed as core/ls_gpt2.h in `layout`
// (core/ls_gpt2_layout.h), checked finite by the loader) must outlive the
// backend. A backend whose own layout is `layout` reads the weights in
// place; any other makes its own permuted copy at creation. Throws
// lockstep::Error for an unknown name, an ISA this CPU cannot run, a bad thread
// count, an invalid config or a wrong word count.
std::unique_ptr<Gpt2Backend> make_gpt2_backend(
    const std::string& name, const ls_gpt2_config& c, const float* weights,
    size_t words, int threads, int max_prefix,
    ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN);

// The grouped int8 model (core/ls_gpt2_q8.h, docs/int8.md): `weights` are
// ls_gpt2_q8_bytes(c) bytes checked by the loader (load_gpt2_q8), which
// must outlive the backend. "reference" is core/ls_gpt2_q8.c; the "cpu"
// names are the fast CPU backend with its int8 kernels (the ISA's integer
// dot products: AVX-512 VNNI, AVX2, NEON, portable), the same bits. threads
// as make_gpt2_backend. Throws lockstep::Error for an unknown name, a
// backend without int8 ("cuda" for now), an invalid config or a wrong byte
// count.
std::unique_ptr<Gpt2Backend> make_gpt2_q8_backend(const std::string& name,
                                                  const ls_gpt2_config& c,
                                                  const uint8_t* weights,
                                                  size_t bytes, int threads,
                                                  int max_prefix);

namespace backends {
// The backends this machine can create: "reference", then "cpu-<isa>" for
// every supported ISA, best first, then "cuda" where built and a device is
// found.
std::vector<std::string> available_gpt2_backends();
}  // namespace backends

}  // namespace lockstep

#endif  // LOCKSTEP_BACKENDS_BACKEND_H_
