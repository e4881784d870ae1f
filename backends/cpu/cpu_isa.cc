#include "backends/cpu/cpu_isa.h"

#include <cstdlib>

#include "backends/cpu/q8_kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
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

#if defined(__x86_64__)
bool q8_amx_usable() {
  static const bool usable = [] {
    // CPUID.(EAX=7,ECX=0):EDX bit 24 AMX-TILE, bit 25 AMX-INT8.
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!isa_supported("avx512") || !__get_cpuid_count(7, 0, &a, &b, &c, &d) ||
        (d & (3u << 24)) != (3u << 24)) {
      return false;
    }
#if defined(__linux__)
    // Linux hands out the 8 KB tile data state only on request, once per
    // process (every thread, later ones too); a tile instruction before it
    // is a SIGILL. ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18.
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return false;  // no way to ask here: the VNNI table
#endif
  }();
  return usable;
}

namespace {
bool has_avx_vnni() {
  return isa_supported("avx2") && __builtin_cpu_supports("avxvnni");
}
}  // namespace
#endif

const CpuQ8Kernels* q8_kernels_named(const std::string& name) {
  for (const CpuQ8Kernels* k : q8_kernels_runnable()) {
    if (name == k->isa) return k;
  }
  return nullptr;
}

std::vector<const CpuQ8Kernels*> q8_kernels_runnable() {
  std::vector<const CpuQ8Kernels*> out{&q8_kernels_generic()};
#if defined(__x86_64__)
  if (isa_supported("avx2")) out.push_back(&q8_kernels_avx2());
  if (has_avx_vnni()) out.push_back(&q8_kernels_avx_vnni());
  if (isa_supported("avx512") && __builtin_cpu_supports("avx512vnni")) {
    out.push_back(&q8_kernels_avx512_vnni());
    if (q8_amx_usable()) out.push_back(&q8_kernels_amx());
  }
#endif
#if defined(__aarch64__)
  if (isa_supported("neon")) {
    out.push_back(&q8_kernels_neon());
    if (q8_kernels_neon_has_sdot()) out.push_back(&q8_kernels_neon_sdot());
  }
#endif
  return out;
}

const CpuQ8Kernels* q8_kernels_for(const std::string& isa) {
  if (!isa_supported(isa)) return nullptr;
  if (const char* e = std::getenv("LOCKSTEP_Q8_KERNELS"); e && *e) {
    return q8_kernels_named(e);
  }
#if defined(__x86_64__)
  if (isa == "avx512") {
    if (__builtin_cpu_supports("avx512vnni")) {
      return q8_amx_usable() ? &q8_kernels_amx() : &q8_kernels_avx512_vnni();
    }
    return has_avx_vnni() ? &q8_kernels_avx_vnni() : &q8_kernels_avx2();
  }
  if (isa == "avx2") {
    return has_avx_vnni() ? &q8_kernels_avx_vnni() : &q8_kernels_avx2();
  }
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
  return false;    // no portable check elsewhere: the plain table
#endif
}
#endif

}  // namespace lockstep::cpu
