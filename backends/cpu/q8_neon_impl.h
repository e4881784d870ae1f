// The NEON int8 panel product, shared by the two NEON tables
// (q8_kernels_neon.cc: plain Advanced SIMD; q8_kernels_neon_sdot.cc: the
// dotprod extension), which differ only in how they form the exact int32
// group sums: the Sums policy, add(acc, w, x) = lane l of acc plus the
// four products of word l of w (output l, four consecutive inputs, the
// §7.6 word) with the four levels of x (the position's quad, repeated in
// every word), and kDecodeNV and kBatchNV, the vectors of sums a tile of
// one position and of kTile positions holds per position.
// Included only by those two files, each compiled with its
// own flags; internal linkage, as vec_neon.h, so nothing compiled for the
// dotprod extension is shared with the plain table.
//
// The float part (§7.3 steps 2-4) is one lane per output with separate
// vmulq_f32 / vaddq_f32 (never vfmaq_f32 or vmlaq_f32; backends_no_fma
// greps the object code), groups in order from +0.0, bias last.
#ifndef LOCKSTEP_BACKENDS_CPU_Q8_NEON_IMPL_H_
#define LOCKSTEP_BACKENDS_CPU_Q8_NEON_IMPL_H_

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

constexpr int kGroup = LS_Q8_GROUP, kPanel = LS_Q8_PANEL;
constexpr size_t kBlock = (kGroup + 2) * kPanel;  // 4,224 bytes
// Positions per register tile in a batch: with sdot 4 x 4 sums + 4 weights
// + 4 broadcast levels of the 32 vector registers; the plain sums' two
// temporaries per vector leave room for 4 x 2.
constexpr int kTile = 4;

// §7.3 for one group block, NP positions and NV x 4 columns from c0 of a
// whole 64-column panel: the integer sums in registers, then steps 2-3
// per lane into y (acc = +0.0 + t[0] at the first group, acc + t[g]
// after): the reference's operations in its order. q, s: the group's
// levels and scale of the tile's first position.
template <class Sums, int NP, int NV>
void group_tile(const uint8_t* blk, int c0, const int8_t* q, size_t qs,
                const float* s, size_t ss, bool first, float* y, size_t ys) {
  int32x4_t isum[NP][NV];
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < NV; ++j) isum[t][j] = vdupq_n_s32(0);
  }
  for (int i = 0; i < kGroup / 4; ++i) {
    int8x16_t w[NV];
    for (int j = 0; j < NV; ++j) {
      w[j] = vld1q_s8(
          reinterpret_cast<const int8_t*>(blk + (i * kPanel + c0 + 4 * j) * 4));
    }
    for (int t = 0; t < NP; ++t) {
      int32_t quad;
      std::memcpy(&quad, q + size_t(t) * qs + 4 * i, 4);
      const int8x16_t x = vreinterpretq_s8_s32(vdupq_n_s32(quad));
      for (int j = 0; j < NV; ++j) isum[t][j] = Sums::add(isum[t][j], w[j], x);
    }
  }
  for (int j = 0; j < NV; ++j) {
    // The 4 bfloat16 scales, widened: bits << 16.
    uint16_t h[4];
    std::memcpy(h, blk + kGroup * kPanel + 2 * (c0 + 4 * j), 8);
    const float32x4_t sw = vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(h), 16));
    for (int t = 0; t < NP; ++t) {
      float* yt = y + size_t(t) * ys + c0 + 4 * j;
      const float32x4_t scale = vmulq_f32(vdupq_n_f32(s[size_t(t) * ss]), sw);
      const float32x4_t f = vcvtq_f32_s32(isum[t][j]);  // exact: < 2^24
      const float32x4_t acc = first ? vdupq_n_f32(0.0f) : vld1q_f32(yt);
      vst1q_f32(yt, vaddq_f32(acc, vmulq_f32(f, scale)));
    }
  }
}

// A whole panel, group by group: one position (decode) takes
// Sums::kDecodeNV vectors of sums at a time (sdot: the panel's 16, reading
// each group block's 4 KB once, in order; plain: 8, as its two
// temporaries per vector would spill 16), a batch tiles of kTile positions
// x Sums::kBatchNV vectors, while the block stays in L1. Bias last (step
// 4).
template <class Sums>
void panel_full(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                const uint8_t* p, int K, const float* bias, float* y,
                size_t ys) {
  for (int g = 0; g < K / kGroup; ++g) {
    const uint8_t* blk = p + size_t(g) * kBlock;
    const int8_t* qg = q + size_t(g) * kGroup;
    const float* sg = s + size_t(g);
    const bool first = g == 0;
    int t = 0;
    for (; t + kTile <= n; t += kTile) {
      for (int c0 = 0; c0 < kPanel; c0 += 4 * Sums::kBatchNV) {
        group_tile<Sums, kTile, Sums::kBatchNV>(blk, c0, qg + size_t(t) * qs,
                                                qs, sg + size_t(t) * ss, ss,
                                                first, y + size_t(t) * ys, ys);
      }
    }
    for (; t < n; ++t) {
      for (int c0 = 0; c0 < kPanel; c0 += 4 * Sums::kDecodeNV) {
        group_tile<Sums, 1, Sums::kDecodeNV>(blk, c0, qg + size_t(t) * qs, qs,
                                             sg + size_t(t) * ss, ss, first,
                                             y + size_t(t) * ys, ys);
      }
    }
  }
  if (!bias) return;
  for (int t = 0; t < n; ++t) {
    float* yt = y + size_t(t) * ys;
    for (int j = 0; j < kPanel; j += 4) {
      vst1q_f32(yt + j, vaddq_f32(vld1q_f32(yt + j), vld1q_f32(bias + j)));
    }
  }
}

}  // namespace
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_Q8_NEON_IMPL_H_
