// The CPU backend's int8 kernels (docs/arithmetic.md §7), one table per
// instruction set, each in its own translation unit with that ISA's flags
// (q8_kernels_amx.cc: AMX-INT8 batches; q8_kernels_avx512.cc: AVX-512
// VNNI; q8_kernels_avxvnni.cc: AVX-VNNI; q8_kernels_avx2.cc;
// q8_kernels_neon.cc: AArch64 Advanced SIMD, and q8_kernels_neon_sdot.cc
// with the dotprod extension; q8_kernels_generic.cc, the core's loops).
// The backend picks one table at creation (q8_kernels_for), or the one
// $LOCKSTEP_Q8_KERNELS names (tests and benchmarks).
//
// Why every table gives the reference's bits: the integer group sums are
// exact (|isum| <= 64 * 127 * 127 < 2^24), so each ISA may form them with
// its own dot-product instruction in any order; the float part (§7.3 steps
// 2-4) is vectorized across outputs, one lane per output, with the
// reference's operations in its order; the quantization (§7.2) is the
// reference's per-lane operations (a correctly rounded division, the
// clamp, a conversion whose default rounding is ties-to-even).
#ifndef LOCKSTEP_BACKENDS_CPU_Q8_KERNELS_H_
#define LOCKSTEP_BACKENDS_CPU_Q8_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::cpu {

struct CpuQ8Kernels {
  // "amx", "avx512-vnni", "avx-vnni", "avx2", "neon-sdot", "neon",
  // "generic"
  const char* isa;
  // §7.2 for one position's input x[0..K) (K a multiple of 64): levels
  // q[0..K), scales s[0..K/64). false (q, s undefined) when some x[k] is
  // NaN or infinite.
  bool (*quantize)(const float* x, int K, int8_t* q, float* s);
  // §7.3 for n positions against one §7.6 panel of a K-deep matrix (p: the
  // panel's first byte; pw <= 64 columns): position t's levels at q + t*qs,
  // its scales at s + t*ss; y[t*ys + j] = the group sum from +0.0, + bias[j]
  // when bias is not null, for j < pw.
  void (*panel)(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                const uint8_t* p, int K, int pw, const float* bias, float* y,
                size_t ys);
};

// The table for a binary32 kernel ISA ("avx512", "avx2", "neon",
// "generic"): the best int8 kernels that ISA's machines have (avx512 with
// AMX-INT8 usable takes the AMX table, else with VNNI the VNNI table,
// else the AVX-VNNI or AVX2 one; avx2 with AVX-VNNI the AVX-VNNI table,
// without it the AVX2 one; neon with the dotprod extension the sdot table,
// without it the plain NEON one). When $LOCKSTEP_ISA's int8 counterpart,
// $LOCKSTEP_Q8_KERNELS, is set and non-empty, the table it names instead
// (q8_kernels_named), whatever the ISA. Null when the CPU cannot run it.
const CpuQ8Kernels* q8_kernels_for(const std::string& isa);

// The table named `name` (its `isa` string) when this CPU can run it,
// else null.
const CpuQ8Kernels* q8_kernels_named(const std::string& name);

// Every table this CPU can run, generic first.
std::vector<const CpuQ8Kernels*> q8_kernels_runnable();

#if defined(__x86_64__)
// CPUID has amx-tile and amx-int8, the avx512 ISA runs, and Linux granted
// this process the tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA), asked once). Only then may q8_kernels_amx run.
bool q8_amx_usable();
// Only where q8_amx_usable().
const CpuQ8Kernels& q8_kernels_amx();
// Only on a CPU with AVX-VNNI (CPUID.(7,1):EAX bit 4).
const CpuQ8Kernels& q8_kernels_avx_vnni();
#endif

const CpuQ8Kernels& q8_kernels_avx512_vnni();
const CpuQ8Kernels& q8_kernels_avx2();
const CpuQ8Kernels& q8_kernels_generic();
#if defined(__aarch64__)
const CpuQ8Kernels& q8_kernels_neon();
// Only on a CPU with the dotprod extension (q8_kernels_neon_has_sdot).
const CpuQ8Kernels& q8_kernels_neon_sdot();
// Whether the kernel reports the dotprod extension (HWCAP_ASIMDDP).
bool q8_kernels_neon_has_sdot();
#endif

}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_Q8_KERNELS_H_
