// The "reference" backend: core/ls_gpt2.c's ls_gpt2_step / ls_gpt2_infer
// with scratch owned by the backend. PANEL64 weights are copied back to
// the plain layout at creation (the reference reads plain matrices).
#ifndef LOCKSTEP_BACKENDS_REFERENCE_BACKEND_H_
#define LOCKSTEP_BACKENDS_REFERENCE_BACKEND_H_

#include <memory>

#include "backends/backend.h"

namespace lockstep::backends {

std::unique_ptr<Gpt2Backend> make_reference_backend(const ls_gpt2_config& c,
                                                    const float* weights,
                                                    size_t words,
                                                    int max_prefix,
                                                    ls_gpt2_layout layout);

// core/ls_gpt2_q8.c behind the interface (one thread); the caller
// (make_gpt2_q8_backend) has checked the config and the byte count.
std::unique_ptr<Gpt2Backend> make_reference_q8_backend(const ls_gpt2_config& c,
                                                       const uint8_t* weights,
                                                       size_t bytes,
                                                       int max_prefix);

}  // namespace lockstep::backends

#endif  // LOCKSTEP_BACKENDS_REFERENCE_BACKEND_H_
