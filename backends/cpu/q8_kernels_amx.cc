// The AMX-INT8 int8 table (Sapphire Rapids and later Xeons) for the
// avx512 ISA: batched products (prefill) on the tile unit, everything else
// the AVX-512 VNNI table's. Compiled with -mamx-tile -mamx-int8 and the
// AVX-512 flags (backends/CMakeLists.txt); q8_kernels_for returns it only
// when CPUID reports amx-tile and amx-int8 and Linux granted the process
// the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, q8_amx_usable).
//
// tdpbssd C[m][j] += sum over 64 bytes k of A[m][k] * B[k / 4][4j + k % 4],
// signed by signed bytes into int32. One tile step is one §7 group: A is
// 16 positions' 64 levels of group g (rows of the quantized input, stride
// qs), B is 16 columns of the group's §7.6 block as it is stored (row
// k / 4 of the block is the 64 columns' words for four consecutive k; 16
// columns are 64 of its 256 bytes), and C starts at zero, so C[m][j] is
// the group's integer sum isum[g] of position m and column j, exact
// (|isum| <= 64 * 127 * 127). Then §7.3 steps 2-3 per lane: t = float(isum)
// * (sx[g] * sw[j][g]), acc + t in group order from +0.0, 16 columns a
// zmm register, 16 positions' accumulators in registers; step 4 (the
// bias) at the end.
//
// Built with LOCKSTEP_Q8_AMX_EMULATE, the tile operations are scalar code
// with the instructions' semantics (for checking the tiling on machines
// without AMX; not the shipped table: q8_kernels_amx_emulated).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/q8_kernels.h"
#include "ls_q8.h"

namespace lockstep::cpu {
namespace {

constexpr int kGroup = LS_Q8_GROUP, kPanel = LS_Q8_PANEL;
constexpr size_t kBlock = (kGroup + 2) * kPanel;  // 4,224 bytes
constexpr int kRows = 16;                         // positions per tile
// A batch tail shorter than this goes to the VNNI table (the tile would
// be mostly empty); so do batches shorter than it.
constexpr int kMinRows = 8;

// The tile configuration (palette 1): tiles 0 and 3 the sums (C), 1 and 4
// the levels (A), 2 and 5 the weights (B); `rows` positions in A and C.
struct alignas(64) TileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

TileConfig make_config(int rows) {
  TileConfig c;
  std::memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int t = 0; t < 6; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = uint8_t(t == 2 || t == 5 ? kGroup / 4 : rows);
  }
  return c;
}

#if defined(LOCKSTEP_Q8_AMX_EMULATE)
// The tile registers and their instructions, in scalar code.
struct Emu {
  int rows[8], colsb[8];
  alignas(64) uint8_t d[8][16][64];
};
thread_local Emu emu;
void emu_config(const TileConfig* c) {
  for (int t = 0; t < 8; ++t) {
    emu.rows[t] = c->rows[t];
    emu.colsb[t] = c->colsb[t];
  }
  std::memset(emu.d, 0, sizeof emu.d);
}
void emu_load(int t, const void* p, size_t stride) {
  for (int r = 0; r < emu.rows[t]; ++r) {
    std::memcpy(emu.d[t][r], static_cast<const uint8_t*>(p) + r * stride,
                size_t(emu.colsb[t]));
  }
}
void emu_store(int t, void* p, size_t stride) {
  for (int r = 0; r < emu.rows[t]; ++r) {
    std::memcpy(static_cast<uint8_t*>(p) + r * stride, emu.d[t][r],
                size_t(emu.colsb[t]));
  }
}
void emu_dp(int c, int a, int b) {
  for (int m = 0; m < emu.rows[c]; ++m) {
    for (int j = 0; j < emu.colsb[c] / 4; ++j) {
      int32_t acc;
      std::memcpy(&acc, &emu.d[c][m][4 * j], 4);
      for (int k = 0; k < emu.colsb[a]; ++k) {
        acc += int32_t(int8_t(emu.d[a][m][k])) *
               int32_t(int8_t(emu.d[b][k / 4][4 * j + k % 4]));
      }
      std::memcpy(&emu.d[c][m][4 * j], &acc, 4);
    }
  }
}
#define AMX_CONFIG(c) emu_config(c)
#define AMX_RELEASE() ((void)0)
#define AMX_ZERO(t) std::memset(emu.d[t], 0, sizeof emu.d[t])
#define AMX_LOAD(t, p, stride) emu_load(t, p, stride)
#define AMX_STORE(t, p, stride) emu_store(t, p, stride)
#define AMX_DP(c, a, b) emu_dp(c, a, b)
#else
// GCC's ldtilecfg asm declares only 8 of the 64 bytes as read: the
// barrier makes every store to the configuration happen first.
#define AMX_CONFIG(c)                           \
  do {                                          \
    __asm__ volatile("" : : "r"(c) : "memory"); \
    _tile_loadconfig(c);                        \
  } while (0)
#define AMX_RELEASE() _tile_release()
#define AMX_ZERO(t) _tile_zero(t)
#define AMX_LOAD(t, p, stride) _tile_loadd(t, p, stride)
#define AMX_STORE(t, p, stride) _tile_stored(t, p, stride)
#define AMX_DP(c, a, b) _tile_dpbssd(c, a, b)
#endif

// §7.3 steps 2-3 for one group: c, the tile's 16 x 16 sums; sp[r], row r's
// scale of this group; into acc[r].
inline void rescale(const int32_t (*c)[16], const float* const* sp, int g,
                    __m512 sw, __m512* acc) {
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(sp[r][g]), sw);
    const __m512 f = _mm512_cvtepi32_ps(_mm512_load_si512(c[r]));
    acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(f, scale));
  }
}

__m512 widen_scales(const uint8_t* blk, int cb) {
  const __m256i h = _mm256_loadu_si256(
      reinterpret_cast<const __m256i*>(blk + kGroup * kPanel + 32 * cb));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// m (<= 16, the configured rows) positions x the 16 columns of column
// block cb, every group: two groups at a time, each on its own tiles, so
// the second's tile product runs while the first's sums are rescaled.
void tile_block(const int8_t* q, size_t qs, const float* s, size_t ss, int m,
                const uint8_t* p, int K, int cb, const float* bias, float* y,
                size_t ys) {
  const int G = K / kGroup;
  alignas(64) int32_t c0[kRows][16], c1[kRows][16];
  // Rows past m (a tail tile) are never written by the tile stores: zero,
  // and their scales read row m - 1's; their results are dropped.
  if (m < kRows) {
    std::memset(c0, 0, sizeof c0);
    std::memset(c1, 0, sizeof c1);
  }
  const float* sp[kRows];
  for (int r = 0; r < kRows; ++r) sp[r] = s + size_t(std::min(r, m - 1)) * ss;
  __m512 acc[kRows];  // in registers: every index a constant once unrolled
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  int g = 0;
  for (; g + 2 <= G; g += 2) {
    const uint8_t* b0 = p + size_t(g) * kBlock;
    const uint8_t* b1 = b0 + kBlock;
    AMX_ZERO(0);
    AMX_LOAD(1, q + size_t(g) * kGroup, qs);
    AMX_LOAD(2, b0 + 64 * cb, 4 * kPanel);
    AMX_DP(0, 1, 2);
    AMX_STORE(0, c0, 64);
    AMX_ZERO(3);
    AMX_LOAD(4, q + size_t(g + 1) * kGroup, qs);
    AMX_LOAD(5, b1 + 64 * cb, 4 * kPanel);
    AMX_DP(3, 4, 5);
    AMX_STORE(3, c1, 64);
    rescale(c0, sp, g, widen_scales(b0, cb), acc);
    rescale(c1, sp, g + 1, widen_scales(b1, cb), acc);
  }
  if (g < G) {
    const uint8_t* b0 = p + size_t(g) * kBlock;
    AMX_ZERO(0);
    AMX_LOAD(1, q + size_t(g) * kGroup, qs);
    AMX_LOAD(2, b0 + 64 * cb, 4 * kPanel);
    AMX_DP(0, 1, 2);
    AMX_STORE(0, c0, 64);
    rescale(c0, sp, g, widen_scales(b0, cb), acc);
  }
  const __m512 b = bias ? _mm512_loadu_ps(bias + 16 * cb) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    if (r >= m) break;
    const __m512 v = bias ? _mm512_add_ps(acc[r], b) : acc[r];
    _mm512_storeu_ps(y + size_t(r) * ys + 16 * cb, v);
  }
}

const CpuQ8Kernels& vnni() { return q8_kernels_avx512_vnni(); }

void panel_amx(const int8_t* q, size_t qs, const float* s, size_t ss, int n,
               const uint8_t* p, int K, int pw, const float* bias, float* y,
               size_t ys) {
  if (pw != kPanel || n < kMinRows) {
    vnni().panel(q, qs, s, ss, n, p, K, pw, bias, y, ys);
    return;
  }
  const int full = n / kRows, tail = n % kRows;
  if (full > 0) {
    const TileConfig cfg = make_config(kRows);
    AMX_CONFIG(&cfg);
    for (int b = 0; b < full; ++b) {
      const size_t t0 = size_t(b) * kRows;
      for (int cb = 0; cb < kPanel / 16; ++cb) {
        tile_block(q + t0 * qs, qs, s + t0 * ss, ss, kRows, p, K, cb, bias,
                   y + t0 * ys, ys);
      }
    }
  }
  const size_t t0 = size_t(full) * kRows;
  if (tail >= kMinRows) {
    const TileConfig cfg = make_config(tail);
    AMX_CONFIG(&cfg);
    for (int cb = 0; cb < kPanel / 16; ++cb) {
      tile_block(q + t0 * qs, qs, s + t0 * ss, ss, tail, p, K, cb, bias,
                 y + t0 * ys, ys);
    }
  }
  AMX_RELEASE();
  if (tail > 0 && tail < kMinRows) {
    vnni().panel(q + t0 * qs, qs, s + t0 * ss, ss, tail, p, K, pw, bias,
                 y + t0 * ys, ys);
  }
}

}  // namespace

#if defined(LOCKSTEP_Q8_AMX_EMULATE)
const CpuQ8Kernels& q8_kernels_amx_emulated() {
  static const CpuQ8Kernels table = {"amx-emulated", vnni().quantize,
                                     panel_amx};
  return table;
}
#else
const CpuQ8Kernels& q8_kernels_amx() {
  static const CpuQ8Kernels table = {"amx", vnni().quantize, panel_amx};
  return table;
}
#endif

}  // namespace lockstep::cpu
