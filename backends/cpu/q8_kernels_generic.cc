// The portable int8 table: the core's own loops (core/ls_q8.c), which are
// the reference every other table is compared with. Also the fallback of
// the SIMD tables for a panel narrower than 64 columns (only a matrix's
// last panel, e.g. the head's 17 columns past 50,240).
#include "backends/cpu/q8_kernels.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

bool quantize_generic(const float* x, int K, int8_t* q, float* s) {
  return ls_q8_quantize(x, K, q, s) == LS_OK;
}

// A panel of pw columns is, by itself, the §7.6 layout of a pw-column
// matrix: ls_q8_matvec reads it as one.
void panel_generic(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                   const uint8_t* p, int K, int pw, const float* bias, float* y,
                   size_t ys) {
  for (int t = 0; t < n; ++t) {
    ls_q8_matvec(q + size_t(t) * qs, s + size_t(t) * ss, p, K, pw, bias,
                 y + size_t(t) * ys);
  }
}

constexpr CpuQ8Kernels kTable = {"generic", quantize_generic, panel_generic};

}  // namespace

const CpuQ8Kernels& q8_kernels_generic() { return kTable; }

}  // namespace lockstep::cpu
