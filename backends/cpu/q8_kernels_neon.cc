// The NEON int8 table (AArch64 Advanced SIMD, every ARMv8-A core).
// Compiled for AArch64 targets only (backends/CMakeLists.txt), with no
// extra flags. q8_kernels_for takes it for "neon" when the kernel does not
// report the dotprod extension (HWCAP_ASIMDDP; else
// q8_kernels_neon_sdot.cc's table, which shares this file's quantization).
//
// The group sums: vmull_s8 multiplies 8 level pairs into int16 (each
// |product| <= 127 * 127 = 16,129), vpaddq_s16 adds adjacent products
// (<= 32,258 < 32,767: exact, the levels are never -128, §7.2) and
// vpadalq_s16 adds those pairs into the int32 lanes, one lane per output:
// exact (|isum| <= 64 * 127 * 127 < 2^24), so the reference's integers.
// The quantization (§7.2) is the reference's per lane: vdivq_f32
// (correctly rounded), the clamp by max/min, and fcvtns (round to nearest,
// ties to even: the reference's integer).
#include <arm_neon.h>

#include <cstring>

#include "backends/cpu/q8_kernels.h"
#include "backends/cpu/q8_neon_impl.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

bool quantize_neon(const float* x, int K, int8_t* q, float* s) {
  const float32x4_t zero = vdupq_n_f32(0.0f);
  const float32x4_t hi = vdupq_n_f32(float(LS_Q8_MAX));
  const float32x4_t lo = vdupq_n_f32(-float(LS_Q8_MAX));
  // Every value finite first (§7.2 step 1: nothing of a position with a
  // NaN or an infinity is divided or converted): v - v == 0.
  for (int k = 0; k < K; k += 4) {
    const float32x4_t v = vld1q_f32(x + k);
    if (vminvq_u32(vceqq_f32(vsubq_f32(v, v), zero)) != 0xFFFFFFFFu) {
      return false;
    }
  }
  for (int g = 0; g < K / kGroup; ++g) {
    float32x4_t v[16];
    float32x4_t m = zero;
    for (int i = 0; i < 16; ++i) {
      v[i] = vld1q_f32(x + g * kGroup + 4 * i);
      m = vmaxq_f32(m, vabsq_f32(v[i]));
    }
    // The largest magnitude (exact in any order: finite values, no -0.0
    // after the absolute value), then one division.
    const float sg = vmaxvq_f32(m) / float(LS_Q8_MAX);
    s[g] = sg;
    int8_t* out = q + g * kGroup;
    if (sg == 0.0f) {
      std::memset(out, 0, kGroup);
      continue;
    }
    const float32x4_t sv = vdupq_n_f32(sg);
    for (int i = 0; i < 16; i += 4) {
      int16x4_t h[4];
      for (int j = 0; j < 4; ++j) {
        float32x4_t r = vdivq_f32(v[i + j], sv);
        r = vminq_f32(vmaxq_f32(r, lo), hi);
        h[j] = vmovn_s32(vcvtnq_s32_f32(r));  // in [-127, 127]: exact
      }
      const int8x8_t b0 = vmovn_s16(vcombine_s16(h[0], h[1]));
      const int8x8_t b1 = vmovn_s16(vcombine_s16(h[2], h[3]));
      vst1q_s8(out + 4 * i, vcombine_s8(b0, b1));
    }
  }
  return true;
}

struct SumsPlain {
  static constexpr int kDecodeNV = 8, kBatchNV = 2;
  static int32x4_t add(int32x4_t acc, int8x16_t w, int8x16_t x) {
    const int16x8_t p01 = vmull_s8(vget_low_s8(w), vget_low_s8(x));
    const int16x8_t p23 = vmull_high_s8(w, x);
    // Output 0: k 0+1, k 2+3; output 1: ...; output 3: k 0+1, k 2+3.
    return vpadalq_s16(acc, vpaddq_s16(p01, p23));
  }
};

void panel_neon(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                const uint8_t* p, int K, int pw, const float* bias, float* y,
                size_t ys) {
  if (pw != kPanel) {
    q8_kernels_generic().panel(q, qs, s, ss, n, p, K, pw, bias, y, ys);
    return;
  }
  panel_full<SumsPlain>(q, qs, s, ss, n, p, K, bias, y, ys);
}

constexpr CpuQ8Kernels kTable = {"neon", quantize_neon, panel_neon};

}  // namespace

const CpuQ8Kernels& q8_kernels_neon() { return kTable; }

}  // namespace lockstep::cpu
