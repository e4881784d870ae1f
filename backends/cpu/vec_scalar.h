// One-lane "vector" traits: the same kernels instantiated with these run
// each output as plain scalar code. Used by every ISA for the outputs left
// over after the full vectors, and as the whole of the generic ISA's
// element-wise functions.
#ifndef LOCKSTEP_BACKENDS_CPU_VEC_SCALAR_H_
#define LOCKSTEP_BACKENDS_CPU_VEC_SCALAR_H_

#include "ls_arith.h"

// Internal linkage: each ISA translation unit has its own copy, compiled
// with its own flags, so no inline function can be shared across them.
namespace lockstep::cpu {
namespace {

struct VecScalar {
  using reg = float;
  static constexpr int W = 1;
  static reg zero() { return 0.0f; }
  static reg load(const float* p) { return *p; }
  static void store(float* p, reg v) { *p = v; }
  static reg set1(float x) { return x; }
  static reg add(reg a, reg b) { return a + b; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg div(reg a, reg b) { return a / b; }
  static reg exp(reg x) { return ls_exp32(x); }
  static reg gelu(reg x) { return ls_gelu32(x); }
};

}  // namespace
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_VEC_SCALAR_H_
