// The CUDA backend: core/ls_gpt2.c's forward on the device, kernel by
// kernel (kernels.cuh), with the same bits. Weights, the KV cache (a mirror
// of the caller's), scratch and the logits live on the device; each call
// copies back what the interface (backends/backend.h) requires: the
// logits and the cache rows it appended. The decode step is captured once
// as a CUDA graph and replayed at any position (positions and tokens are
// read from device memory). docs/cuda.md describes the design and costs.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernels.cuh"
#include "backends/cuda/kernels_q8.cuh"
#include "lockstep/error.h"
#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"
#include "ls_gpt2_q8.h"

namespace lockstep::backends {
namespace {

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(std::string("CUDA backend: ") + what + ": " +
                cudaGetErrorString(e));
  }
}
#define LS_CUDA(call) check_cuda((call), #call)

int positions_for(const ls_gpt2_config& c, int max_prefix) {
  return max_prefix > 0 ? std::min(max_prefix, c.n_ctx) : c.n_ctx;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Words of the last cache row sampled at each end: a cache pointer that
// comes back with the length the mirror holds is trusted only if these
// still match (docs/cuda.md).
constexpr int kSample = 16;

class CudaBackend final : public Gpt2Backend {
 public:
  CudaBackend(const ls_gpt2_config& c, const float* weights, size_t words,
              int max_prefix, ls_gpt2_layout layout)
      : c_(c), positions_(positions_for(c, max_prefix)) {
    try {
      init(weights, words, layout, nullptr, 0);
    } catch (...) {
      release();
      throw;
    }
  }
  // Grouped int8 weights (core/ls_gpt2_q8.h, docs/arithmetic.md §7):
  // ls_gpt2_q8_bytes(c) bytes, copied to the device as they are.
  CudaBackend(const ls_gpt2_config& c, const uint8_t* weights, size_t bytes,
              int max_prefix)
      : c_(c), positions_(positions_for(c, max_prefix)), q8_(true) {
    try {
      init(nullptr, 0, LS_GPT2_LAYOUT_PLAIN, weights, bytes);
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaBackend() override { release(); }

  std::string name() const override {
    return "cuda (" + device_name_ +
           (q8_ ? (q8_fuse_ ? ", int8" : ", int8, unfused") : "") +
           (!q8_ && matvec_ != 0 ? ", matvec " + std::to_string(matvec_) : "") +
           (graph_exec_ ? "" : ", no graph") + ")";
  }
  size_t extra_memory_bytes() const override { return device_bytes_; }

  ls_status step(float* cache, size_t cache_capacity, size_t cache_len,
                 int32_t token, int32_t position, float* logits) override {
    // The checks and their order of ls_gpt2_step.
    if (!cache || !logits) return LS_ERR_NULL;
    if (token < 0 || token >= c_.n_vocab) return LS_ERR_TOKEN;
    if (position < 0 || position >= c_.n_ctx) return LS_ERR_POSITION;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    if (cache_len != size_t(position) * row ||
        cache_capacity < cache_len + row) {
      return LS_ERR_CACHE_LENGTH;
    }
    sync_cache(cache, cache_capacity, cache_len);
    h_info_[cuda::Info::kFirst] = position;
    h_info_[cuda::Info::kCount] = 1;
    h_info_[cuda::Info::kTokens] = token;
    if (graph_exec_) {
      LS_CUDA(cudaGraphLaunch(graph_exec_, stream_));
    } else {
      enqueue_step();
    }
    return finish(cache, cache_capacity, cache_len, 1, logits);
  }

  ls_status prefill(float* cache, size_t cache_capacity, size_t cache_len,
                    const int32_t* tokens, int n, int32_t position,
                    bool all_positions, float* logits) override {
    // The checks and their order of ls_gpt2_prefill.
    if (!cache || !logits || (n > 0 && !tokens)) return LS_ERR_NULL;
    if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
    if (position < 0 || position >= c_.n_ctx) return LS_ERR_POSITION;
    if (n > c_.n_ctx - position) return LS_ERR_SEQUENCE_TOO_LONG;
    for (int t = 0; t < n; ++t) {
      if (tokens[t] < 0 || tokens[t] >= c_.n_vocab) return LS_ERR_TOKEN;
    }
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    if (cache_len != size_t(position) * row ||
        cache_capacity < cache_len + size_t(n) * row) {
      return LS_ERR_CACHE_LENGTH;
    }
    if (n > positions_) return LS_ERR_SCRATCH;
    sync_cache(cache, cache_capacity, cache_len);
    put_info(position, tokens, n);
    enqueue_layers(n, true);
    if (all_positions && n > 1) {
      const size_t V = size_t(c_.n_vocab);
      for (int t = 0; t < n; ++t) {
        enqueue_final(t);
        LS_CUDA(cudaMemcpyAsync(logits + size_t(t) * V, d_logits_,
                                V * sizeof(float), cudaMemcpyDeviceToHost,
                                stream_));
      }
      return finish(cache, cache_capacity, cache_len, n, nullptr);
    }
    enqueue_final(n - 1);
    return finish(cache, cache_capacity, cache_len, n, logits);
  }

  ls_status infer(const int32_t* tokens, int n, float* logits) override {
    // The checks and their order of ls_gpt2_infer.
    if (!logits || (n > 0 && !tokens)) return LS_ERR_NULL;
    if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
    if (n > c_.n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
    for (int t = 0; t < n; ++t) {
      if (tokens[t] < 0 || tokens[t] >= c_.n_vocab) return LS_ERR_TOKEN;
    }
    if (n > positions_) return LS_ERR_SCRATCH;
    put_info(0, tokens, n);
    enqueue_layers(n, false);
    enqueue_final(n - 1);
    return finish(nullptr, 0, 0, 0, logits);
  }

  // cuda::profile_step: one decode step's launches (no graph), each
  // kernel's device time from the events between launches, summed by
  // label.
  std::vector<std::pair<std::string, double>> profile_step(int position,
                                                           int token) {
    if (position < 0 || position >= c_.n_ctx || token < 0 ||
        token >= c_.n_vocab) {
      throw Error("CUDA backend: profile_step: bad arguments");
    }
    h_info_[cuda::Info::kFirst] = position;
    h_info_[cuda::Info::kCount] = 1;
    h_info_[cuda::Info::kTokens] = token;
    std::vector<std::pair<std::string, cudaEvent_t>> marks;
    cudaEvent_t start;
    LS_CUDA(cudaEventCreate(&start));
    LS_CUDA(cudaEventRecord(start, stream_));
    marks_ = &marks;
    try {
      enqueue_step();
    } catch (...) {
      marks_ = nullptr;
      throw;
    }
    marks_ = nullptr;
    LS_CUDA(cudaStreamSynchronize(stream_));
    std::vector<std::pair<std::string, double>> out;
    cudaEvent_t prev = start;
    for (const auto& m : marks) {
      float ms = 0;
      LS_CUDA(cudaEventElapsedTime(&ms, prev, m.second));
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const auto& p) { return p.first == m.first; });
      if (it == out.end()) {
        out.push_back({m.first, ms});
      } else {
        it->second += ms;
      }
      prev = m.second;
    }
    cudaEventDestroy(start);
    for (const auto& m : marks) cudaEventDestroy(m.second);
    host_cache_ = nullptr;
    return out;
  }

  // cuda::device_prefill_seconds: the launches of a prefill of n tokens at
  // position 0 (last logits), no copies back.
  double device_prefill_seconds(const int32_t* tokens, int n, int reps) {
    if (n < 1 || n > positions_ || reps < 1) {
      throw Error("CUDA backend: device_prefill_seconds: bad arguments");
    }
    cudaEvent_t e0, e1;
    LS_CUDA(cudaEventCreate(&e0));
    LS_CUDA(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int r = 0; r <= reps; ++r) {
      put_info(0, tokens, n);
      LS_CUDA(cudaEventRecord(e0, stream_));
      enqueue_layers(n, true);
      enqueue_final(n - 1);
      LS_CUDA(cudaEventRecord(e1, stream_));
      LS_CUDA(cudaEventSynchronize(e1));
      float t = 0;
      LS_CUDA(cudaEventElapsedTime(&t, e0, e1));
      if (r > 0) ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    host_cache_ = nullptr;
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] / 1e3;
  }

  // cuda::device_step_seconds: graph replays (or the launches) alone.
  double device_step_seconds(int position, int token, int reps) {
    if (position < 0 || position >= c_.n_ctx || token < 0 ||
        token >= c_.n_vocab || reps < 1) {
      throw Error("CUDA backend: device_step_seconds: bad arguments");
    }
    h_info_[cuda::Info::kFirst] = position;
    h_info_[cuda::Info::kCount] = 1;
    h_info_[cuda::Info::kTokens] = token;
    cudaEvent_t e0, e1;
    LS_CUDA(cudaEventCreate(&e0));
    LS_CUDA(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int r = 0; r <= reps; ++r) {  // the first is a warm-up
      LS_CUDA(cudaEventRecord(e0, stream_));
      if (graph_exec_) {
        LS_CUDA(cudaGraphLaunch(graph_exec_, stream_));
      } else {
        enqueue_step();
      }
      LS_CUDA(cudaEventRecord(e1, stream_));
      LS_CUDA(cudaEventSynchronize(e1));
      float t = 0;
      LS_CUDA(cudaEventElapsedTime(&t, e0, e1));
      if (r > 0) ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    // The replays wrote a device cache row the host does not have.
    host_cache_ = nullptr;
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] / 1e3;
  }

 private:
  void init(const float* weights, size_t words, ls_gpt2_layout layout,
            const uint8_t* q8_weights, size_t q8_bytes) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
      cudaGetLastError();
      throw Error("GPT-2 backend: cuda: no usable CUDA device");
    }
    LS_CUDA(cudaSetDevice(0));
    cudaDeviceProp prop;
    LS_CUDA(cudaGetDeviceProperties(&prop, 0));
    device_name_ = prop.name;
    sm_count_ = prop.multiProcessorCount;
    const char* fuse = std::getenv("LOCKSTEP_CUDA_Q8_FUSE");
    q8_fuse_ = !(fuse && std::strcmp(fuse, "0") == 0);
    LS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));

    const size_t C = size_t(c_.n_embd), P = size_t(positions_);
    const size_t V = size_t(c_.n_vocab);
    if (q8_) {
      d_wq_ = alloc<uint8_t>(q8_bytes);
      LS_CUDA(cudaMemcpy(d_wq_, q8_weights, q8_bytes, cudaMemcpyHostToDevice));
      d_qx_ = alloc<int8_t>(P * 4 * C);
      d_sx_ = alloc<float>(P * 4 * C / size_t(cuda::kQ8Group));
      d_bad_ = alloc<int>(P);
      set_q8_smem();
    } else {
      std::vector<float> plain;
      const float* src = weights;
      if (layout == LS_GPT2_LAYOUT_PANEL64) {
        plain.resize(words);
        ls_gpt2_from_panels(&c_, weights, plain.data());
        src = plain.data();
      }
      d_w_ = alloc<float>(words);
      LS_CUDA(
          cudaMemcpy(d_w_, src, words * sizeof(float), cudaMemcpyHostToDevice));
    }
    d_cache_ = alloc<float>(ls_gpt2_cache_floats(&c_));
    samples_.assign(size_t(c_.n_ctx) * 2 * kSample, 0.0f);
    d_xs_ = alloc<float>(P * C);
    d_hs_ = alloc<float>(P * C);
    d_qkvs_ = alloc<float>(P * 3 * C);
    d_as_ = alloc<float>(P * C);
    d_fs_ = alloc<float>(P * 4 * C);
    d_hf_ = alloc<float>(C);
    d_logits_ = alloc<float>(V);
    d_flag_ = alloc<int>(1);
    d_info_ = alloc<int>(2 + P);
    // matvec3's block sums and per-tile counters (zero between launches).
    d_partial_ = alloc<float>(16 * 4 * C);
    d_counters_ = alloc<unsigned>(size_t(ceil_div(4 * c_.n_embd, 32)));
    LS_CUDA(cudaMemset(d_counters_, 0,
                       size_t(ceil_div(4 * c_.n_embd, 32)) * sizeof(unsigned)));
    void* h = nullptr;
    LS_CUDA(cudaHostAlloc(&h, (2 + P) * sizeof(int), cudaHostAllocDefault));
    h_info_ = static_cast<int*>(h);
    LS_CUDA(cudaHostAlloc(&h, sizeof(int), cudaHostAllocDefault));
    h_flag_ = static_cast<int*>(h);
    const size_t stage = V + ls_gpt2_cache_row_floats(&c_);
    LS_CUDA(cudaHostAlloc(&h, stage * sizeof(float), cudaHostAllocDefault));
    h_stage_ = static_cast<float*>(h);
    device_bytes_ += (3 + P) * sizeof(int) + stage * sizeof(float);  // pinned

    const int D = c_.n_embd / c_.n_head;
    attention_smem_ = cuda::attention_smem_floats(D, c_.n_ctx) * sizeof(float);
    if (attention_smem_ > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::attention_kernel,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(attention_smem_)));
    }
    if (!q8_ && size_t(c_.n_embd) * sizeof(float) > 48 * 1024) {
      set_matvec_smem<cuda::kQkv>();
      set_matvec_smem<cuda::kGelu>();
    }
    LS_CUDA(cudaDeviceSynchronize());

    // The decode product's version (docs/cuda.md): 1 (one block per output
    // slice), 2 (1 with x in shared memory and double-buffered loads) or 3
    // (split over the §2.1 blocks) or 4 (3 everywhere, the LayerNorm of
    // the products that follow one computed once by its own launch), by
    // LOCKSTEP_CUDA_MATVEC; the default (0) is 3 for the products without
    // LayerNorm whose K exceeds N (the MLP's second projection) and 1 for
    // the others. Same bits in each.
    const char* mv = std::getenv("LOCKSTEP_CUDA_MATVEC");
    if (mv && mv[0] >= '0' && mv[0] <= '4' && mv[1] == 0) matvec_ = mv[0] - '0';
    const char* g = std::getenv("LOCKSTEP_CUDA_GRAPH");
    if (!(g && std::strcmp(g, "0") == 0)) capture_step();
  }

  // The decode step, captured once: the info copy from pinned memory (read
  // at each replay), then every launch of enqueue_step.
  void capture_step() {
    h_info_[0] = 0, h_info_[1] = 1, h_info_[2] = 0;
    cudaGraph_t graph = nullptr;
    try {
      LS_CUDA(
          cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      enqueue_step();
      LS_CUDA(cudaStreamEndCapture(stream_, &graph));
      LS_CUDA(cudaGraphInstantiate(&graph_exec_, graph, 0));
      graph_ = graph;
    } catch (const Error&) {
      // Fall back to plain launches (slower, same bits).
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream_, &g);
      if (g) cudaGraphDestroy(g);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      graph_ = nullptr;
      graph_exec_ = nullptr;
    }
  }

  void enqueue_step() {
    LS_CUDA(cudaMemcpyAsync(d_info_, h_info_, 3 * sizeof(int),
                            cudaMemcpyHostToDevice, stream_));
    enqueue_layers(1, true);
    enqueue_final(0);
  }

  // LayerNorm-fused decode products keep n_embd floats in dynamic shared
  // memory: above 48 KB (n_embd > 12288, beyond GPT-2) the limit is raised.
  template <int kEpi>
  void set_matvec_smem() {
    const int bytes = c_.n_embd * int(sizeof(float));
    const auto attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
    LS_CUDA(
        cudaFuncSetAttribute(cuda::matvec_kernel<8, kEpi, true>, attr, bytes));
    LS_CUDA(
        cudaFuncSetAttribute(cuda::matvec_kernel<16, kEpi, true>, attr, bytes));
  }

  template <typename T>
  T* alloc(size_t count) {
    void* p = nullptr;
    LS_CUDA(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
    allocs_.push_back(p);
    device_bytes_ += count * sizeof(T);
    return static_cast<T*>(p);
  }

  void release() {
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    if (graph_) cudaGraphDestroy(graph_);
    graph_exec_ = nullptr, graph_ = nullptr;
    for (void* p : allocs_) cudaFree(p);
    allocs_.clear();
    if (h_info_) cudaFreeHost(h_info_);
    if (h_flag_) cudaFreeHost(h_flag_);
    if (h_stage_) cudaFreeHost(h_stage_);
    h_info_ = h_flag_ = nullptr;
    h_stage_ = nullptr;
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  void put_info(int first, const int32_t* tokens, int n) {
    h_info_[cuda::Info::kFirst] = first;
    h_info_[cuda::Info::kCount] = n;
    std::memcpy(h_info_ + cuda::Info::kTokens, tokens, size_t(n) * 4);
    LS_CUDA(cudaMemcpyAsync(d_info_, h_info_, size_t(2 + n) * sizeof(int),
                            cudaMemcpyHostToDevice, stream_));
  }

  // Checks a launch; when profiling (profile_step), marks its end with an
  // event labelled by kernel and shape.
  void launched(const char* what, int K = 0, int N = 0) {
    check_cuda(cudaGetLastError(), what);
    if (!marks_) return;
    std::string label = what;
    if (K) label += " " + std::to_string(K) + "x" + std::to_string(N);
    cudaEvent_t e;
    LS_CUDA(cudaEventCreate(&e));
    LS_CUDA(cudaEventRecord(e, stream_));
    marks_->push_back({label, e});
  }

  // One §2.2 product over n positions with epilogue kEpi: the decode kernel
  // for one position, the tiled one for more. With `ln`, x is the residual
  // stream and the product's input is LayerNorm(x; g at ln_g, b at ln_b):
  // fused into the decode kernel, a LayerNorm launch into d_hs_ before the
  // tiled one.
  template <int kEpi>
  void product(const float* x, bool ln, size_t ln_g, size_t ln_b, size_t w_off,
               size_t b_off, int n, int K, int N, float* y, float* kv) {
    const float* w = d_w_ + w_off;
    const float* b = d_w_ + b_off;
    const float* g = d_w_ + ln_g;
    const float* gb = d_w_ + ln_b;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    if (n == 1 && matvec_ == 4 && ln &&
        size_t(K) * sizeof(float) <= 48 * 1024) {
      // Version 4: LayerNorm once (one block) into d_hs_, then the split
      // product on it, so that no thread block recomputes it.
      layernorm(x, ln_g, ln_b, 1, d_hs_);
      product<kEpi>(d_hs_, false, 0, 0, w_off, b_off, n, K, N, y, kv);
      return;
    }
    const bool v3 =
        matvec_ == 3 || matvec_ == 4 || (matvec_ == 0 && !ln && K > N);
    if (n == 1 && v3 && size_t(K) * sizeof(float) <= 48 * 1024) {
      const int nb = K % 16 == 0 ? 16 : 1;
      const size_t smem = size_t(ln ? K : K / nb) * sizeof(float);
      const dim3 grid(ceil_div(N, cuda::kV3Cols), nb);
      if (ln) {
        cuda::matvec3_kernel<kEpi, true>
            <<<grid, cuda::kV3Threads, smem, stream_>>>(
                x, g, gb, w, b, K, N, y, kv, row, d_info_, d_partial_,
                d_counters_);
      } else {
        cuda::matvec3_kernel<kEpi, false>
            <<<grid, cuda::kV3Threads, smem, stream_>>>(
                x, g, gb, w, b, K, N, y, kv, row, d_info_, d_partial_,
                d_counters_);
      }
      launched("matvec3", K, N);
      return;
    }
    if (n == 1 && matvec_ == 2 && size_t(K) * sizeof(float) <= 48 * 1024) {
      const size_t smem = size_t(K) * sizeof(float);
      if (N >= 2048) {
        if (ln) {
          cuda::matvec2_kernel<16, kEpi, true>
              <<<ceil_div(N, 16), 256, smem, stream_>>>(x, g, gb, w, b, K, N, y,
                                                        kv, row, d_info_);
        } else {
          cuda::matvec2_kernel<16, kEpi, false>
              <<<ceil_div(N, 16), 256, smem, stream_>>>(x, g, gb, w, b, K, N, y,
                                                        kv, row, d_info_);
        }
      } else {
        if (ln) {
          cuda::matvec2_kernel<8, kEpi, true>
              <<<ceil_div(N, 8), 128, smem, stream_>>>(x, g, gb, w, b, K, N, y,
                                                       kv, row, d_info_);
        } else {
          cuda::matvec2_kernel<8, kEpi, false>
              <<<ceil_div(N, 8), 128, smem, stream_>>>(x, g, gb, w, b, K, N, y,
                                                       kv, row, d_info_);
        }
      }
      launched("matvec2", K, N);
      return;
    }
    if (n == 1) {
      const size_t smem = ln ? size_t(K) * sizeof(float) : 0;
      if (N >= 2048) {
        if (ln) {
          cuda::matvec_kernel<16, kEpi, true>
              <<<ceil_div(N, 16), 256, smem, stream_>>>(x, g, gb, w, b, K, N, y,
                                                        kv, row, d_info_);
        } else {
          cuda::matvec_kernel<16, kEpi, false>
              <<<ceil_div(N, 16), 256, 0, stream_>>>(x, g, gb, w, b, K, N, y,
                                                     kv, row, d_info_);
        }
      } else {
        if (ln) {
          cuda::matvec_kernel<8, kEpi, true>
              <<<ceil_div(N, 8), 128, smem, stream_>>>(x, g, gb, w, b, K, N, y,
                                                       kv, row, d_info_);
        } else {
          cuda::matvec_kernel<8, kEpi, false>
              <<<ceil_div(N, 8), 128, 0, stream_>>>(x, g, gb, w, b, K, N, y, kv,
                                                    row, d_info_);
        }
      }
      launched("matvec", K, N);
      return;
    }
    if (ln) {
      layernorm(x, ln_g, ln_b, n, d_hs_);
      x = d_hs_;
    }
    const dim3 grid(ceil_div(N, cuda::kTile), ceil_div(n, cuda::kTile));
    if (K % 16 == 0) {
      cuda::matmul_kernel<kEpi, true>
          <<<grid, 256, 0, stream_>>>(x, w, b, n, K, N, y, kv, row, d_info_);
    } else {
      cuda::matmul_kernel<kEpi, false>
          <<<grid, 256, 0, stream_>>>(x, w, b, n, K, N, y, kv, row, d_info_);
    }
    launched("matmul", K, N);
  }

  void layernorm(const float* x, size_t g_off, size_t b_off, int n, float* y) {
    cuda::layernorm_kernel<<<n, 256, size_t(c_.n_embd) * sizeof(float),
                             stream_>>>(x, d_w_ + g_off, d_w_ + b_off,
                                        c_.n_embd, y);
    launched("layernorm");
  }

  // §6 over the n positions of d_info_: embeddings and every block. With
  // the cache, keys and values go to rows first .. first+n-1 of the device
  // cache and attention reads the cache; without (the full pass), it reads
  // this layer's q|k|v.
  void enqueue_layers(int n, bool with_cache) {
    if (q8_) {
      enqueue_layers_q8(n, with_cache);
      return;
    }
    const int C = c_.n_embd, D = C / c_.n_head;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    cuda::embed_kernel<<<n, 256, 0, stream_>>>(d_w_, ls_gpt2_wpe_offset(&c_), C,
                                               d_info_, d_xs_, d_flag_);
    launched("embed");
    for (int l = 0; l < c_.n_layer; ++l) {
      const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
      float* kv = with_cache ? d_cache_ + size_t(l) * 2 * C : nullptr;
      product<cuda::kQkv>(d_xs_, true, b.ln1_g, b.ln1_b, b.attn_w, b.attn_b, n,
                          C, 3 * C, d_qkvs_, kv);
      const float* keys = with_cache ? kv : d_qkvs_ + C;
      const float* values = with_cache ? kv + C : d_qkvs_ + 2 * C;
      const size_t stride = with_cache ? row : size_t(3 * C);
      cuda::attention_kernel<<<dim3(c_.n_head, n), cuda::kAttnThreads,
                               attention_smem_, stream_>>>(
          d_qkvs_, keys, values, stride, C, D, c_.n_ctx, d_info_, d_as_);
      launched("attention");
      product<cuda::kResidual>(d_as_, false, 0, 0, b.proj_w, b.proj_b, n, C, C,
                               d_xs_, nullptr);
      product<cuda::kGelu>(d_xs_, true, b.ln2_g, b.ln2_b, b.fc_w, b.fc_b, n, C,
                           4 * C, d_fs_, nullptr);
      product<cuda::kResidual>(d_fs_, false, 0, 0, b.out_w, b.out_b, n, 4 * C,
                               C, d_xs_, nullptr);
    }
  }

  // §6 output for position `t` of the pass: LayerNorm(ln_f), logits.
  void enqueue_final(int t) {
    if (q8_) {
      enqueue_final_q8(t);
      return;
    }
    const size_t lnf = ls_gpt2_lnf_offset(&c_);
    layernorm(d_xs_ + size_t(t) * c_.n_embd, lnf, lnf + c_.n_embd, 1, d_hf_);
    cuda::logits_kernel<<<ceil_div(c_.n_vocab, 16), 256, 0, stream_>>>(
        d_hf_, d_w_, c_.n_embd, c_.n_vocab, d_logits_, d_flag_);
    launched("logits");
  }

  // ------------------------------------------------------------ int8
  // The int8 product's shared memory above 48 KB (kP 8 and K = 4C >= 2,560
  // bytes of qx plus the t[g] terms) needs the raised limit, and the
  // quantization's K floats above 48 KB too (n_embd > 3,072).
  void set_q8_smem() {
    const auto attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
    const int K = 4 * c_.n_embd;
    const int big = int(cuda::q8_matmul_smem(8, K));
    if (big > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<8, cuda::kQkv>, attr,
                                   big));
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<8, cuda::kGelu>, attr,
                                   big));
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<8, cuda::kResidual>,
                                   attr, big));
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<8, cuda::kLogitsQ8>,
                                   attr, big));
    }
    const int one = int(cuda::q8_matmul_smem(1, K));
    if (one > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<1, cuda::kQkv>, attr,
                                   one));
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<1, cuda::kGelu>, attr,
                                   one));
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<1, cuda::kResidual>,
                                   attr, one));
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<1, cuda::kLogitsQ8>,
                                   attr, one));
    }
    const int fused = int(cuda::q8_fused_smem(K));
    if (fused > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_fused_kernel<cuda::kQkv, true>,
                                   attr, fused));
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_fused_kernel<cuda::kGelu, true>,
                                   attr, fused));
      LS_CUDA(cudaFuncSetAttribute(
          cuda::q8_fused_kernel<cuda::kResidual, false>, attr, fused));
    }
    const int qs = K * int(sizeof(float));
    if (qs > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::quantize_q8_kernel<true>, attr, qs));
      LS_CUDA(cudaFuncSetAttribute(cuda::quantize_q8_kernel<false>, attr, qs));
    }
  }

  const float* q8_floats(size_t byte_offset) const {
    return reinterpret_cast<const float*>(d_wq_ + byte_offset);
  }

  // §7.2 for the n rows of x [n][K] into d_qx_, d_sx_, d_bad_; with ln_g
  // (byte offsets of LayerNorm's gain and bias), LayerNorm first.
  void quantize_q8(const float* x, bool ln, size_t ln_g, size_t ln_b, int n,
                   int K) {
    const size_t smem = size_t(K) * sizeof(float);
    if (ln) {
      cuda::quantize_q8_kernel<true><<<n, 256, smem, stream_>>>(
          x, q8_floats(ln_g), q8_floats(ln_b), K, d_qx_, d_sx_, d_bad_);
    } else {
      cuda::quantize_q8_kernel<false><<<n, 256, smem, stream_>>>(
          x, nullptr, nullptr, K, d_qx_, d_sx_, d_bad_);
    }
    launched("quantize", K, n);
  }

  // §7.3 over the n quantized rows: M at byte offset w_off, bias at b_off
  // (SIZE_MAX: none, the head). One position: kP 1, a warp per group (up
  // to 16); more: kP 8 positions per block, 16 warps.
  template <int kEpi>
  void product_q8(size_t w_off, size_t b_off, int n, int K, int N, float* y,
                  float* kv) {
    const uint8_t* m = d_wq_ + w_off;
    const float* bias = b_off == SIZE_MAX ? nullptr : q8_floats(b_off);
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    const int G = K / cuda::kQ8Group;
    if (n == 1) {
      const int warps = std::min(16, G);
      cuda::q8_matmul_kernel<1, kEpi><<<ceil_div(N, cuda::kQ8Cols), 32 * warps,
                                        cuda::q8_matmul_smem(1, K), stream_>>>(
          d_qx_, d_sx_, d_bad_, m, bias, 1, K, N, y, kv, row, d_info_, d_flag_);
    } else {
      const dim3 grid(ceil_div(N, cuda::kQ8Cols), ceil_div(n, 8));
      cuda::q8_matmul_kernel<8, kEpi>
          <<<grid, 512, cuda::q8_matmul_smem(8, K), stream_>>>(
              d_qx_, d_sx_, d_bad_, m, bias, n, K, N, y, kv, row, d_info_,
              d_flag_);
    }
    launched("q8 product", K, N);
  }

  // One int8 projection of the n rows of x (with ln: of LayerNorm(x)):
  // for one position and at most two waves of blocks, the fused kernel
  // (quantization in every block; LOCKSTEP_CUDA_Q8_FUSE=0 turns it off),
  // else the quantization's launch, then the product's.
  template <int kEpi, bool kLn>
  void project_q8(const float* x, size_t ln_g, size_t ln_b, size_t w_off,
                  size_t b_off, int n, int K, int N, float* y, float* kv) {
    const int blocks = ceil_div(N, cuda::kQ8Cols);
    if (n == 1 && q8_fuse_ && blocks <= 2 * sm_count_) {
      const int warps = std::min(16, K / cuda::kQ8Group);
      cuda::q8_fused_kernel<kEpi, kLn>
          <<<blocks, 32 * warps, cuda::q8_fused_smem(K), stream_>>>(
              x, kLn ? q8_floats(ln_g) : nullptr,
              kLn ? q8_floats(ln_b) : nullptr, d_wq_ + w_off, q8_floats(b_off),
              K, N, y, kv, ls_gpt2_cache_row_floats(&c_), d_info_, d_flag_);
      launched("q8 fused", K, N);
      return;
    }
    quantize_q8(x, kLn, ln_g, ln_b, n, K);
    product_q8<kEpi>(w_off, b_off, n, K, N, y, kv);
  }

  // §7 over the n positions of d_info_ (enqueue_layers's int8 twin): the
  // embeddings dequantized, then per block the four projections on int8
  // inputs quantized per position, attention and the rest in binary32.
  void enqueue_layers_q8(int n, bool with_cache) {
    const int C = c_.n_embd, D = C / c_.n_head;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    cuda::embed_q8_kernel<<<n, 256, 0, stream_>>>(
        d_wq_, d_wq_ + ls_gpt2_q8_wpe_offset(&c_), C, c_.n_vocab, c_.n_ctx,
        d_info_, d_xs_, d_flag_);
    launched("embed q8");
    for (int l = 0; l < c_.n_layer; ++l) {
      const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c_, l);
      float* kv = with_cache ? d_cache_ + size_t(l) * 2 * C : nullptr;
      project_q8<cuda::kQkv, true>(d_xs_, b.ln1_g, b.ln1_b, b.attn_w, b.attn_b,
                                   n, C, 3 * C, d_qkvs_, kv);
      const float* keys = with_cache ? kv : d_qkvs_ + C;
      const float* values = with_cache ? kv + C : d_qkvs_ + 2 * C;
      const size_t stride = with_cache ? row : size_t(3 * C);
      cuda::attention_kernel<<<dim3(c_.n_head, n), cuda::kAttnThreads,
                               attention_smem_, stream_>>>(
          d_qkvs_, keys, values, stride, C, D, c_.n_ctx, d_info_, d_as_);
      launched("attention");
      project_q8<cuda::kResidual, false>(d_as_, 0, 0, b.proj_w, b.proj_b, n, C,
                                         C, d_xs_, nullptr);
      project_q8<cuda::kGelu, true>(d_xs_, b.ln2_g, b.ln2_b, b.fc_w, b.fc_b, n,
                                    C, 4 * C, d_fs_, nullptr);
      project_q8<cuda::kResidual, false>(d_fs_, 0, 0, b.out_w, b.out_b, n,
                                         4 * C, C, d_xs_, nullptr);
    }
  }

  // §7.4's head for position t: ln_f, quantized, times wte^T (no bias).
  void enqueue_final_q8(int t) {
    const size_t lnf = ls_gpt2_q8_lnf_offset(&c_);
    const size_t C = size_t(c_.n_embd);
    quantize_q8(d_xs_ + size_t(t) * C, true, lnf, lnf + 4 * C, 1, c_.n_embd);
    product_q8<cuda::kLogitsQ8>(0, SIZE_MAX, 1, c_.n_embd, c_.n_vocab,
                                d_logits_, nullptr);
  }

  // Copies back the flag, the logits (unless null) and the n cache rows
  // appended after cache_len, waits, and records the mirror's state. The
  // logits and one row go through pinned staging (a pageable copy of 200
  // KB costs more than the copy into pinned memory plus a host memcpy);
  // more rows go straight to the caller's buffer.
  ls_status finish(float* cache, size_t cache_capacity, size_t cache_len, int n,
                   float* logits) {
    const size_t V = size_t(c_.n_vocab);
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    const size_t rows = size_t(n) * row;
    const bool stage_row = cache && n == 1;
    LS_CUDA(cudaMemcpyAsync(h_flag_, d_flag_, sizeof(int),
                            cudaMemcpyDeviceToHost, stream_));
    if (logits) {
      LS_CUDA(cudaMemcpyAsync(h_stage_, d_logits_, V * sizeof(float),
                              cudaMemcpyDeviceToHost, stream_));
    }
    if (stage_row) {
      LS_CUDA(cudaMemcpyAsync(h_stage_ + V, d_cache_ + cache_len,
                              row * sizeof(float), cudaMemcpyDeviceToHost,
                              stream_));
    } else if (cache && rows) {
      LS_CUDA(cudaMemcpyAsync(cache + cache_len, d_cache_ + cache_len,
                              rows * sizeof(float), cudaMemcpyDeviceToHost,
                              stream_));
    }
    LS_CUDA(cudaStreamSynchronize(stream_));
    if (logits) std::memcpy(logits, h_stage_, V * sizeof(float));
    if (stage_row) std::memcpy(cache + cache_len, h_stage_ + V, row * 4);
    if (cache) note_synced(cache, cache_capacity, cache_len + rows);
    return *h_flag_ ? LS_ERR_OUTPUT_NONFINITE : LS_OK;
  }

  // The device mirror holds the host's rows [0, cache_len) when the caller
  // passes the buffer it passed last (same pointer and capacity), no longer
  // than the mirror holds, and the ends of row cache_len - 1 (sampled when
  // the mirror got it) are unchanged; otherwise those rows are uploaded
  // (docs/cuda.md). A shorter length (a rewound session) is trusted too.
  void sync_cache(const float* cache, size_t capacity, size_t cache_len) {
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    const size_t rows = cache_len / row;
    bool trusted = cache == host_cache_ && capacity == host_capacity_ &&
                   cache_len <= synced_len_;
    if (trusted && rows > 0) {
      const float* last = cache + cache_len - row;
      const float* s = samples_.data() + (rows - 1) * 2 * kSample;
      trusted = std::memcmp(last, s, sizeof(float) * kSample) == 0 &&
                std::memcmp(last + row - kSample, s + kSample,
                            sizeof(float) * kSample) == 0;
    }
    sample_from_ = rows;
    if (!trusted && rows > 0) {
      LS_CUDA(cudaMemcpyAsync(d_cache_, cache, cache_len * sizeof(float),
                              cudaMemcpyHostToDevice, stream_));
      ++uploads_;
      sample_from_ = 0;
    }
  }

  // After a call: the mirror equals the host's rows [0, len); samples the
  // rows it did not hold before (uploaded or appended).
  void note_synced(const float* cache, size_t capacity, size_t len) {
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    host_cache_ = cache, host_capacity_ = capacity, synced_len_ = len;
    if (row < size_t(kSample)) {
      host_cache_ = nullptr;  // too short to sample: always upload
      return;
    }
    for (size_t r = sample_from_; r < len / row; ++r) {
      const float* p = cache + r * row;
      float* s = samples_.data() + r * 2 * kSample;
      std::memcpy(s, p, sizeof(float) * kSample);
      std::memcpy(s + kSample, p + row - kSample, sizeof(float) * kSample);
    }
  }

  ls_gpt2_config c_;
  int positions_;
  std::string device_name_;
  size_t device_bytes_ = 0;
  std::vector<void*> allocs_;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  size_t attention_smem_ = 0;
  int matvec_ = 0;       // LOCKSTEP_CUDA_MATVEC (0: 3 or 1 by shape)
  bool q8_ = false;      // grouped int8 weights (d_wq_)
  bool q8_fuse_ = true;  // LOCKSTEP_CUDA_Q8_FUSE
  int sm_count_ = 1;
  uint8_t* d_wq_ = nullptr;
  int8_t* d_qx_ = nullptr;  // a projection's quantized inputs [n][K]
  float* d_sx_ = nullptr;   // their scales [n][K / 64]
  int* d_bad_ = nullptr;    // per position: an input was not finite
  // profile_step: the events after each launch, with their labels.
  std::vector<std::pair<std::string, cudaEvent_t>>* marks_ = nullptr;
  float* d_w_ = nullptr;
  float* d_cache_ = nullptr;
  float *d_xs_ = nullptr, *d_hs_ = nullptr, *d_qkvs_ = nullptr;
  float *d_as_ = nullptr, *d_fs_ = nullptr, *d_hf_ = nullptr;
  float* d_logits_ = nullptr;
  int* d_flag_ = nullptr;
  int* d_info_ = nullptr;
  float* d_partial_ = nullptr;
  unsigned* d_counters_ = nullptr;
  int* h_info_ = nullptr;
  int* h_flag_ = nullptr;
  float* h_stage_ = nullptr;  // pinned: the logits, then one cache row
  // The mirror's state (sync_cache).
  const float* host_cache_ = nullptr;
  size_t host_capacity_ = 0, synced_len_ = 0;
  size_t sample_from_ = 0;      // first row the current call samples
  std::vector<float> samples_;  // per cache row: 16 words at each end
  long uploads_ = 0;
};

double median_of(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::unique_ptr<Gpt2Backend> make_cuda_backend(const ls_gpt2_config& c,
                                               const float* weights,
                                               size_t words, int max_prefix,
                                               ls_gpt2_layout layout) {
  return std::make_unique<CudaBackend>(c, weights, words, max_prefix, layout);
}

std::unique_ptr<Gpt2Backend> make_cuda_q8_backend(const ls_gpt2_config& c,
                                                  const uint8_t* weights,
                                                  size_t bytes,
                                                  int max_prefix) {
  if (!ls_gpt2_q8_config_valid(&c)) {
    throw Error("GPT-2 int8 backend: invalid config");
  }
  if (!weights || bytes != ls_gpt2_q8_bytes(&c)) {
    throw Error("GPT-2 int8 backend: " + std::to_string(bytes) +
                " bytes of weights, the config needs " +
                std::to_string(ls_gpt2_q8_bytes(&c)));
  }
  return std::make_unique<CudaBackend>(c, weights, bytes, max_prefix);
}

bool cuda_device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

std::string cuda_device_name() {
  if (!cuda_device_available()) return "";
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "";
  return prop.name;
}

namespace cuda {

void device_elementwise(const float* in, float* out, size_t n, int op) {
  if (n == 0) return;
  float *d_in = nullptr, *d_out = nullptr;
  LS_CUDA(cudaMalloc(&d_in, n * sizeof(float)));
  LS_CUDA(cudaMalloc(&d_out, n * sizeof(float)));
  LS_CUDA(cudaMemcpy(d_in, in, n * sizeof(float), cudaMemcpyHostToDevice));
  const size_t blocks = (n + 255) / 256;
  elementwise_kernel<<<unsigned(blocks), 256>>>(d_in, d_out, n, op);
  check_cuda(cudaGetLastError(), "elementwise_kernel");
  LS_CUDA(cudaMemcpy(out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(d_in);
  cudaFree(d_out);
}

double copy_bandwidth_bytes_per_s(size_t bytes, int reps) {
  void *a = nullptr, *b = nullptr;
  LS_CUDA(cudaMalloc(&a, bytes));
  LS_CUDA(cudaMalloc(&b, bytes));
  LS_CUDA(cudaMemset(a, 0x5a, bytes));  // not zeros (METHOD.md)
  LS_CUDA(cudaMemset(b, 0x3c, bytes));
  cudaEvent_t e0, e1;
  LS_CUDA(cudaEventCreate(&e0));
  LS_CUDA(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r <= reps; ++r) {
    LS_CUDA(cudaEventRecord(e0));
    LS_CUDA(cudaMemcpyAsync(r % 2 ? a : b, r % 2 ? b : a, bytes,
                            cudaMemcpyDeviceToDevice));
    LS_CUDA(cudaEventRecord(e1));
    LS_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    LS_CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (r > 0) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * double(bytes) / (median_of(ms) / 1e3);
}

double nonfma_peak_flops() {
  cudaDeviceProp prop;
  LS_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int blocks = prop.multiProcessorCount * 8, threads = 256;
  const int iters = 1 << 14;
  float* out = nullptr;
  LS_CUDA(cudaMalloc(&out, size_t(blocks) * threads * sizeof(float)));
  cudaEvent_t e0, e1;
  LS_CUDA(cudaEventCreate(&e0));
  LS_CUDA(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r <= 5; ++r) {
    LS_CUDA(cudaEventRecord(e0));
    nonfma_peak_kernel<<<blocks, threads>>>(out, iters, 0.999f, 0.001f);
    check_cuda(cudaGetLastError(), "nonfma_peak_kernel");
    LS_CUDA(cudaEventRecord(e1));
    LS_CUDA(cudaEventSynchronize(e1));
    float t = 0;
    LS_CUDA(cudaEventElapsedTime(&t, e0, e1));
    if (r > 0) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(out);
  const double flops = double(blocks) * threads * 8.0 * iters * 2.0;
  return flops / (median_of(ms) / 1e3);
}

double device_prefill_seconds(Gpt2Backend& b, const int32_t* tokens, int n,
                              int reps) {
  auto* cb = dynamic_cast<CudaBackend*>(&b);
  if (!cb) throw Error("device_prefill_seconds: not a CUDA backend");
  return cb->device_prefill_seconds(tokens, n, reps);
}

std::vector<std::pair<std::string, double>> profile_step(Gpt2Backend& b,
                                                         int position,
                                                         int token) {
  auto* cb = dynamic_cast<CudaBackend*>(&b);
  if (!cb) throw Error("profile_step: not a CUDA backend");
  return cb->profile_step(position, token);
}

double device_step_seconds(Gpt2Backend& b, int position, int token, int reps) {
  auto* cb = dynamic_cast<CudaBackend*>(&b);
  if (!cb) throw Error("device_step_seconds: not a CUDA backend");
  return cb->device_step_seconds(position, token, reps);
}

}  // namespace cuda
}  // namespace lockstep::backends
