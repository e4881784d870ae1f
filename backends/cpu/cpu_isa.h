// Which kernel table to use: runtime detection of the CPU's instruction
// sets, and the LOCKSTEP_ISA override (avx512 | avx2 | neon | generic).
#ifndef LOCKSTEP_BACKENDS_CPU_CPU_ISA_H_
#define LOCKSTEP_BACKENDS_CPU_CPU_ISA_H_

#include <string>
#include <vector>

#include "backends/cpu/kernels.h"

namespace lockstep::cpu {

// "avx512" (F, BW, VL, DQ), "avx2" (x86-64), "neon" (AArch64 Advanced
// SIMD), "generic" (everywhere): whether this CPU and OS can run it.
// Unknown names are unsupported.
bool isa_supported(const std::string& isa);
// Every supported ISA, best first.
std::vector<std::string> supported_isas();
// $LOCKSTEP_ISA when set and non-empty, else the best supported ISA.
std::string default_isa();
// The table of a supported ISA; nullptr for an unknown or unsupported one.
const CpuKernels* kernels_for(const std::string& isa);

}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_CPU_ISA_H_
