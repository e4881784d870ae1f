// make_gpt2_backend: the one place a GPT-2 backend is chosen.
#include "backends/backend.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#ifdef LOCKSTEP_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif
#include "backends/reference_backend.h"
#include "lockstep/error.h"
#include "ls_gpt2_q8.h"

namespace lockstep {
namespace {

// The ISA a "cpu" or "cpu-<isa>" name asks for; throws for any other name.
std::string cpu_isa_of(const std::string& name) {
  std::string isa;
  if (name == "cpu") {
    isa = cpu::default_isa();
  } else if (name.rfind("cpu-", 0) == 0) {
    isa = name.substr(4);
  } else {
    throw Error(
        "GPT-2 backend: unknown backend '" + name +
        "' (reference, cpu, cpu-avx512, cpu-avx2, cpu-neon, cpu-generic, "
        "cuda)");
  }
  if (isa != "avx512" && isa != "avx2" && isa != "neon" && isa != "generic") {
    throw Error("GPT-2 backend: unknown ISA '" + isa +
                "' (avx512, avx2, neon, generic)");
  }
  return isa;
}

}  // namespace

std::unique_ptr<Gpt2Backend> make_gpt2_backend(
    const std::string& name, const ls_gpt2_config& c, const float* weights,
    size_t words, int threads, int max_prefix, ls_gpt2_layout layout) {
  if (!ls_gpt2_config_valid(&c)) {
    throw Error("GPT-2 backend: invalid config");
  }
  if (!weights || words != ls_gpt2_param_count(&c)) {
    throw Error("GPT-2 backend: " + std::to_string(words) +
                " weights, the config needs " +
                std::to_string(ls_gpt2_param_count(&c)));
  }
  if (layout != LS_GPT2_LAYOUT_PLAIN && layout != LS_GPT2_LAYOUT_PANEL64) {
    throw Error("GPT-2 backend: unknown weight layout " +
                std::to_string(int(layout)));
  }
  if (name == "reference") {
    if (threads != 1) {
      throw Error("GPT-2 backend: the reference runs on 1 thread, not " +
                  std::to_string(threads));
    }
    return backends::make_reference_backend(c, weights, words, max_prefix,
                                            layout);
  }
  if (name == "cuda") {
    // The GPU ignores `threads` (a session passes its CPU count).
#ifdef LOCKSTEP_HAVE_CUDA
    return backends::make_cuda_backend(c, weights, words, max_prefix, layout);
#else
    throw Error(
        "GPT-2 backend: this build has no CUDA backend (configure with "
        "-DLOCKSTEP_CUDA=ON where nvcc is found; docs/cuda.md)");
#endif
  }
  const std::string isa = cpu_isa_of(name);
  return backends::make_cpu_backend(c, weights, words, isa, threads, max_prefix,
                                    layout);
}

std::unique_ptr<Gpt2Backend> make_gpt2_q8_backend(const std::string& name,
                                                  const ls_gpt2_config& c,
                                                  const uint8_t* weights,
                                                  size_t bytes, int threads,
                                                  int max_prefix) {
  if (!ls_gpt2_q8_config_valid(&c)) {
    throw Error("GPT-2 int8 backend: invalid config");
  }
  if (!weights || bytes != ls_gpt2_q8_bytes(&c)) {
    throw Error("GPT-2 int8 backend: " + std::to_string(bytes) +
                " bytes of weights, the config needs " +
                std::to_string(ls_gpt2_q8_bytes(&c)));
  }
  if (name == "reference") {
    if (threads != 1) {
      throw Error("GPT-2 backend: the reference runs on 1 thread, not " +
                  std::to_string(threads));
    }
    return backends::make_reference_q8_backend(c, weights, bytes, max_prefix);
  }
  if (name == "cuda") {  // the GPU ignores `threads`
#ifdef LOCKSTEP_HAVE_CUDA
    return backends::make_cuda_q8_backend(c, weights, bytes, max_prefix);
#else
    throw Error(
        "GPT-2 backend: this build has no CUDA backend (configure with "
        "-DLOCKSTEP_CUDA=ON where nvcc is found; docs/cuda.md)");
#endif
  }
  return backends::make_cpu_q8_backend(c, weights, bytes, cpu_isa_of(name),
                                       threads, max_prefix);
}

namespace backends {

std::vector<std::string> available_gpt2_backends() {
  std::vector<std::string> out{"reference"};
  for (const auto& isa : cpu::supported_isas()) out.push_back("cpu-" + isa);
#ifdef LOCKSTEP_HAVE_CUDA
  if (cuda_device_available()) out.push_back("cuda");
#endif
  return out;
}

}  // namespace backends
}  // namespace lockstep
