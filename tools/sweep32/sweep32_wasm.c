/* The WebAssembly side of tools/sweep32 (docs/numerics.md): the module's
 * binary32 exp (the SIMD lsw_exp32 of wasm/ops32_simd.c and the scalar
 * core ls_exp32), tanh and GELU (the core's ls_tanh32 / ls_gelu32, which the
 * shipped module uses), compiled with the shipped module's flags, digested
 * chunk by chunk (sweep32_digest.h) for the native sweep to compare. The
 * SIMD kernels are included from the shipped source, so this module runs
 * the same code. */
#include "ops32_simd.c"
#include "sweep32_digest.h"

#define SW_EXPORT(name) __attribute__((export_name(name)))

typedef union {
  float f;
  uint32_t u;
} sw_bits;

/* Digests of chunk `chunk` (inputs first + i*stride, i in [chunk*CHUNK,
 * chunk*CHUNK + count)) for the four functions, written to out[0..3]:
 * exp (SIMD), exp (scalar), tanh, GELU. */
SW_EXPORT("sweep_chunk")
void sweep_chunk(uint32_t first, uint32_t stride, uint32_t chunk,
                 uint32_t count, uint64_t* out);
void sweep_chunk(uint32_t first, uint32_t stride, uint32_t chunk,
                 uint32_t count, uint64_t* out) {
  uint64_t h[4] = {SWEEP32_FNV_OFFSET, SWEEP32_FNV_OFFSET, SWEEP32_FNV_OFFSET,
                   SWEEP32_FNV_OFFSET};
  uint32_t u = first + chunk * SWEEP32_CHUNK * stride;
  uint32_t i = 0;
  for (; i + 4 <= count; i += 4) {
    float in[4], o[4];
    for (int l = 0; l < 4; ++l, u += stride) {
      sw_bits b;
      b.u = u;
      in[l] = b.f;
    }
    wasm_v128_store(o, lsw_exp32(wasm_v128_load(in)));
    for (int l = 0; l < 4; ++l) {
      sw_bits a;
      a.f = o[l];
      /* lsw_exp32 gives NaN lanes no meaning (§3.4); canon. removes it. */
      h[0] = sweep32_fnv(h[0], a.u);
      a.f = ls_exp32(in[l]);
      h[1] = sweep32_fnv(h[1], a.u);
      a.f = ls_tanh32(in[l]);
      h[2] = sweep32_fnv(h[2], a.u);
      a.f = ls_gelu32(in[l]);
      h[3] = sweep32_fnv(h[3], a.u);
    }
  }
  for (; i < count; ++i, u += stride) {
    sw_bits b, a;
    b.u = u;
    a.f = ls_exp32(b.f);
    h[0] = sweep32_fnv(h[0], a.u);
    h[1] = sweep32_fnv(h[1], a.u);
    a.f = ls_tanh32(b.f);
    h[2] = sweep32_fnv(h[2], a.u);
    a.f = ls_gelu32(b.f);
    h[3] = sweep32_fnv(h[3], a.u);
  }
  for (int k = 0; k < 4; ++k) out[k] = h[k];
}

/* Scratch for out[]: the host passes this address. */
static uint64_t sw_out[4];
SW_EXPORT("sweep_out")
uint64_t* sweep_out(void);
uint64_t* sweep_out(void) { return sw_out; }
