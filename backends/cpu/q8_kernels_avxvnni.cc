// The AVX-VNNI int8 table: the VEX-encoded (ymm) vpdpbusd of Alder Lake,
// Sapphire Rapids, Zen 5 and later, for the avx2 ISA. Compiled with
// -mavx2 -mavxvnni only (backends/CMakeLists.txt: no FMA can be emitted);
// q8_kernels_for returns it only when CPUID reports AVX-VNNI.
//
// The group sums with vpdpbusd (unsigned x signed bytes, four products
// added into each int32 lane), exact (|isum| <= 64 * 255 * 127 < 2^31):
//  - one position (decode): vpsignb moves the sign of each activation
//    level onto its weight (a zero level zeroes it) and vpdpbusd
//    multiplies by |qx|: two operations per weight register, where the
//    AVX2 table needs four (vpsignb, vpmaddubsw, vpmaddwd, vpaddd);
//  - a batch (prefill): qx + 128 (= qx ^ 0x80) by the weights, minus
//    128 * sum(qw), the correction formed once per group block and shared
//    by every position, group-major as the AVX-512 VNNI table.
// The quantization is the AVX2 table's function. The float part (§7.3
// steps 2-4) is 8 outputs a vector, the reference's operations in its
// order: acc = +0.0 + t[0], acc + t[g] after, bias last.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/q8_kernels.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

constexpr int kGroup = LS_Q8_GROUP, kPanel = LS_Q8_PANEL;
constexpr size_t kBlock = (kGroup + 2) * kPanel;  // 4,224 bytes
// Decode's software prefetch distance (q8_kernels_avx512.cc says why).
constexpr int kAheadBlocks = 3;
constexpr size_t kAhead = kAheadBlocks * kBlock;

__m256 widen_scales(const uint8_t* blk, int c0) {
  const __m128i h = _mm_loadu_si128(
      reinterpret_cast<const __m128i*>(blk + kGroup * kPanel + 2 * c0));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// One position against one whole panel: the 8 vectors of group sums in
// registers, then §7.3 steps 2-3 per lane, step 4 at the end.
void panel_one(const int8_t* q, const float* s, const uint8_t* p, int K,
               const float* bias, float* y) {
  const int G = K / kGroup;
  __m256 acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
  for (size_t b = 0; b < size_t(std::min(G, kAheadBlocks)) * kBlock; b += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + b), _MM_HINT_T0);
  }
  for (int g = 0; g < G; ++g) {
    const uint8_t* blk = p + size_t(g) * kBlock;
    __m256i isum[8];
    for (int j = 0; j < 8; ++j) isum[j] = _mm256_setzero_si256();
    for (int i = 0; i < kGroup / 4; ++i) {
      if (g + kAheadBlocks < G) {
        for (int j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(blk + kAhead +
                                                     (i * kPanel + 16 * j) * 4),
                       _MM_HINT_T0);
        }
      }
      int32_t quad;
      std::memcpy(&quad, q + g * kGroup + 4 * i, 4);
      const __m256i xs = _mm256_set1_epi32(quad);
      const __m256i xa = _mm256_abs_epi8(xs);
      for (int j = 0; j < 8; ++j) {
        const __m256i w = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(blk + (i * kPanel + 8 * j) * 4));
        isum[j] = _mm256_dpbusd_avx_epi32(isum[j], xa, _mm256_sign_epi8(w, xs));
      }
    }
    const __m256 sx = _mm256_set1_ps(s[g]);
    for (int j = 0; j < 8; ++j) {
      const __m256 scale = _mm256_mul_ps(sx, widen_scales(blk, 8 * j));
      const __m256 f = _mm256_cvtepi32_ps(isum[j]);
      acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(f, scale));
    }
  }
  for (int j = 0; j < 8; ++j) {
    __m256 r = acc[j];
    if (bias) r = _mm256_add_ps(r, _mm256_loadu_ps(bias + 8 * j));
    _mm256_storeu_ps(y + 8 * j, r);
  }
}

// One group block, NP positions x NV vectors of 8 columns from c0: the
// integer sums in registers (NP * NV + NP + 1 of the 16), then steps 2-3
// per lane into y. corr: 128 * sum(qw) per column, sw: the widened
// scales, both for the whole panel.
template <int NP, int NV>
void group_tile(const uint8_t* blk, int c0, const int32_t* corr,
                const float* sw, const int8_t* q, size_t qs, const float* s,
                size_t ss, bool first, float* y, size_t ys) {
  const __m256i c80 = _mm256_set1_epi8(char(0x80));
  __m256i isum[NP][NV];
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < NV; ++j) isum[t][j] = _mm256_setzero_si256();
  }
  for (int i = 0; i < kGroup / 4; ++i) {
    __m256i xb[NP];
    for (int t = 0; t < NP; ++t) {
      int32_t quad;
      std::memcpy(&quad, q + size_t(t) * qs + 4 * i, 4);
      xb[t] = _mm256_xor_si256(_mm256_set1_epi32(quad), c80);
    }
    for (int j = 0; j < NV; ++j) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
          blk + (i * kPanel + c0 + 8 * j) * 4));
      for (int t = 0; t < NP; ++t) {
        isum[t][j] = _mm256_dpbusd_avx_epi32(isum[t][j], xb[t], w);
      }
    }
  }
  for (int t = 0; t < NP; ++t) {
    const __m256 sx = _mm256_set1_ps(s[size_t(t) * ss]);
    float* yt = y + size_t(t) * ys + c0;
    for (int j = 0; j < NV; ++j) {
      const __m256 scale = _mm256_mul_ps(sx, _mm256_loadu_ps(sw + c0 + 8 * j));
      const __m256i c = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(corr + c0 + 8 * j));
      const __m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[t][j], c));
      const __m256 acc =
          first ? _mm256_setzero_ps() : _mm256_loadu_ps(yt + 8 * j);
      _mm256_storeu_ps(yt + 8 * j, _mm256_add_ps(acc, _mm256_mul_ps(f, scale)));
    }
  }
}

// Batches: group by group over the whole panel (the group's 4 KB block
// stays in L1 while every tile reads it); tiles of 4 positions x 16
// columns, then 2 x 32 and 1 x 64 for the rest.
void panel_batch(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                 const uint8_t* p, int K, const float* bias, float* y,
                 size_t ys) {
  const __m256i c80 = _mm256_set1_epi8(char(0x80));
  alignas(32) int32_t corr[kPanel];
  alignas(32) float sw[kPanel];
  for (int g = 0; g < K / kGroup; ++g) {
    const uint8_t* blk = p + size_t(g) * kBlock;
    for (int j = 0; j < kPanel / 8; ++j) {
      __m256i c = _mm256_setzero_si256();
      for (int i = 0; i < kGroup / 4; ++i) {
        c = _mm256_dpbusd_avx_epi32(
            c, c80,
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                blk + (i * kPanel + 8 * j) * 4)));
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(corr + 8 * j), c);
      _mm256_store_ps(sw + 8 * j, widen_scales(blk, 8 * j));
    }
    const int8_t* qg = q + size_t(g) * kGroup;
    const float* sg = s + size_t(g);
    const bool first = g == 0;
    int t = 0;
    for (; t + 4 <= n; t += 4) {
      for (int c0 = 0; c0 < kPanel; c0 += 16) {
        group_tile<4, 2>(blk, c0, corr, sw, qg + size_t(t) * qs, qs,
                         sg + size_t(t) * ss, ss, first, y + size_t(t) * ys,
                         ys);
      }
    }
    if (t + 2 <= n) {
      for (int c0 = 0; c0 < kPanel; c0 += 32) {
        group_tile<2, 4>(blk, c0, corr, sw, qg + size_t(t) * qs, qs,
                         sg + size_t(t) * ss, ss, first, y + size_t(t) * ys,
                         ys);
      }
      t += 2;
    }
    if (t < n) {
      group_tile<1, 8>(blk, 0, corr, sw, qg + size_t(t) * qs, qs,
                       sg + size_t(t) * ss, ss, first, y + size_t(t) * ys, ys);
    }
  }
  if (!bias) return;
  for (int t = 0; t < n; ++t) {
    float* yt = y + size_t(t) * ys;
    for (int j = 0; j < kPanel / 8; ++j) {
      _mm256_storeu_ps(yt + 8 * j,
                       _mm256_add_ps(_mm256_loadu_ps(yt + 8 * j),
                                     _mm256_loadu_ps(bias + 8 * j)));
    }
  }
}

void panel_avxvnni(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                   const uint8_t* p, int K, int pw, const float* bias, float* y,
                   size_t ys) {
  if (pw != kPanel) {
    q8_kernels_generic().panel(q, qs, s, ss, n, p, K, pw, bias, y, ys);
    return;
  }
  if (n == 1) {
    panel_one(q, s, p, K, bias, y);
  } else {
    panel_batch(q, qs, s, ss, n, p, K, bias, y, ys);
  }
}

}  // namespace

const CpuQ8Kernels& q8_kernels_avx_vnni() {
  static const CpuQ8Kernels table = {"avx-vnni", q8_kernels_avx2().quantize,
                                     panel_avxvnni};
  return table;
}

}  // namespace lockstep::cpu
