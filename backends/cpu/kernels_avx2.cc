// The avx2 kernel table: kernels_impl.h instantiated with VecAvx2.
// Compiled with -mavx2 (no -mfma) (backends/CMakeLists.txt); only called
// after isa_supported("avx2").
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/vec_avx2.h"

namespace lockstep::cpu {
namespace {

// Tile shapes: NP positions x NV vectors for batched products (the
// accumulators plus one row slice must fit the register file), a wider
// single-position tile for decode, where the weights stream from memory
// once.
constexpr int kNV = 2, kNP = 4, kDecodeNV = 8;

void matmul_avx2(const float* x, size_t xs, int n, const float* w,
                 const float* bias, int n_in, int n_out, int o0, int o1,
                 float* y, size_t ys) {
  if (n == 1) {
    matmul_range<VecAvx2, kDecodeNV, 1>(x, xs, n, w, bias, n_in, n_out, o0, o1,
                                        y, ys);
  } else {
    matmul_range<VecAvx2, kNV, kNP>(x, xs, n, w, bias, n_in, n_out, o0, o1, y,
                                    ys);
  }
}

constexpr CpuKernels kTable = {
    "avx2",
    VecAvx2::W,
    matmul_avx2,
    matvec_pair<VecAvx2>,
    gelu<VecAvx2>,
    exp_n<VecAvx2>,
    attend<VecAvx2>,
    matvec_blocks<VecAvx2>,
    attend_rows<VecAvx2, kNV, kNP>,
    attend_scores<VecAvx2>,
    softmax<VecAvx2>,
    attend_values_vec<VecAvx2>,
};

}  // namespace

const CpuKernels& kernels_avx2() { return kTable; }

}  // namespace lockstep::cpu
