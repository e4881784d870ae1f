// The neon kernel table: kernels_impl.h instantiated with VecNeon.
// Compiled for AArch64 targets only (backends/CMakeLists.txt), with no
// extra flags: Advanced SIMD is part of every ARMv8-A core. Only called
// after isa_supported("neon").
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/vec_neon.h"

namespace lockstep::cpu {
namespace {

// Tile shapes: NP positions x NV vectors for batched products. AArch64 has
// 32 vector registers: 4 x 6 = 24 accumulators, 4 row slices and one
// broadcast fit. Decode (one position) uses a wider single-position tile,
// where the weights stream from memory once.
constexpr int kNV = 4, kNP = 6, kDecodeNV = 8;

void matmul_neon(const float* x, size_t xs, int n, const float* w,
                 const float* bias, int n_in, int n_out, int o0, int o1,
                 float* y, size_t ys) {
  if (n == 1) {
    matmul_range<VecNeon, kDecodeNV, 1>(x, xs, n, w, bias, n_in, n_out, o0, o1,
                                        y, ys);
  } else {
    matmul_range<VecNeon, kNV, kNP>(x, xs, n, w, bias, n_in, n_out, o0, o1, y,
                                    ys);
  }
}

constexpr CpuKernels kTable = {
    "neon",
    VecNeon::W,
    matmul_neon,
    matvec_pair<VecNeon>,
    gelu<VecNeon>,
    exp_n<VecNeon>,
    attend<VecNeon>,
    matvec_blocks<VecNeon>,
    attend_rows<VecNeon, kNV, kNP>,
    attend_scores<VecNeon>,
    softmax<VecNeon>,
    attend_values_vec<VecNeon>,
};

}  // namespace

const CpuKernels& kernels_neon() { return kTable; }

}  // namespace lockstep::cpu
