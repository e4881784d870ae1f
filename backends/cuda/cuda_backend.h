// The CUDA backend (docs/cuda.md): GPT-2 in binary32 on an NVIDIA GPU, with
// the same bits as the scalar reference on every logit and cache word.
// Built only with -DLOCKSTEP_CUDA=ON (nvcc found); make_gpt2_backend("cuda")
// creates it. Plain C++ header: no CUDA types, so host code and tests
// compiled by the C++ compiler can include it.
#ifndef LOCKSTEP_BACKENDS_CUDA_CUDA_BACKEND_H_
#define LOCKSTEP_BACKENDS_CUDA_CUDA_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"

namespace lockstep::backends {

// Weights (plain or PANEL64, permuted to plain on the way) are copied to the
// device once; the KV cache is mirrored there (docs/cuda.md: which host
// rows are trusted, which are uploaded). max_prefix: the longest infer or
// prefill (<= 0: n_ctx). Throws lockstep::Error when no device is usable
// or device memory runs out.
std::unique_ptr<Gpt2Backend> make_cuda_backend(const ls_gpt2_config& c,
                                               const float* weights,
                                               size_t words, int max_prefix,
                                               ls_gpt2_layout layout);

// Grouped int8 GPT-2 (core/ls_gpt2_q8.h, docs/arithmetic.md §7) on the
// device, with the bits of the int8 reference (core/ls_gpt2_q8.c):
// `weights` are ls_gpt2_q8_bytes(c) bytes checked by the loader
// (load_gpt2_q8), copied to the device once. Throws lockstep::Error for an
// invalid config, a wrong byte count, no usable device or too little
// device memory.
std::unique_ptr<Gpt2Backend> make_cuda_q8_backend(const ls_gpt2_config& c,
                                                  const uint8_t* weights,
                                                  size_t bytes, int max_prefix);

// True when a CUDA device can be used (a driver and at least one device).
bool cuda_device_available();
// "NVIDIA H200" or "" when none.
std::string cuda_device_name();

namespace cuda {

// §3 on the device over n inputs (tests compare these with the core's
// ls_exp32 / ls_tanh32 / ls_gelu32). op: 0 exp, 1 tanh, 2 gelu.
void device_elementwise(const float* in, float* out, size_t n, int op);

// The device's limits, measured now: the copy rate of a device-to-device
// copy of `bytes` (bytes read plus bytes written per second, median of
// `reps` copies), and the non-FMA binary32 rate (a multiply then an add,
// 2 flops, per step of independent chains), in flop/s.
double copy_bandwidth_bytes_per_s(size_t bytes, int reps);
double nonfma_peak_flops();

// Device time of one decode step at `position` (token `token`) without the
// interface's copies (logits and the new cache row back to the host):
// median of `reps` replays, in seconds. The device cache rows before
// `position` hold whatever the last calls left (their values do not change
// the time). Throws if `b` is not a CUDA backend.
double device_step_seconds(Gpt2Backend& b, int position, int token, int reps);
// One decode step at `position` launched kernel by kernel (no graph), with
// an event after each launch: milliseconds per kernel label ("matvec
// 768x2304", "attention", ...), summed over the layers, in launch order.
std::vector<std::pair<std::string, double>> profile_step(Gpt2Backend& b,
                                                         int position,
                                                         int token);
// Device time of a prefill of tokens[0..n) at position 0 (the last
// position's logits) without the interface's copies back: median of
// `reps`, in seconds. n <= the backend's max_prefix.
double device_prefill_seconds(Gpt2Backend& b, const int32_t* tokens, int n,
                              int reps);
// A prefill of tokens[0..n) at position 0 (last logits, no copies back)
// launched kernel by kernel with an event after each, as profile_step:
// milliseconds per kernel label, summed, in launch order.
std::vector<std::pair<std::string, double>> profile_prefill(
    Gpt2Backend& b, const int32_t* tokens, int n);

// Batches: a decode step for each of n independent sequences at once.
// Member i is step(caches[i], capacities[i], cache_lens[i], tokens[i],
// positions[i], logits + i * n_vocab) with the same bits as that step
// alone (every logit and the appended cache row); the n run as one pass
// through the layers. The members' caches are distinct host buffers, each
// mirrored on the device in slot i (docs/cuda.md: the same trust rule as
// step's). Returns the first member's failed check (in step's order;
// nothing is computed), else LS_ERR_OUTPUT_NONFINITE if a member's logits
// are not all finite, else LS_OK; `statuses` (optional, n entries) gets
// each member's. n <= the backend's max_prefix; binary32 only (throws for
// int8 or a cache shared by two members).
ls_status step_batch(Gpt2Backend& b, int n, float* const* caches,
                     const size_t* capacities, const size_t* cache_lens,
                     const int32_t* tokens, const int32_t* positions,
                     float* logits, ls_status* statuses = nullptr);
// Device time of one batched step of n members at positions[0..n) (graph
// replays, no copies): median of `reps`, in seconds. The members' device
// caches hold whatever the last calls left.
double device_batch_step_seconds(Gpt2Backend& b, int n, const int32_t* tokens,
                                 const int32_t* positions, int reps);

}  // namespace cuda

// The cost of exactness (docs/cuda.md): the same backend and kernels built
// with LOCKSTEP_CUDA_FAST (backends/cuda/cuda_backend_fast.cu): every
// multiply-add of the products, attention and logits fused (__fmaf_rn),
// LayerNorm's sums and softmax's sum split across lanes, so its results
// are NOT the spec's bits. Linked only into the comparison benchmark
// (cuda_exactness_bench) and the test that shows it differs; never used by
// make_gpt2_backend. The entries work as cuda::'s on its backends.
namespace cuda_fast {
std::unique_ptr<Gpt2Backend> make_cuda_backend(const ls_gpt2_config& c,
                                               const float* weights,
                                               size_t words, int max_prefix,
                                               ls_gpt2_layout layout);
double device_step_seconds(Gpt2Backend& b, int position, int token, int reps);
double device_prefill_seconds(Gpt2Backend& b, const int32_t* tokens, int n,
                              int reps);
std::vector<std::pair<std::string, double>> profile_prefill(
    Gpt2Backend& b, const int32_t* tokens, int n);
std::vector<std::pair<std::string, double>> profile_step(Gpt2Backend& b,
                                                         int position,
                                                         int token);
ls_status step_batch(Gpt2Backend& b, int n, float* const* caches,
                     const size_t* capacities, const size_t* cache_lens,
                     const int32_t* tokens, const int32_t* positions,
                     float* logits, ls_status* statuses = nullptr);
double device_batch_step_seconds(Gpt2Backend& b, int n, const int32_t* tokens,
                                 const int32_t* positions, int reps);
}  // namespace cuda_fast
}  // namespace lockstep::backends

#endif  // LOCKSTEP_BACKENDS_CUDA_CUDA_BACKEND_H_
