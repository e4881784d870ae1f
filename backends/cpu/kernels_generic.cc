// The generic kernel table: kernels_impl.h instantiated with VecGeneric.
// Compiled with no ISA flags (backends/CMakeLists.txt); only called
// after isa_supported("generic").
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/vec_generic.h"

namespace lockstep::cpu {
namespace {

// Tile shapes: NP positions x NV vectors for batched products (the
// accumulators plus one row slice must fit the register file), a wider
// single-position tile for decode, where the weights stream from memory
// once.
constexpr int kNV = 2, kNP = 4, kDecodeNV = 8;

void matmul_generic(const float* x, size_t xs, int n, const float* w,
                    const float* bias, int n_in, int n_out, int o0, int o1,
                    float* y, size_t ys) {
  if (n == 1) {
    matmul_range<VecGeneric, kDecodeNV, 1>(x, xs, n, w, bias, n_in, n_out, o0,
                                           o1, y, ys);
  } else {
    matmul_range<VecGeneric, kNV, kNP>(x, xs, n, w, bias, n_in, n_out, o0, o1,
                                       y, ys);
  }
}

constexpr CpuKernels kTable = {
    "generic",
    VecGeneric::W,
    matmul_generic,
    matvec_pair<VecGeneric>,
    gelu<VecGeneric>,
    exp_n<VecGeneric>,
    attend<VecGeneric>,
    matvec_blocks<VecGeneric>,
    attend_rows<VecGeneric, kNV, kNP>,
    attend_scores<VecGeneric>,
    softmax<VecGeneric>,
    attend_values_vec<VecGeneric>,
};

}  // namespace

const CpuKernels& kernels_generic() { return kTable; }

}  // namespace lockstep::cpu
