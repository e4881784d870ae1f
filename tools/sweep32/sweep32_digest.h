/* The digest that tools/sweep32 uses to compare the WebAssembly module's
 * results with the native ones: FNV-1a over the 32-bit result words of one
 * chunk of inputs, in input order, with every NaN replaced by 0x7fc00000
 * (a NaN's payload and sign are not part of the contract,
 * docs/arithmetic.md §3.4). Plain C99, shared by the native sweep and the
 * wasm32 build (sweep32_wasm.c). */
#ifndef LOCKSTEP_TOOLS_SWEEP32_SWEEP32_DIGEST_H_
#define LOCKSTEP_TOOLS_SWEEP32_SWEEP32_DIGEST_H_

#include <stdint.h>

/* Inputs are the binary32 bit patterns first + i * stride (mod 2^32) for
 * i = 0, 1, ...; a chunk is SWEEP32_CHUNK consecutive i. */
#define SWEEP32_CHUNK 65536u
#define SWEEP32_FNV_OFFSET 0xcbf29ce484222325ULL
#define SWEEP32_FNV_PRIME 0x100000001b3ULL

static inline uint32_t sweep32_canon(uint32_t bits) {
  return ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
             ? 0x7fc00000u
             : bits;
}

static inline uint64_t sweep32_fnv(uint64_t h, uint32_t bits) {
  bits = sweep32_canon(bits);
  for (int k = 0; k < 4; ++k) {
    h ^= (uint64_t)((bits >> (8 * k)) & 0xffu);
    h *= SWEEP32_FNV_PRIME;
  }
  return h;
}

#endif /* LOCKSTEP_TOOLS_SWEEP32_SWEEP32_DIGEST_H_ */
