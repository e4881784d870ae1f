// The avx512 kernel table: kernels_impl.h instantiated with VecAvx512.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq
// (backends/CMakeLists.txt); only called after isa_supported("avx512"). GCC 12
// reports its own _mm512_undefined_ps() (`__m512 __Y = __Y;`, used inside many
// AVX-512 intrinsics) as maybe-uninitialized; a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/vec_avx512.h"

namespace lockstep::cpu {
namespace {

// Tile shapes: NP positions x NV vectors for batched products (the
// accumulators plus one row slice must fit the register file), a wider
// single-position tile for decode, where the weights stream from memory
// once.
constexpr int kNV = 4, kNP = 6, kDecodeNV = 8;

void matmul_avx512(const float* x, size_t xs, int n, const float* w,
                   const float* bias, int n_in, int n_out, int o0, int o1,
                   float* y, size_t ys) {
  if (n == 1) {
    matmul_range<VecAvx512, kDecodeNV, 1>(x, xs, n, w, bias, n_in, n_out, o0,
                                          o1, y, ys);
  } else {
    matmul_range<VecAvx512, kNV, kNP>(x, xs, n, w, bias, n_in, n_out, o0, o1, y,
                                      ys);
  }
}

constexpr CpuKernels kTable = {
    "avx512",
    VecAvx512::W,
    matmul_avx512,
    matvec_pair<VecAvx512>,
    gelu<VecAvx512>,
    exp_n<VecAvx512>,
    attend<VecAvx512>,
    matvec_blocks<VecAvx512>,
    attend_rows<VecAvx512, kNV, kNP>,
    attend_scores<VecAvx512>,
    softmax<VecAvx512>,
    attend_values_vec<VecAvx512>,
};

}  // namespace

const CpuKernels& kernels_avx512() { return kTable; }

}  // namespace lockstep::cpu
