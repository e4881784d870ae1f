#include "backends/cpu/cpu_isa.h"

#include <cstdlib>

#include "backends/cpu/q8_kernels.h"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace lockstep::cpu {

bool isa_supported(const std::string& isa) {
#if defined(__x86_64__) || defined(__i386__)
  // GCC's checks include the OS's XSAVE state (XGETBV) for AVX and AVX-512.
  if (isa == "avx512") {
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
  }
  if (isa == "avx2") return __builtin_cpu_supports("avx2");
#endif
#if defined(__aarch64__)
  if (isa == "neon") {
    // Advanced SIMD is part of every ARMv8-A core; the kernel reports it.
#if defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#else
    return true;
#endif
  }
#endif
  return isa == "generic";
}

std::vector<std::string> supported_isas() {
  std::vector<std::string> out;
  for (const char* isa : {"avx512", "avx2", "neon", "generic"}) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

std::string default_isa() {
  const char* env = std::getenv("LOCKSTEP_ISA");
  if (env && *env) return env;
  return supported_isas().front();
}

const CpuKernels* kernels_for(const std::string& isa) {
  if (!isa_supported(isa)) return nullptr;
#if defined(__x86_64__) || defined(__i386__)
  if (isa == "avx512") return &kernels_avx512();
  if (isa == "avx2") return &kernels_avx2();
#endif
#if defined(__aarch64__)
  if (isa == "neon") return &kernels_neon();
#endif
  return &kernels_generic();
}

const CpuQ8Kernels* q8_kernels_for(const std::string& isa) {
  if (!isa_supported(isa)) return nullptr;
#if defined(__x86_64__) || defined(__i386__)
  if (isa == "avx512") {
    return __builtin_cpu_supports("avx512vnni") ? &q8_kernels_avx512_vnni()
                                                : &q8_kernels_avx2();
  }
  if (isa == "avx2") return &q8_kernels_avx2();
#endif
#if defined(__aarch64__)
  if (isa == "neon") {
    return q8_kernels_neon_has_sdot() ? &q8_kernels_neon_sdot()
                                      : &q8_kernels_neon();
  }
#endif
  return &q8_kernels_generic();
}

#if defined(__aarch64__)
bool q8_kernels_neon_has_sdot() {
#if defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;  // no portable check elsewhere: the plain table
#endif
}
#endif

}  // namespace lockstep::cpu
