// The two element-wise kernels of the CUDA backend's observed prefill
// (set_observer, docs/cuda.md "Observed prefill"). The unobserved pass
// applies GELU and the residual adds in the products' epilogues (kGelu,
// kResidual in kernels.cuh), so c_fc before its GELU and the two products
// before their residual adds are never stored; observed, the products run
// with the kStore epilogue and these kernels then apply the same operation
// to the stored value: gelu32(v) and __fadd_rn(x, v), the epilogues' own
// expressions on the same operands, so the same bits. Never launched by an
// unobserved call.
#ifndef LOCKSTEP_BACKENDS_CUDA_KERNELS_OBSERVE_CUH_
#define LOCKSTEP_BACKENDS_CUDA_KERNELS_OBSERVE_CUH_

#include <cstddef>

#include "backends/cuda/kernels.cuh"

namespace lockstep::backends::cuda {
inline namespace LS_CUDA_VARIANT {

// x[i] = x[i] + y[i] for i < n: the residual stream plus a product (the
// kResidual epilogue's __fadd_rn(y[t][o], v), y[t][o] being x here).
// Waits for its predecessor (pdl_wait) before touching either.
__global__ void residual_add_kernel(float* x, const float* y, size_t n) {
  pdl_launch_dependents();
  pdl_wait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += stride) {
    x[i] = __fadd_rn(x[i], y[i]);
  }
}

// f[i] = gelu32(f[i]) for i < n: the kGelu epilogue applied in place.
__global__ void gelu_inplace_kernel(float* f, size_t n) {
  pdl_launch_dependents();
  pdl_wait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < n; i += stride) {
    f[i] = gelu32(f[i]);
  }
}

}  // namespace LS_CUDA_VARIANT
}  // namespace lockstep::backends::cuda

#endif  // LOCKSTEP_BACKENDS_CUDA_KERNELS_OBSERVE_CUH_
