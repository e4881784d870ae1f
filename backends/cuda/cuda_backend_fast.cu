// The "cost of exactness" variant of the CUDA backend (docs/cuda.md): the
// same source as cuda_backend.cu with LOCKSTEP_CUDA_FAST, so the products'
// multiply-adds are fused (__fmaf_rn) and LayerNorm's and softmax's sums
// are split across lanes (kernels.cuh). Its results are not the spec's
// bits; it is linked only into cuda_exactness_bench and
// cuda_backend_test (which checks that it differs), never into the
// backend lockstep uses. Its kernels live in their own inline namespace
// and its entries in backends::cuda_fast, so both variants link together.
#define LOCKSTEP_CUDA_FAST 1
#include "backends/cuda/cuda_backend.cu"
