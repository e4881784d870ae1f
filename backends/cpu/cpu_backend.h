// The fast CPU backend: the §6 forward of core/ls_gpt2.c with every matrix
// product register-tiled and vectorized across outputs, on a fixed team of
// threads that split outputs (or a product's K along whole §2.1 blocks,
// combined in the spec's tree), on one ISA's kernel table chosen at
// creation.
#ifndef LOCKSTEP_BACKENDS_CPU_CPU_BACKEND_H_
#define LOCKSTEP_BACKENDS_CPU_CPU_BACKEND_H_

#include <memory>
#include <string>

#include "backends/backend.h"

namespace lockstep::backends {

// weights_layout PANEL64: the matrices and the head are read in place (no
// repacked copy). isa: "avx512" | "avx2" | "generic" (must be supported:
// cpu/cpu_isa.h). threads: 1 .. 256.
std::unique_ptr<Gpt2Backend> make_cpu_backend(
    const ls_gpt2_config& c, const float* weights, size_t words,
    const std::string& isa, int threads, int max_prefix,
    ls_gpt2_layout weights_layout = LS_GPT2_LAYOUT_PLAIN);

// Bytes the CPU backend allocates for a config (its extra_memory_bytes()),
// computable before creating one.
size_t cpu_backend_memory_bytes(
    const ls_gpt2_config& c, const std::string& isa, int threads,
    int max_prefix, ls_gpt2_layout weights_layout = LS_GPT2_LAYOUT_PLAIN);

// The same backend on grouped int8 weights (core/ls_gpt2_q8.h, checked by
// the caller: config, byte count), read in place. isa as above; the int8
// kernels are the best this CPU has for it (cpu/q8_kernels.h).
std::unique_ptr<Gpt2Backend> make_cpu_q8_backend(const ls_gpt2_config& c,
                                                 const uint8_t* weights,
                                                 size_t bytes,
                                                 const std::string& isa,
                                                 int threads, int max_prefix);

}  // namespace lockstep::backends

#endif  // LOCKSTEP_BACKENDS_CPU_CPU_BACKEND_H_
