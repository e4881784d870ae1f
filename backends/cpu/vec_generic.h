// Portable traits: 4 binary32 lanes as a GCC/Clang vector extension, which
// compiles to SSE2 on x86-64, NEON on AArch64, simd128 on WebAssembly and
// plain scalar code elsewhere. The element-wise functions call the core's
// scalar ls_exp32 / ls_gelu32 lane by lane.
#ifndef LOCKSTEP_BACKENDS_CPU_VEC_GENERIC_H_
#define LOCKSTEP_BACKENDS_CPU_VEC_GENERIC_H_

#include "ls_arith.h"

// Internal linkage: each ISA translation unit has its own copy, compiled
// with its own flags, so no inline function can be shared across them.
namespace lockstep::cpu {
namespace {

struct VecGeneric {
  typedef float reg __attribute__((vector_size(16)));
  static constexpr int W = 4;
  static reg zero() { return reg{0.0f, 0.0f, 0.0f, 0.0f}; }
  static reg load(const float* p) {
    reg v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void store(float* p, reg v) { __builtin_memcpy(p, &v, sizeof v); }
  static reg load_partial(const float* p, int n) {
    reg v = zero();
    for (int i = 0; i < n; ++i) v[i] = p[i];
    return v;
  }
  static void store_partial(float* p, reg v, int n) {
    for (int i = 0; i < n; ++i) p[i] = v[i];
  }
  static reg set1(float x) { return reg{x, x, x, x}; }
  static reg add(reg a, reg b) { return a + b; }
  static reg sub(reg a, reg b) { return a - b; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg div(reg a, reg b) { return a / b; }
  static reg max(reg a, reg b) {
    reg m;
    for (int i = 0; i < 4; ++i) m[i] = b[i] > a[i] ? b[i] : a[i];
    return m;
  }
  static float reduce_max(reg a) {
    float m = a[0];
    for (int i = 1; i < 4; ++i) m = a[i] > m ? a[i] : m;
    return m;
  }
  static reg exp(reg x) {
    for (int i = 0; i < 4; ++i) x[i] = ls_exp32(x[i]);
    return x;
  }
  static reg gelu(reg x) {
    for (int i = 0; i < 4; ++i) x[i] = ls_gelu32(x[i]);
    return x;
  }
};

}  // namespace
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_VEC_GENERIC_H_
