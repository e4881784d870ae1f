// The NEON int8 table with the dotprod extension (ARMv8.2 sdot; Cortex-A55
// and A75 on, Neoverse N1 on, Apple M1 on). Compiled for AArch64 targets
// only, with -march=armv8.2-a+dotprod (backends/CMakeLists.txt: the
// extension exists from ARMv8.2 on, and GCC's arm_neon.h wants both):
// nothing else is compiled with it, and q8_kernels_for only returns this
// table when the kernel reports HWCAP_ASIMDDP, so on an ARMv8.2 core or
// later (else the plain table, q8_kernels_neon.cc).
//
// The group sums with vdotq_s32 (sdot): four int8 products added into
// each int32 lane, the §7.6 word's operand order (one word = four
// consecutive inputs of one output). Exact (|isum| <= 64 * 127 * 127 <
// 2^24), so the plain table's integers and the reference's. The
// quantization is the plain table's function.
#include <arm_neon.h>

#include "backends/cpu/q8_kernels.h"
#include "backends/cpu/q8_neon_impl.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

struct SumsSdot {
  static constexpr int kDecodeNV = 16, kBatchNV = 4;
  static int32x4_t add(int32x4_t acc, int8x16_t w, int8x16_t x) {
    return vdotq_s32(acc, w, x);
  }
};

void panel_neon_sdot(const int8_t* q, size_t qs, const float* s, size_t ss,
                     int n, const uint8_t* p, int K, int pw, const float* bias,
                     float* y, size_t ys) {
  if (pw != kPanel) {
    q8_kernels_generic().panel(q, qs, s, ss, n, p, K, pw, bias, y, ys);
    return;
  }
  panel_full<SumsSdot>(q, qs, s, ss, n, p, K, bias, y, ys);
}

}  // namespace

const CpuQ8Kernels& q8_kernels_neon_sdot() {
  static const CpuQ8Kernels table = {"neon-sdot", q8_kernels_neon().quantize,
                                     panel_neon_sdot};
  return table;
}

}  // namespace lockstep::cpu
