// The AVX2 int8 table (also the one of AVX-512 machines without VNNI and
// AVX-VNNI, and of AVX2 machines without AVX-VNNI; the avx2 ISA takes the
// AVX-VNNI table where CPUID has it: q8_kernels_avxvnni.cc).
// Compiled with -mavx2 only (backends/CMakeLists.txt): no FMA can be
// emitted.
//
// The group sums with vpmaddubsw (unsigned x signed bytes, adjacent pairs
// added into a saturating int16): vpsignb moves the sign of each
// activation level onto its weight and vpabsb takes the level's magnitude,
// so each pair is |qx| * (sign(qx) * qw) summed twice, at most
// 2 * 127 * 127 = 32,258 < 32,767: never saturated (the levels are never
// -128, §7.2), so exact. vpmaddwd with ones then adds pairs of int16 into
// int32 lanes.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/q8_kernels.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

constexpr int kGroup = LS_Q8_GROUP, kPanel = LS_Q8_PANEL;
// Decode's software prefetch distance (q8_kernels_avx512.cc says why).
constexpr size_t kAhead = 3 * (kGroup + 2) * kPanel;

bool quantize_avx2(const float* x, int K, int8_t* q, float* s) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 hi = _mm256_set1_ps(float(LS_Q8_MAX));
  const __m256 lo = _mm256_set1_ps(-float(LS_Q8_MAX));
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int k = 0; k < K; k += 8) {
    const __m256 v = _mm256_loadu_ps(x + k);
    const __m256 d = _mm256_cmp_ps(_mm256_sub_ps(v, v), zero, _CMP_EQ_OQ);
    if (_mm256_movemask_ps(d) != 0xFF) return false;
  }
  for (int g = 0; g < K / kGroup; ++g) {
    __m256 v[8];
    __m256 m = zero;
    for (int i = 0; i < 8; ++i) {
      v[i] = _mm256_loadu_ps(x + g * kGroup + 8 * i);
      m = _mm256_max_ps(m, _mm256_and_ps(v[i], abs_mask));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m);
    float mm = 0.0f;
    for (float a : lanes) mm = a > mm ? a : mm;
    const float sg = mm / float(LS_Q8_MAX);
    s[g] = sg;
    int8_t* out = q + g * kGroup;
    if (sg == 0.0f) {
      std::memset(out, 0, kGroup);
      continue;
    }
    const __m256 sv = _mm256_set1_ps(sg);
    __m256i iv[8];
    for (int i = 0; i < 8; ++i) {
      __m256 r = _mm256_div_ps(v[i], sv);
      r = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
      iv[i] = _mm256_cvtps_epi32(r);  // ties to even (default MXCSR)
    }
    // int32 -> int8 (values in [-127, 127], so no saturation): packs work
    // within 128-bit lanes; the permute restores the order.
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int i = 0; i < 8; i += 4) {
      const __m256i a = _mm256_packs_epi32(iv[i], iv[i + 1]);
      const __m256i b = _mm256_packs_epi32(iv[i + 2], iv[i + 3]);
      const __m256i c =
          _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), perm);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * i), c);
    }
  }
  return true;
}

// NP positions against NV x 8 columns (from column c0) of one whole
// 64-column panel: the group's int32 sums in registers, §7.3 steps 2-3
// per lane into acc, step 4 at the end.
template <int NP, int NV>
void panel_tile(const int8_t* q, size_t qs, const float* s, size_t ss,
                const uint8_t* p, int K, int c0, const float* bias, float* y,
                size_t ys) {
  const int G = K / kGroup;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NP][NV];
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < NV; ++j) acc[t][j] = _mm256_setzero_ps();
  }
  for (int g = 0; g < G; ++g) {
    const uint8_t* blk = p + size_t(g) * (kGroup + 2) * kPanel;
    __m256i isum[NP][NV];
    for (int t = 0; t < NP; ++t) {
      for (int j = 0; j < NV; ++j) isum[t][j] = _mm256_setzero_si256();
    }
    for (int i = 0; i < kGroup / 4; ++i) {
      __m256i xs[NP], xa[NP];
      for (int t = 0; t < NP; ++t) {
        int32_t quad;
        std::memcpy(&quad, q + size_t(t) * qs + g * kGroup + 4 * i, 4);
        xs[t] = _mm256_set1_epi32(quad);
        xa[t] = _mm256_abs_epi8(xs[t]);
      }
      if (NP == 1 && NV == 8 && g + 3 < G) {  // decode: as the VNNI table
        for (int j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(blk + kAhead +
                                                     (i * kPanel + 16 * j) * 4),
                       _MM_HINT_T0);
        }
      }
      for (int j = 0; j < NV; ++j) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
            blk + (i * kPanel + c0 + 8 * j) * 4));
        for (int t = 0; t < NP; ++t) {
          const __m256i pr =
              _mm256_maddubs_epi16(xa[t], _mm256_sign_epi8(w, xs[t]));
          isum[t][j] =
              _mm256_add_epi32(isum[t][j], _mm256_madd_epi16(pr, ones));
        }
      }
    }
    for (int j = 0; j < NV; ++j) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(
          blk + kGroup * kPanel + 2 * (c0 + 8 * j)));
      const __m256 sw =
          _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
      for (int t = 0; t < NP; ++t) {
        const __m256 scale =
            _mm256_mul_ps(_mm256_set1_ps(s[size_t(t) * ss + size_t(g)]), sw);
        const __m256 f = _mm256_cvtepi32_ps(isum[t][j]);
        acc[t][j] = _mm256_add_ps(acc[t][j], _mm256_mul_ps(f, scale));
      }
    }
  }
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < NV; ++j) {
      __m256 r = acc[t][j];
      if (bias) r = _mm256_add_ps(r, _mm256_loadu_ps(bias + c0 + 8 * j));
      _mm256_storeu_ps(y + size_t(t) * ys + c0 + 8 * j, r);
    }
  }
}

// Batches (prefill), group-major as the VNNI table: group by group over
// the whole panel, the group's 4 KB block staying in L1 while every tile
// of positions reads it. A tile: NP positions x NV vectors of 8 columns
// from c0, the group's integer sums in registers, then §7.3 steps 2-3 per
// lane into y (acc = +0.0 + t[0] at the first group, acc + t[g] after);
// the bias once at the end.
template <int NP, int NV>
void group_tile(const uint8_t* blk, int c0, const float* sw, const int8_t* q,
                size_t qs, const float* s, size_t ss, bool first, float* y,
                size_t ys) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i isum[NP][NV];
  for (int t = 0; t < NP; ++t) {
    for (int j = 0; j < NV; ++j) isum[t][j] = _mm256_setzero_si256();
  }
  for (int i = 0; i < kGroup / 4; ++i) {
    __m256i xs[NP], xa[NP];
    for (int t = 0; t < NP; ++t) {
      int32_t quad;
      std::memcpy(&quad, q + size_t(t) * qs + 4 * i, 4);
      xs[t] = _mm256_set1_epi32(quad);
      xa[t] = _mm256_abs_epi8(xs[t]);
    }
    for (int j = 0; j < NV; ++j) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
          blk + (i * kPanel + c0 + 8 * j) * 4));
      for (int t = 0; t < NP; ++t) {
        const __m256i pr =
            _mm256_maddubs_epi16(xa[t], _mm256_sign_epi8(w, xs[t]));
        isum[t][j] = _mm256_add_epi32(isum[t][j], _mm256_madd_epi16(pr, ones));
      }
    }
  }
  for (int t = 0; t < NP; ++t) {
    const __m256 sx = _mm256_set1_ps(s[size_t(t) * ss]);
    float* yt = y + size_t(t) * ys + c0;
    for (int j = 0; j < NV; ++j) {
      const __m256 scale = _mm256_mul_ps(sx, _mm256_loadu_ps(sw + c0 + 8 * j));
      const __m256 f = _mm256_cvtepi32_ps(isum[t][j]);
      const __m256 acc =
          first ? _mm256_setzero_ps() : _mm256_loadu_ps(yt + 8 * j);
      _mm256_storeu_ps(yt + 8 * j, _mm256_add_ps(acc, _mm256_mul_ps(f, scale)));
    }
  }
}

void panel_batch(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                 const uint8_t* p, int K, const float* bias, float* y,
                 size_t ys) {
  alignas(32) float sw[kPanel];
  for (int g = 0; g < K / kGroup; ++g) {
    const uint8_t* blk = p + size_t(g) * (kGroup + 2) * kPanel;
    for (int j = 0; j < kPanel / 8; ++j) {
      const __m128i h = _mm_loadu_si128(
          reinterpret_cast<const __m128i*>(blk + kGroup * kPanel + 16 * j));
      _mm256_store_ps(sw + 8 * j, _mm256_castsi256_ps(_mm256_slli_epi32(
                                      _mm256_cvtepu16_epi32(h), 16)));
    }
    const int8_t* qg = q + size_t(g) * kGroup;
    const float* sg = s + size_t(g);
    const bool first = g == 0;
    // Two positions x half a panel (4 x 2 sums, 2 x 2 levels, a weight, a
    // product and the ones: 15 of the 16 ymm registers).
    int t = 0;
    for (; t + 2 <= n; t += 2) {
      for (int c0 = 0; c0 < kPanel; c0 += 32) {
        group_tile<2, 4>(blk, c0, sw, qg + size_t(t) * qs, qs,
                         sg + size_t(t) * ss, ss, first, y + size_t(t) * ys,
                         ys);
      }
    }
    if (t < n) {
      group_tile<1, 8>(blk, 0, sw, qg + size_t(t) * qs, qs, sg + size_t(t) * ss,
                       ss, first, y + size_t(t) * ys, ys);
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

void panel_avx2(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
                const uint8_t* p, int K, int pw, const float* bias, float* y,
                size_t ys) {
  if (pw != kPanel) {
    q8_kernels_generic().panel(q, qs, s, ss, n, p, K, pw, bias, y, ys);
    return;
  }
  if (n == 1) {  // decode: the whole panel, each weight read once
    panel_tile<1, 8>(q, qs, s, ss, p, K, 0, bias, y, ys);
    return;
  }
  panel_batch(q, qs, s, ss, n, p, K, bias, y, ys);
}

constexpr CpuQ8Kernels kTable = {"avx2", quantize_avx2, panel_avx2};

}  // namespace

const CpuQ8Kernels& q8_kernels_avx2() { return kTable; }

}  // namespace lockstep::cpu
