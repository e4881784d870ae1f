// The CUDA backend: core/ls_gpt2.c's forward on the device, kernel by
// kernel (kernels.cuh), with the same bits. Weights, the KV cache (a mirror
// of the caller's), scratch and the logits live on the device; each call
// copies back what the interface (backends/backend.h) requires: the
// logits and the cache rows it appended. The decode step is captured once
// as a CUDA graph and replayed at any position (positions and tokens are
// read from device memory). docs/cuda.md describes the design and costs.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernels.cuh"
#include "backends/cuda/kernels_observe.cuh"
#include "backends/cuda/kernels_q8.cuh"
#include "backends/prefill_args.h"
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

// A device copy of one caller's cache (docs/cuda.md: the mirror).
struct Mirror {
  const float* host = nullptr;  // the buffer it mirrors (null: none)
  size_t capacity = 0, synced_len = 0;
  size_t sample_from = 0;      // first row the current call samples
  std::vector<float> samples;  // per cache row: 16 words at each end
  float* device = nullptr;     // its rows on the device
};

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
           (graph_exec_ ? "" : ", no graph") + (pdl_ ? "" : ", no PDL") +
           (!q8_ && matmul_ == 1 ? ", matmul 1" : "") +
           (!q8_ && matmul_ == 2 ? ", matmul 2" : "") +
           (!q8_ && split_ ? ", split " + std::to_string(split_) : "") +
           (!q8_ && (splits_[0] || splits_[1] || splits_[2] || splits_[3])
                ? ", splits " + std::to_string(splits_[0]) + "," +
                      std::to_string(splits_[1]) + "," +
                      std::to_string(splits_[2]) + "," +
                      std::to_string(splits_[3])
                : "") +
           (attn_mode_ ? ", attention " + std::to_string(attn_mode_) : "") +
           (attn_q_ != 16 ? ", attention q " + std::to_string(attn_q_) : "") +
           (attn_step_ ? ", attention step 1" : "") +
           (ln_mode_ ? ", layernorm 1" : "") +
           (!q8_ && !overlap_wanted_ ? ", overlap 0" : "") +
           (attn_early_ != 128
                ? ", attention early " + std::to_string(attn_early_)
                : "") +
           (!q8_ && logits_mode_ ? ", logits 1" : "") +
           (skip_ ? ", TIMING ONLY: kernels skipped, wrong results" : "") +
#ifdef LOCKSTEP_CUDA_FAST
           ", fast: FMA and split sums, not the spec's bits" +
#endif
           ")";
  }
  size_t extra_memory_bytes() const override { return device_bytes_; }

  // From now on a prefill with every position's logits runs the observed
  // pass (prefill_observed: every tap of core/ls_gpt2.h, docs/cuda.md
  // "Observed prefill"); nullptr turns it off. The first observer
  // allocates the observed pass's buffers (a product before its residual
  // add and the attention scores and probabilities on the device, one
  // tap's rows on the host), kept until the backend goes; every other call
  // is as before.
  bool set_observer(ls_gpt2_observer observer, void* user) override {
    if (observer && !d_ys_) {
      const size_t C = size_t(c_.n_embd), P = size_t(positions_);
      const size_t att = P * size_t(c_.n_head) * size_t(c_.n_ctx);
      obs_host_.assign(std::max(P * 4 * C, 2 * att), 0.0f);
      d_ys_ = alloc<float>(P * C);
      d_att_obs_ = alloc<float>(2 * att);
      set_attention_smem<true>();
      if (q8_) {
        set_q8_store_smem();
      } else {
        set_matmul2_smem<cuda::kStore>();
      }
    }
    obs_ = observer;
    obs_user_ = user;
    return true;
  }

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
    sync_cache(mirror_, cache, cache_capacity, cache_len);
    h_info_[cuda::Info::kFirst] = position;
    h_info_[cuda::Info::kCount] = 1;
    h_info_[cuda::Info::kSeqStride] = 0;
    h_info_[cuda::Info::kTokens] = token;
    if (graph_exec_) {
      LS_CUDA(graph_launch(graph_exec_, stream_));
      if (overlap_) {
        return finish_overlapped(cache, cache_capacity, cache_len, logits);
      }
    } else {
      enqueue_step();
    }
    return finish(cache, cache_capacity, cache_len, 1, logits);
  }

  ls_status prefill(float* cache, size_t cache_capacity, size_t cache_len,
                    const int32_t* tokens, int n, int32_t position,
                    bool all_positions, float* logits) override {
    // The checks and their order of ls_gpt2_prefill.
    const ls_status bad =
        check_prefill_args(c_, cache, cache_capacity, cache_len, tokens, n,
                           position, logits, positions_);
    if (bad != LS_OK) return bad;
    if (obs_ && all_positions) {
      return prefill_observed(cache, cache_capacity, cache_len, tokens, n,
                              position, logits);
    }
    sync_cache(mirror_, cache, cache_capacity, cache_len);
    put_info(position, tokens, n);
    enqueue_layers(n, true);
    if (all_positions && n > 1) {
      const size_t V = size_t(c_.n_vocab);
      for (int t = 0; t < n; ++t) {
        enqueue_final(t);
        LS_CUDA(copy_async(logits + size_t(t) * V, d_logits_, V * sizeof(float),
                           cudaMemcpyDeviceToHost, stream_));
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

  // cuda::step_batch: member i's step is step(caches[i], capacities[i],
  // cache_lens[i], tokens[i], positions[i], logits + i * V), all n computed
  // together: one pass through the layers for the n rows (each row its own
  // position and device cache), every output in the order of the
  // one-position step, so every member has the bits of its step alone.
  ls_status step_batch(int n, float* const* caches, const size_t* capacities,
                       const size_t* cache_lens, const int32_t* tokens,
                       const int32_t* positions, float* logits,
                       ls_status* statuses) {
    if (q8_) throw Error("CUDA backend: step_batch: binary32 only");
    if (!caches || !capacities || !cache_lens || !tokens || !positions ||
        !logits) {
      return LS_ERR_NULL;
    }
    if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    const size_t V = size_t(c_.n_vocab);
    // Each member's checks, in step's order; the first failure is
    // returned and nothing is computed.
    for (int i = 0; i < n; ++i) {
      ls_status st = LS_OK;
      if (!caches[i]) {
        st = LS_ERR_NULL;
      } else if (tokens[i] < 0 || tokens[i] >= c_.n_vocab) {
        st = LS_ERR_TOKEN;
      } else if (positions[i] < 0 || positions[i] >= c_.n_ctx) {
        st = LS_ERR_POSITION;
      } else if (cache_lens[i] != size_t(positions[i]) * row ||
                 capacities[i] < cache_lens[i] + row) {
        st = LS_ERR_CACHE_LENGTH;
      }
      if (statuses) statuses[i] = st;
      if (st != LS_OK) return st;
      for (int j = 0; j < i; ++j) {
        if (caches[j] == caches[i]) {
          throw Error("CUDA backend: step_batch: members share a cache");
        }
      }
    }
    if (n > positions_) return LS_ERR_SCRATCH;
    grow_batch(n);
    for (int i = 0; i < n; ++i) {
      sync_cache(bmirrors_[size_t(i)], caches[i], capacities[i], cache_lens[i]);
    }
    h_info_[cuda::Info::kFirst] = 0;
    h_info_[cuda::Info::kCount] = n;
    h_info_[cuda::Info::kSeqStride] = int(ls_gpt2_cache_floats(&c_));
    std::memcpy(h_info_ + cuda::Info::kTokens, tokens, size_t(n) * 4);
    std::memcpy(h_info_ + cuda::Info::kTokens + n, positions, size_t(n) * 4);
    if (cudaGraphExec_t g = batch_graph(n)) {
      LS_CUDA(graph_launch(g, stream_));
    } else {
      enqueue_batch(n);
    }
    // Back: the flags, the n rows of logits and each member's new row,
    // through pinned staging.
    LS_CUDA(copy_async(h_bflags_, d_bflags_, size_t(n) * sizeof(int),
                       cudaMemcpyDeviceToHost, stream_));
    LS_CUDA(copy_async(h_bstage_, d_blogits_, size_t(n) * V * 4,
                       cudaMemcpyDeviceToHost, stream_));
    const size_t cf = ls_gpt2_cache_floats(&c_);
    float* rows_stage = h_bstage_ + size_t(n) * V;
    for (int i = 0; i < n; ++i) {
      LS_CUDA(copy_async(rows_stage + size_t(i) * row,
                         d_bcache_ + size_t(i) * cf + cache_lens[i],
                         row * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    }
    LS_CUDA(cudaStreamSynchronize(stream_));
    std::memcpy(logits, h_bstage_, size_t(n) * V * sizeof(float));
    ls_status result = LS_OK;
    for (int i = 0; i < n; ++i) {
      std::memcpy(caches[i] + cache_lens[i], rows_stage + size_t(i) * row,
                  row * sizeof(float));
      note_synced(bmirrors_[size_t(i)], caches[i], capacities[i],
                  cache_lens[i] + row);
      const ls_status st = h_bflags_[i] ? LS_ERR_OUTPUT_NONFINITE : LS_OK;
      if (statuses) statuses[i] = st;
      if (st != LS_OK && result == LS_OK) result = st;
    }
    return result;
  }

  // cuda::device_batch_step_seconds: one batched step's device time (graph
  // replays, no copies), members at positions[0..n).
  double device_batch_step_seconds(int n, const int32_t* tokens,
                                   const int32_t* positions, int reps) {
    if (q8_ || n < 1 || n > positions_ || reps < 1) {
      throw Error("CUDA backend: device_batch_step_seconds: bad arguments");
    }
    grow_batch(n);
    h_info_[cuda::Info::kFirst] = 0;
    h_info_[cuda::Info::kCount] = n;
    h_info_[cuda::Info::kSeqStride] = int(ls_gpt2_cache_floats(&c_));
    std::memcpy(h_info_ + cuda::Info::kTokens, tokens, size_t(n) * 4);
    std::memcpy(h_info_ + cuda::Info::kTokens + n, positions, size_t(n) * 4);
    cudaGraphExec_t g = batch_graph(n);
    cudaEvent_t e0, e1;
    LS_CUDA(cudaEventCreate(&e0));
    LS_CUDA(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int r = 0; r <= reps; ++r) {
      LS_CUDA(cudaEventRecord(e0, stream_));
      if (g) {
        LS_CUDA(graph_launch(g, stream_));
      } else {
        enqueue_batch(n);
      }
      LS_CUDA(cudaEventRecord(e1, stream_));
      LS_CUDA(cudaEventSynchronize(e1));
      float t = 0;
      LS_CUDA(cudaEventElapsedTime(&t, e0, e1));
      if (r > 0) ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    for (auto& m : bmirrors_) m.host = nullptr;
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] / 1e3;
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
    h_info_[cuda::Info::kSeqStride] = 0;
    h_info_[cuda::Info::kTokens] = token;
    return profile_launches([&] { enqueue_step(); });
  }

  // cuda::profile_prefill: a prefill of n tokens at position 0 (last
  // logits, no copies back) launched kernel by kernel, as profile_step.
  std::vector<std::pair<std::string, double>> profile_prefill(
      const int32_t* tokens, int n) {
    if (n < 1 || n > positions_) {
      throw Error("CUDA backend: profile_prefill: bad arguments");
    }
    return profile_launches([&] {
      put_info(0, tokens, n);
      enqueue_layers(n, true);
      enqueue_final(n - 1);
    });
  }

  // The launches of `enqueue` with an event after each (launched), each
  // kernel's device time from the events, summed by label.
  template <typename F>
  std::vector<std::pair<std::string, double>> profile_launches(F enqueue) {
    std::vector<std::pair<std::string, cudaEvent_t>> marks;
    cudaEvent_t start;
    LS_CUDA(cudaEventCreate(&start));
    LS_CUDA(cudaEventRecord(start, stream_));
    marks_ = &marks;
    try {
      enqueue();
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
    mirror_.host = nullptr;
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
    mirror_.host = nullptr;
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
    h_info_[cuda::Info::kSeqStride] = 0;
    h_info_[cuda::Info::kTokens] = token;
    cudaEvent_t e0, e1;
    LS_CUDA(cudaEventCreate(&e0));
    LS_CUDA(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int r = 0; r <= reps; ++r) {  // the first is a warm-up
      LS_CUDA(cudaEventRecord(e0, stream_));
      if (graph_exec_) {
        LS_CUDA(graph_launch(graph_exec_, stream_));
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
    mirror_.host = nullptr;
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] / 1e3;
  }

 private:
  // Every kernel launch of the backend. With programmatic dependent launch
  // (pdl_, LOCKSTEP_CUDA_PDL=0 turns it off) a kernel that directly
  // follows another kernel in the stream is launched with
  // cudaLaunchAttributeProgrammaticStreamSerialization: it may start while
  // its predecessor runs, loads its weights, and waits in pdl_wait for the
  // predecessor's completion and writes (kernels.cuh). A kernel after a
  // copy, a memset or a graph launch, and every kernel while profiling, is
  // launched plainly. Neither changes what any kernel computes.
  template <typename... P, typename... A>
  void launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
              A&&... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream_;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = (pdl_ && after_kernel_ && !marks_) ? 1 : 0;
    LS_CUDA(cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...));
    after_kernel_ = true;
  }
  cudaError_t copy_async(void* dst, const void* src, size_t bytes,
                         cudaMemcpyKind kind, cudaStream_t s) {
    after_kernel_ = false;
    return cudaMemcpyAsync(dst, src, bytes, kind, s);
  }
  cudaError_t memset_async(void* dst, int v, size_t bytes, cudaStream_t s) {
    after_kernel_ = false;
    return cudaMemsetAsync(dst, v, bytes, s);
  }
  cudaError_t graph_launch(cudaGraphExec_t g, cudaStream_t s) {
    after_kernel_ = false;
    return cudaGraphLaunch(g, s);
  }

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
    const char* mm = std::getenv("LOCKSTEP_CUDA_MATMUL");
    if (mm && std::strcmp(mm, "1") == 0) matmul_ = 1;
    if (mm && std::strcmp(mm, "2") == 0) matmul_ = 2;
    const char* sp = std::getenv("LOCKSTEP_CUDA_SPLIT");
    if (sp) split_ = std::atoi(sp);
    if (const char* ss = std::getenv("LOCKSTEP_CUDA_SPLITS")) {
      std::sscanf(ss, "%d,%d,%d,%d", &splits_[0], &splits_[1], &splits_[2],
                  &splits_[3]);
    }
    const char* pdl = std::getenv("LOCKSTEP_CUDA_PDL");
    pdl_ = prop.major >= 9 && !(pdl && std::strcmp(pdl, "0") == 0);
    LS_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const char* ov = std::getenv("LOCKSTEP_CUDA_OVERLAP");
    overlap_wanted_ = !q8_ && !(ov && std::strcmp(ov, "0") == 0);

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
    mirror_.device = d_cache_;
    d_xs_ = alloc<float>(P * C);
    d_hs_ = alloc<float>(P * C);
    d_qkvs_ = alloc<float>(P * 3 * C);
    d_as_ = alloc<float>(P * C);
    d_fs_ = alloc<float>(P * 4 * C);
    d_hf_ = alloc<float>(C);
    // The flag right after the logits: one copy brings both back.
    d_logits_ = alloc<float>(V + 1);
    d_flag_ = reinterpret_cast<int*>(d_logits_ + V);
    d_info_ = alloc<int>(cuda::Info::kTokens + 2 * P);
    // matvec3's block sums and per-tile counters (zero between launches).
    d_partial_ = alloc<float>(16 * 4 * C);
    d_counters_ = alloc<unsigned>(size_t(ceil_div(4 * c_.n_embd, 32)));
    LS_CUDA(cudaMemset(d_counters_, 0,
                       size_t(ceil_div(4 * c_.n_embd, 32)) * sizeof(unsigned)));
    if (!q8_ && P > 1) {
      // Up to 12 x P x C floats of tree nodes: S = 4 for N <= 3C (q|k|v
      // too: on 132 multiprocessors x 3 its 576 blocks of S = 2 fill 1.45
      // waves, S = 4's 1,152 fill 2.9 of 3), S = 2 up to 4C.
      mpartial_floats_ = 12 * P * C;
      d_mpartial_ = alloc<float>(mpartial_floats_);
      const size_t tiles = size_t(ceil_div(int(P), cuda::kTile)) *
                           size_t(ceil_div(4 * c_.n_embd, cuda::kTile));
      d_mcounters_ = alloc<unsigned>(tiles);
      LS_CUDA(cudaMemset(d_mcounters_, 0, tiles * sizeof(unsigned)));
    }
    void* h = nullptr;
    LS_CUDA(cudaHostAlloc(&h, (cuda::Info::kTokens + 2 * P) * sizeof(int),
                          cudaHostAllocDefault));
    h_info_ = static_cast<int*>(h);
    LS_CUDA(cudaHostAlloc(&h, sizeof(int), cudaHostAllocDefault));
    h_flag_ = static_cast<int*>(h);
    const size_t stage = V + 1 + ls_gpt2_cache_row_floats(&c_);
    LS_CUDA(cudaHostAlloc(&h, stage * sizeof(float), cudaHostAllocDefault));
    h_stage_ = static_cast<float*>(h);
    device_bytes_ += (cuda::Info::kTokens + 2 * P + 1) * sizeof(int) +
                     stage * sizeof(float);  // pinned

    const int D = c_.n_embd / c_.n_head;
    attention_smem_ = cuda::attention_smem_floats(D, c_.n_ctx) * sizeof(float);
    // LOCKSTEP_CUDA_ATTN: 1 attention_kernel everywhere, 2
    // attention_pass_kernel for passes (the default, 0, uses
    // attention_pass2_kernel for D = 64 where its shared memory fits);
    // LOCKSTEP_CUDA_ATTN_EARLY: the decode attention lets its successor
    // start at once below this position (else at its end; default 128).
    const char* at = std::getenv("LOCKSTEP_CUDA_ATTN");
    if (at && (std::strcmp(at, "1") == 0 || std::strcmp(at, "2") == 0)) {
      attn_mode_ = at[0] - '0';
    }
    attn_pass_ = attn_mode_ != 1;
    const char* ae = std::getenv("LOCKSTEP_CUDA_ATTN_EARLY");
    if (ae) attn_early_ = std::atoi(ae);
    // LOCKSTEP_CUDA_TIMING_SKIP (cuda_bench's device-step timings only; the
    // results are wrong): kernels left out of every pass, a comma list of
    // qkv, attn, proj, fc, out, logits.
    if (const char* sk = std::getenv("LOCKSTEP_CUDA_TIMING_SKIP")) {
      const std::string list = std::string(",") + sk + ",";
      const std::pair<const char*, int> names[] = {
          {",qkv,", kSkipQkv},   {",attn,", kSkipAttn},
          {",proj,", kSkipProj}, {",fc,", kSkipFc},
          {",out,", kSkipOut},   {",logits,", kSkipLogits}};
      for (const auto& [nm, bit] : names) {
        if (list.find(nm) != std::string::npos) skip_ |= bit;
      }
    }
    const char* lg = std::getenv("LOCKSTEP_CUDA_LOGITS");
    logits_mode_ = lg && std::strcmp(lg, "1") == 0 ? 1 : 0;
    // LOCKSTEP_CUDA_ATTN_Q: attention_pass2_kernel's queries per block (16,
    // the default, or 32).
    const char* aq = std::getenv("LOCKSTEP_CUDA_ATTN_Q");
    if (aq && std::strcmp(aq, "32") == 0) attn_q_ = 32;
    attn_pass2_max_smem_ = size_t(prop.sharedMemPerBlockOptin);
    // LOCKSTEP_CUDA_LN=1: layernorm_kernel everywhere (the default, 0, uses
    // layernorm_rows_kernel for more than one row, n_embd a multiple of
    // 16).
    const char* ln = std::getenv("LOCKSTEP_CUDA_LN");
    if (ln && std::strcmp(ln, "1") == 0) ln_mode_ = 1;
    if (cuda::layernorm_rows_smem(c_.n_embd) > 48 * 1024 &&
        cuda::layernorm_rows_smem(c_.n_embd) <= attn_pass2_max_smem_) {
      LS_CUDA(cudaFuncSetAttribute(cuda::layernorm_rows_kernel<0>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(cuda::layernorm_rows_smem(c_.n_embd))));
    }
    // LOCKSTEP_CUDA_ATTN_STEP=1: attention_kernel<true> for the decode step
    // (the default, 0, uses attention_step_kernel for D = 64).
    const char* as = std::getenv("LOCKSTEP_CUDA_ATTN_STEP");
    if (as && std::strcmp(as, "1") == 0) attn_step_ = 1;
    set_attention_smem<false>();
    if (!q8_ && size_t(c_.n_embd) * sizeof(float) > 48 * 1024) {
      set_matvec_smem<cuda::kQkv>();
      set_matvec_smem<cuda::kGelu>();
    }
    if (!q8_) {
      set_matmul2_smem<cuda::kQkv>();
      set_matmul2_smem<cuda::kGelu>();
      set_matmul2_smem<cuda::kResidual>();
      int splits[3] = {1, 2, 4};
      for (int i = 0; i < 3; ++i) {
        if (matmul_ == 3) {
          LS_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
              &matmul2_occ_[i], cuda::matmul3_kernel<cuda::kGelu>, 256,
              cuda::matmul2_smem(splits[i])));
        } else {
          LS_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
              &matmul2_occ_[i], cuda::matmul2_kernel<cuda::kGelu, true>, 256,
              cuda::matmul2_smem(splits[i])));
        }
      }
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
    h_info_[0] = 0, h_info_[1] = 1, h_info_[2] = 0, h_info_[3] = 0;
    cudaGraph_t graph = nullptr;
    // The overlapped copies back (finish_overlapped): the graph records
    // ev_row_ once the last layer's q|k|v product has written the new cache
    // row, and ev_la_ once the first part of the logits is computed, each
    // from a branch of the capture (so the launches on stream_ keep their
    // programmatic edges).
    const size_t V = size_t(c_.n_vocab);
    // LOCKSTEP_CUDA_LOGITS_SPLIT: the first part's share in sixteenths (8).
    int sixteenths = 8;
    if (const char* ls = std::getenv("LOCKSTEP_CUDA_LOGITS_SPLIT")) {
      sixteenths = std::max(1, std::min(15, std::atoi(ls)));
    }
    v_split_ = int(V * size_t(sixteenths) / 16 / 16 * 16);
    capturing_ = overlap_wanted_ && c_.n_layer > 0 && v_split_ > 0;
    forks_ = 0;
    try {
      if (capturing_) {
        for (cudaEvent_t* e : {&ev_fork_, &ev_join_, &ev_row_, &ev_la_,
                               &ev_row_done_, &ev_la_done_}) {
          LS_CUDA(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
        }
        LS_CUDA(cudaStreamCreateWithFlags(&cap_side_, cudaStreamNonBlocking));
        LS_CUDA(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
      }
      LS_CUDA(
          cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      enqueue_step();
      if (forks_ > 0) {
        LS_CUDA(cudaEventRecord(ev_join_, cap_side_));
        LS_CUDA(cudaStreamWaitEvent(stream_, ev_join_, 0));
      }
      LS_CUDA(cudaStreamEndCapture(stream_, &graph));
      LS_CUDA(cudaGraphInstantiate(&graph_exec_, graph, 0));
      graph_ = graph;
      overlap_ = capturing_ && forks_ == 2;
      capturing_ = false;
    } catch (const Error&) {
      capturing_ = false;
      overlap_ = false;
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
    LS_CUDA(copy_async(d_info_, h_info_,
                       (cuda::Info::kTokens + 1) * sizeof(int),
                       cudaMemcpyHostToDevice, stream_));
    enqueue_layers(1, true);
    enqueue_final(0);
  }

  // During the step's capture (capturing_): an event record node `ext`
  // (cudaEventRecordExternal, so work outside the graph can wait for it)
  // after the last node on stream_, on a branch (cap_side_).
  void fork_record(cudaEvent_t ext) {
    if (!capturing_) return;
    LS_CUDA(cudaEventRecord(ev_fork_, stream_));
    LS_CUDA(cudaStreamWaitEvent(cap_side_, ev_fork_, 0));
    LS_CUDA(cudaEventRecordWithFlags(ext, cap_side_, cudaEventRecordExternal));
    ++forks_;
  }

  // finish() for a step replayed from the graph with its events: the new
  // cache row is copied back (side_) as soon as the last layer has written
  // it and copied into the caller's cache while the device computes the
  // rest; the first part of the logits likewise while the second part is
  // computed; then the rest of the logits with the flag. The same bytes
  // reach the same places as with finish().
  ls_status finish_overlapped(float* cache, size_t cache_capacity,
                              size_t cache_len, float* logits) {
    const size_t V = size_t(c_.n_vocab), S = size_t(v_split_);
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    LS_CUDA(cudaStreamWaitEvent(side_, ev_row_, 0));
    LS_CUDA(cudaMemcpyAsync(h_stage_ + V + 1, d_cache_ + cache_len,
                            row * sizeof(float), cudaMemcpyDeviceToHost,
                            side_));
    LS_CUDA(cudaEventRecord(ev_row_done_, side_));
    LS_CUDA(cudaStreamWaitEvent(side_, ev_la_, 0));
    LS_CUDA(cudaMemcpyAsync(h_stage_, d_logits_, S * sizeof(float),
                            cudaMemcpyDeviceToHost, side_));
    LS_CUDA(cudaEventRecord(ev_la_done_, side_));
    LS_CUDA(copy_async(h_stage_ + S, d_logits_ + S, (V + 1 - S) * sizeof(float),
                       cudaMemcpyDeviceToHost, stream_));
    LS_CUDA(cudaEventSynchronize(ev_row_done_));
    std::memcpy(cache + cache_len, h_stage_ + V + 1, row * sizeof(float));
    LS_CUDA(cudaEventSynchronize(ev_la_done_));
    std::memcpy(logits, h_stage_, S * sizeof(float));
    LS_CUDA(cudaStreamSynchronize(stream_));
    std::memcpy(logits + S, h_stage_ + S, (V - S) * sizeof(float));
    int flag = 0;
    std::memcpy(&flag, h_stage_ + V, sizeof(int));
    note_synced(mirror_, cache, cache_capacity, cache_len + row);
    return flag ? LS_ERR_OUTPUT_NONFINITE : LS_OK;
  }

  // Batches: device caches, logits and flags for n members (grown, never
  // shrunk; growing drops the batch graphs and the batch mirrors).
  void grow_batch(int n) {
    if (n <= slots_) return;
    drop_batch_graphs();
    for (void* p :
         {static_cast<void*>(d_bcache_), static_cast<void*>(d_blogits_),
          static_cast<void*>(d_bflags_)}) {
      if (!p) continue;
      cudaFree(p);
      allocs_.erase(std::find(allocs_.begin(), allocs_.end(), p));
    }
    if (h_bstage_) cudaFreeHost(h_bstage_);
    h_bstage_ = nullptr;
    const size_t cf = ls_gpt2_cache_floats(&c_), V = size_t(c_.n_vocab);
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    d_bcache_ = alloc<float>(size_t(n) * cf);
    d_blogits_ = alloc<float>(size_t(n) * V);
    d_bflags_ = alloc<int>(size_t(n) + 1);
    void* h = nullptr;
    const size_t stage =
        size_t(n) * (V + row) * sizeof(float) + (size_t(n) + 1) * sizeof(int);
    LS_CUDA(cudaHostAlloc(&h, stage, cudaHostAllocDefault));
    h_bstage_ = static_cast<float*>(h);
    h_bflags_ = reinterpret_cast<int*>(h_bstage_ + size_t(n) * (V + row));
    slots_ = n;
    bmirrors_.assign(size_t(n), Mirror());
    for (int i = 0; i < n; ++i) {
      bmirrors_[size_t(i)].device = d_bcache_ + size_t(i) * cf;
    }
  }

  void drop_batch_graphs() {
    for (auto& g : batch_graphs_) cudaGraphExecDestroy(g.second);
    batch_graphs_.clear();
  }

  // The batched step of n members captured once per n (null: no graphs,
  // LOCKSTEP_CUDA_GRAPH=0 or the capture failed).
  cudaGraphExec_t batch_graph(int n) {
    if (!graph_exec_) return nullptr;
    for (auto& g : batch_graphs_) {
      if (g.first == n) return g.second;
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    try {
      LS_CUDA(
          cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      enqueue_batch(n);
      LS_CUDA(cudaStreamEndCapture(stream_, &graph));
      LS_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      cudaGraphDestroy(graph);
    } catch (const Error&) {
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(stream_, &g);
      if (g) cudaGraphDestroy(g);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      return nullptr;
    }
    batch_graphs_.push_back({n, exec});
    return exec;
  }

  // The batched step's launches: the info (tokens and positions from
  // pinned memory), the flags cleared, embeddings of the n rows, per layer
  // LayerNorm of the n rows then the batched products (matvec_rows_kernel),
  // attention of each row over its own cache; ln_f of the n rows and the
  // batched logits.
  void enqueue_batch(int n) {
    LS_CUDA(copy_async(d_info_, h_info_,
                       size_t(cuda::Info::kTokens + 2 * n) * sizeof(int),
                       cudaMemcpyHostToDevice, stream_));
    LS_CUDA(memset_async(d_bflags_, 0, size_t(n) * sizeof(int), stream_));
    const int C = c_.n_embd, D = C / c_.n_head;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    launch(cuda::embed_kernel, n, 256, 0, d_w_, ls_gpt2_wpe_offset(&c_), C,
           d_info_, d_xs_, d_flag_);
    launched("embed");
    for (int l = 0; l < c_.n_layer; ++l) {
      const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
      float* kv = d_bcache_ + size_t(l) * 2 * C;
      layernorm(d_xs_, b.ln1_g, b.ln1_b, n, d_hs_);
      product_rows<cuda::kQkv>(d_hs_, b.attn_w, b.attn_b, n, C, 3 * C, d_qkvs_,
                               kv);
      launch(cuda::attention_kernel<false>, dim3(c_.n_head, n),
             cuda::kAttnThreads, attention_smem_, d_qkvs_, kv, kv + C, row, C,
             D, c_.n_ctx, d_info_, d_as_, 0);
      launched("attention");
      product_rows<cuda::kResidual>(d_as_, b.proj_w, b.proj_b, n, C, C, d_xs_,
                                    nullptr);
      layernorm(d_xs_, b.ln2_g, b.ln2_b, n, d_hs_);
      product_rows<cuda::kGelu>(d_hs_, b.fc_w, b.fc_b, n, C, 4 * C, d_fs_,
                                nullptr);
      product_rows<cuda::kResidual>(d_fs_, b.out_w, b.out_b, n, 4 * C, C, d_xs_,
                                    nullptr);
    }
    const size_t lnf = ls_gpt2_lnf_offset(&c_);
    layernorm(d_xs_, lnf, lnf + c_.n_embd, n, d_hs_);
    const size_t V = size_t(c_.n_vocab);
    if (c_.n_embd % 64 == 0 && c_.n_embd <= 1600) {
      launch(cuda::logits_rows_kernel, ceil_div(c_.n_vocab, 16), 256, 0, d_hs_,
             d_w_, n, c_.n_embd, c_.n_vocab, d_blogits_, d_bflags_);
      launched("logits rows");
    } else {
      for (int t = 0; t < n; ++t) {
        launch(cuda::logits_kernel, ceil_div(c_.n_vocab, 16), 256, 0,
               d_hs_ + size_t(t) * c_.n_embd, d_w_, c_.n_embd, c_.n_vocab,
               d_blogits_ + size_t(t) * V, d_bflags_ + t);
        launched("logits");
      }
    }
  }

  // One batched decode product: the n rows of x, 8 rows per block.
  template <int kEpi>
  void product_rows(const float* x, size_t w_off, size_t b_off, int n, int K,
                    int N, float* y, float* kv) {
    const float* w = d_w_ + w_off;
    const float* b = d_w_ + b_off;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    constexpr int kR = 8;
    if (N >= 2048) {
      const dim3 grid(ceil_div(N, 16), ceil_div(n, kR));
      launch(cuda::matvec_rows_kernel<16, kR, kEpi>, grid, 256, 0, x, w, b, n,
             K, N, y, kv, row, d_info_);
    } else {
      const dim3 grid(ceil_div(N, 8), ceil_div(n, kR));
      launch(cuda::matvec_rows_kernel<8, kR, kEpi>, grid, 128, 0, x, w, b, n, K,
             N, y, kv, row, d_info_);
    }
    launched("matvec rows", K, N);
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

  // The attention kernels' shared memory above 48 KB (kObs: the observed
  // pass's instantiations, set when an observer is first set).
  template <bool kObs>
  void set_attention_smem() {
    {
      const size_t st =
          std::min(cuda::attention_step_smem(c_.n_ctx), attn_pass2_max_smem_);
      if (st > 48 * 1024) {
        LS_CUDA(cudaFuncSetAttribute(
            cuda::attention_step_kernel<kObs>,
            cudaFuncAttributeMaxDynamicSharedMemorySize, int(st)));
      }
    }
    for (int q : {16, 32}) {
      const size_t ap2 = std::min(cuda::attention_pass2_smem(q, c_.n_ctx),
                                  attn_pass2_max_smem_);
      if (ap2 <= 48 * 1024) continue;
      LS_CUDA(cudaFuncSetAttribute(
          q == 16 ? cuda::attention_pass2_kernel<16, kObs>
                  : cuda::attention_pass2_kernel<32, kObs>,
          cudaFuncAttributeMaxDynamicSharedMemorySize, int(ap2)));
    }
    if (cuda::attention_pass_smem(c_.n_ctx) > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::attention_pass_kernel<kObs>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(cuda::attention_pass_smem(c_.n_ctx))));
    }
    if (attention_smem_ > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::attention_kernel<false, kObs>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(attention_smem_)));
      LS_CUDA(cudaFuncSetAttribute(cuda::attention_kernel<true, kObs>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(attention_smem_)));
    }
  }

  // matmul2_kernel's and matmul3_kernel's (the same pending sums) dynamic
  // shared memory limit for epilogue kEpi.
  template <int kEpi>
  void set_matmul2_smem() {
    LS_CUDA(cudaFuncSetAttribute(cuda::matmul2_kernel<kEpi, true>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 int(cuda::matmul2_smem(1))));
    LS_CUDA(cudaFuncSetAttribute(cuda::matmul3_kernel<kEpi>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 int(cuda::matmul2_smem(1))));
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
    drop_batch_graphs();
    if (h_bstage_) cudaFreeHost(h_bstage_);
    h_bstage_ = nullptr;
    for (void* p : allocs_) cudaFree(p);
    allocs_.clear();
    if (h_info_) cudaFreeHost(h_info_);
    if (h_flag_) cudaFreeHost(h_flag_);
    if (h_stage_) cudaFreeHost(h_stage_);
    h_info_ = h_flag_ = nullptr;
    h_stage_ = nullptr;
    if (stream_) cudaStreamDestroy(stream_);
    if (side_) cudaStreamDestroy(side_);
    if (cap_side_) cudaStreamDestroy(cap_side_);
    side_ = cap_side_ = nullptr;
    for (cudaEvent_t* e : {&ev_fork_, &ev_join_, &ev_row_, &ev_la_,
                           &ev_row_done_, &ev_la_done_}) {
      if (*e) cudaEventDestroy(*e);
      *e = nullptr;
    }
    stream_ = nullptr;
  }

  void put_info(int first, const int32_t* tokens, int n) {
    h_info_[cuda::Info::kFirst] = first;
    h_info_[cuda::Info::kCount] = n;
    h_info_[cuda::Info::kSeqStride] = 0;
    std::memcpy(h_info_ + cuda::Info::kTokens, tokens, size_t(n) * 4);
    LS_CUDA(copy_async(d_info_, h_info_,
                       size_t(cuda::Info::kTokens + n) * sizeof(int),
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
        launch(cuda::matvec3_kernel<kEpi, true>, grid, cuda::kV3Threads, smem,
               x, g, gb, w, b, K, N, y, kv, row, d_info_, d_partial_,
               d_counters_);
      } else {
        launch(cuda::matvec3_kernel<kEpi, false>, grid, cuda::kV3Threads, smem,
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
          launch(cuda::matvec2_kernel<16, kEpi, true>, ceil_div(N, 16), 256,
                 smem, x, g, gb, w, b, K, N, y, kv, row, d_info_);
        } else {
          launch(cuda::matvec2_kernel<16, kEpi, false>, ceil_div(N, 16), 256,
                 smem, x, g, gb, w, b, K, N, y, kv, row, d_info_);
        }
      } else {
        if (ln) {
          launch(cuda::matvec2_kernel<8, kEpi, true>, ceil_div(N, 8), 128, smem,
                 x, g, gb, w, b, K, N, y, kv, row, d_info_);
        } else {
          launch(cuda::matvec2_kernel<8, kEpi, false>, ceil_div(N, 8), 128,
                 smem, x, g, gb, w, b, K, N, y, kv, row, d_info_);
        }
      }
      launched("matvec2", K, N);
      return;
    }
    if (n == 1) {
      const size_t smem = ln ? size_t(K) * sizeof(float) : 0;
      if (N >= 2048) {
        if (ln) {
          launch(cuda::matvec_kernel<16, kEpi, true>, ceil_div(N, 16), 256,
                 smem, x, g, gb, w, b, K, N, y, kv, row, d_info_);
        } else {
          launch(cuda::matvec_kernel<16, kEpi, false>, ceil_div(N, 16), 256, 0,
                 x, g, gb, w, b, K, N, y, kv, row, d_info_);
        }
      } else {
        if (ln) {
          launch(cuda::matvec_kernel<8, kEpi, true>, ceil_div(N, 8), 128, smem,
                 x, g, gb, w, b, K, N, y, kv, row, d_info_);
        } else {
          launch(cuda::matvec_kernel<8, kEpi, false>, ceil_div(N, 8), 128, 0, x,
                 g, gb, w, b, K, N, y, kv, row, d_info_);
        }
      }
      launched("matvec", K, N);
      return;
    }
    if (ln) {
      layernorm(x, ln_g, ln_b, n, d_hs_);
      x = d_hs_;
    }
    if (matmul_ >= 2) {
      // LOCKSTEP_CUDA_SPLITS: the split of q|k|v, attention out, MLP in, MLP
      // out (0: by shape).
      const int which = kEpi == cuda::kQkv    ? 0
                        : kEpi == cuda::kGelu ? 2
                        : K == c_.n_embd      ? 1
                                              : 3;
      int S = K % 16 == 0 ? split_for(n, N) : 1;
      const int forced = splits_[which];
      if (K % 16 == 0 && (forced == 1 || forced == 2 || forced == 4) &&
          size_t(forced) * size_t(n) * size_t(N) <= mpartial_floats_) {
        S = forced;
      }
      const dim3 grid(ceil_div(N, cuda::kTile), ceil_div(n, cuda::kTile), S);
      // matmul3_kernel (the default) where its copies are whole 16-byte
      // pieces and its block sums whole tiles; else matmul2_kernel.
      const bool m3 = matmul_ == 3 && K % 256 == 0 && N % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(w) % 16 == 0;
      if (m3) {
        launch(cuda::matmul3_kernel<kEpi>, grid, 256, cuda::matmul2_smem(S), x,
               w, b, n, K, N, y, kv, row, d_info_, d_mpartial_, d_mcounters_);
        launched(S == 1   ? "matmul3"
                 : S == 2 ? "matmul3 split 2"
                          : "matmul3 split 4",
                 K, N);
        return;
      }
      if (K % 16 == 0) {
        launch(cuda::matmul2_kernel<kEpi, true>, grid, 256,
               cuda::matmul2_smem(S), x, w, b, n, K, N, y, kv, row, d_info_,
               d_mpartial_, d_mcounters_);
      } else {
        launch(cuda::matmul2_kernel<kEpi, false>, grid, 256, 0, x, w, b, n, K,
               N, y, kv, row, d_info_, d_mpartial_, d_mcounters_);
      }
      launched(S == 1   ? "matmul2"
               : S == 2 ? "matmul2 split 2"
                        : "matmul2 split 4",
               K, N);
      return;
    }
    const dim3 grid(ceil_div(N, cuda::kTile), ceil_div(n, cuda::kTile));
    if (K % 16 == 0) {
      launch(cuda::matmul_kernel<kEpi, true>, grid, 256, 0, x, w, b, n, K, N, y,
             kv, row, d_info_);
    } else {
      launch(cuda::matmul_kernel<kEpi, false>, grid, 256, 0, x, w, b, n, K, N,
             y, kv, row, d_info_);
    }
    launched("matmul", K, N);
  }

  // matmul2's split S (1, 2 or 4) for n positions and N outputs:
  // LOCKSTEP_CUDA_SPLIT forces one (where the partial sums fit); else the S
  // with the fewest rounds of work per multiprocessor, by a simple model:
  // the S * tiles blocks run occ[S] at a time on each multiprocessor, each
  // doing 16 / S block sums, ties to the smaller S.
  int split_for(int n, int N) const {
    const int tiles = ceil_div(N, cuda::kTile) * ceil_div(n, cuda::kTile);
    auto fits = [&](int S) {
      return size_t(S) * size_t(n) * size_t(N) <= mpartial_floats_;
    };
    if (split_ == 1 || split_ == 2 || split_ == 4) {
      return fits(split_) ? split_ : 1;
    }
    int best = 1;
    double best_cost = 0;
    for (int S : {1, 2, 4}) {
      if (!fits(S)) continue;
      const int occ = std::max(1, matmul2_occ_[S == 1 ? 0 : S == 2 ? 1 : 2]);
      const int slots = sm_count_ * occ;
      const double waves = double(ceil_div(tiles * S, slots));
      // A partly filled multiprocessor runs its blocks no faster than a
      // full one: each wave costs occ blocks' work.
      const double cost = waves * occ * (16.0 / S);
      if (S == 1 || cost < best_cost) best = S, best_cost = cost;
    }
    return best;
  }

  // §6 attention of the pass's n queries (q|k|v in d_qkvs_, output d_as_):
  // attention_kernel (a block per head and query) for one position (with
  // its loads issued together, kPre), D > 64 or LOCKSTEP_CUDA_ATTN=1 (then
  // without kPre for one position too); else attention_pass_kernel (16
  // queries per block; same operations, same order).
  // kObs (the observed pass): the kernels' instantiations that also write
  // the scores and probabilities (cuda::attn_obs, set by prefill_observed).
  template <bool kObs = false>
  void attention(int n, const float* keys, const float* values, size_t stride) {
    const int C = c_.n_embd, D = C / c_.n_head;
    // The keys a query of this pass attends to, at most.
    const int keys_max = h_info_[cuda::Info::kFirst] + n;
    const size_t ap2 = cuda::attention_pass2_smem(attn_q_, keys_max);
    if (n > 1 && D == 64 && attn_mode_ == 0 && ap2 <= attn_pass2_max_smem_) {
      const int pitch = cuda::attention_pass2_pitch(keys_max);
      if (attn_q_ == 16) {
        launch(cuda::attention_pass2_kernel<16, kObs>,
               dim3(c_.n_head, ceil_div(n, 16)), 128, ap2, d_qkvs_, keys,
               values, stride, C, n, pitch, d_info_, d_as_);
      } else {
        launch(cuda::attention_pass2_kernel<32, kObs>,
               dim3(c_.n_head, ceil_div(n, 32)), 256, ap2, d_qkvs_, keys,
               values, stride, C, n, pitch, d_info_, d_as_);
      }
      launched("attention pass2");
      return;
    }
    if (n > 1 && D <= 64 && attn_pass_) {
      launch(cuda::attention_pass_kernel<kObs>,
             dim3(c_.n_head, ceil_div(n, cuda::kAttnQ)), cuda::kAttnThreads,
             cuda::attention_pass_smem(c_.n_ctx), d_qkvs_, keys, values, stride,
             C, D, n, c_.n_ctx, d_info_, d_as_);
      launched("attention pass");
      return;
    }
    if (n == 1 && attn_pass_ && D == 64 && attn_step_ == 0 &&
        cuda::attention_step_smem(c_.n_ctx) <= attn_pass2_max_smem_) {
      launch(cuda::attention_step_kernel<kObs>, c_.n_head, cuda::kAsThreads,
             cuda::attention_step_smem(c_.n_ctx), d_qkvs_, keys, values, stride,
             c_.n_ctx, d_info_, d_as_, attn_early_);
      launched("attention step");
      return;
    }
    if (n == 1 && attn_pass_) {
      launch(cuda::attention_kernel<true, kObs>, dim3(c_.n_head, n),
             cuda::kAttnThreads, attention_smem_, d_qkvs_, keys, values, stride,
             C, D, c_.n_ctx, d_info_, d_as_, attn_early_);
    } else {
      launch(cuda::attention_kernel<false, kObs>, dim3(c_.n_head, n),
             cuda::kAttnThreads, attention_smem_, d_qkvs_, keys, values, stride,
             C, D, c_.n_ctx, d_info_, d_as_, 0);
    }
    launched("attention");
  }

  void layernorm(const float* x, size_t g_off, size_t b_off, int n, float* y) {
    layernorm_at(x, d_w_ + g_off, d_w_ + b_off, n, y);
  }

  // layernorm with the gain g and bias b given as device pointers (the
  // observed int8 pass's, in the int8 weights).
  void layernorm_at(const float* x, const float* g, const float* b, int n,
                    float* y) {
    // One row (ln_f of a step): layernorm_kernel, 2 us faster there.
    if (ln_mode_ == 0 && n > 1 && c_.n_embd % 16 == 0 &&
        cuda::layernorm_rows_smem(c_.n_embd) <= attn_pass2_max_smem_) {
      launch(c_.n_embd == 768 ? cuda::layernorm_rows_kernel<48>
                              : cuda::layernorm_rows_kernel<0>,
             ceil_div(n, cuda::kLnRows), 32 * cuda::kLnRows,
             cuda::layernorm_rows_smem(c_.n_embd), x, g, b, c_.n_embd, n, y);
      launched("layernorm rows");
      return;
    }
    launch(cuda::layernorm_kernel, n, 256, size_t(c_.n_embd) * sizeof(float), x,
           g, b, c_.n_embd, y);
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
    const int C = c_.n_embd;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    launch(cuda::embed_kernel, n, 256, 0, d_w_, ls_gpt2_wpe_offset(&c_), C,
           d_info_, d_xs_, d_flag_);
    launched("embed");
    for (int l = 0; l < c_.n_layer; ++l) {
      const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
      float* kv = with_cache ? d_cache_ + size_t(l) * 2 * C : nullptr;
      if (!(skip_ & kSkipQkv)) {
        product<cuda::kQkv>(d_xs_, true, b.ln1_g, b.ln1_b, b.attn_w, b.attn_b,
                            n, C, 3 * C, d_qkvs_, kv);
      }
      if (l == c_.n_layer - 1) fork_record(ev_row_);
      const float* keys = with_cache ? kv : d_qkvs_ + C;
      const float* values = with_cache ? kv + C : d_qkvs_ + 2 * C;
      const size_t stride = with_cache ? row : size_t(3 * C);
      if (!(skip_ & kSkipAttn)) attention(n, keys, values, stride);
      if (!(skip_ & kSkipProj)) {
        product<cuda::kResidual>(d_as_, false, 0, 0, b.proj_w, b.proj_b, n, C,
                                 C, d_xs_, nullptr);
      }
      if (!(skip_ & kSkipFc)) {
        product<cuda::kGelu>(d_xs_, true, b.ln2_g, b.ln2_b, b.fc_w, b.fc_b, n,
                             C, 4 * C, d_fs_, nullptr);
      }
      if (!(skip_ & kSkipOut)) {
        product<cuda::kResidual>(d_fs_, false, 0, 0, b.out_w, b.out_b, n, 4 * C,
                                 C, d_xs_, nullptr);
      }
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
    if (capturing_) {
      if (!(skip_ & kSkipLogits)) logits(0, v_split_);
      fork_record(ev_la_);
      if (!(skip_ & kSkipLogits)) logits(v_split_, c_.n_vocab);
      return;
    }
    if (!(skip_ & kSkipLogits)) logits(0, c_.n_vocab);
  }

  // The logits of vocabulary rows [v0, v1) of the position in d_hf_.
  void logits(int v0, int v1) {
    const int C = c_.n_embd;
    const float* w = d_w_ + size_t(v0) * size_t(C);
    if (C == 768 && logits_mode_ == 0) {
      launch(cuda::logits2_kernel<48>, ceil_div(v1 - v0, 8), 128, 0, d_hf_, w,
             v1 - v0, d_logits_ + v0, d_flag_);
      launched("logits2");
      return;
    }
    launch(cuda::logits_kernel, ceil_div(v1 - v0, 16), 256, 0, d_hf_, w, C,
           v1 - v0, d_logits_ + v0, d_flag_);
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
      launch(cuda::quantize_q8_kernel<true>, n, 256, smem, x, q8_floats(ln_g),
             q8_floats(ln_b), K, d_qx_, d_sx_, d_bad_);
    } else {
      launch(cuda::quantize_q8_kernel<false>, n, 256, smem, x, nullptr, nullptr,
             K, d_qx_, d_sx_, d_bad_);
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
      launch(cuda::q8_matmul_kernel<1, kEpi>, ceil_div(N, cuda::kQ8Cols),
             32 * warps, cuda::q8_matmul_smem(1, K), d_qx_, d_sx_, d_bad_, m,
             bias, 1, K, N, y, kv, row, d_info_, d_flag_);
    } else {
      const dim3 grid(ceil_div(N, cuda::kQ8Cols), ceil_div(n, 8));
      launch(cuda::q8_matmul_kernel<8, kEpi>, grid, 512,
             cuda::q8_matmul_smem(8, K), d_qx_, d_sx_, d_bad_, m, bias, n, K, N,
             y, kv, row, d_info_, d_flag_);
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
      launch(cuda::q8_fused_kernel<kEpi, kLn>, blocks, 32 * warps,
             cuda::q8_fused_smem(K), x, kLn ? q8_floats(ln_g) : nullptr,
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
    const int C = c_.n_embd;
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    launch(cuda::embed_q8_kernel, n, 256, 0, d_wq_,
           d_wq_ + ls_gpt2_q8_wpe_offset(&c_), C, c_.n_vocab, c_.n_ctx, d_info_,
           d_xs_, d_flag_);
    launched("embed q8");
    for (int l = 0; l < c_.n_layer; ++l) {
      const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c_, l);
      float* kv = with_cache ? d_cache_ + size_t(l) * 2 * C : nullptr;
      project_q8<cuda::kQkv, true>(d_xs_, b.ln1_g, b.ln1_b, b.attn_w, b.attn_b,
                                   n, C, 3 * C, d_qkvs_, kv);
      const float* keys = with_cache ? kv : d_qkvs_ + C;
      const float* values = with_cache ? kv + C : d_qkvs_ + 2 * C;
      const size_t stride = with_cache ? row : size_t(3 * C);
      attention(n, keys, values, stride);
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

  // ------------------------------------------------------------ observed
  // The observed prefill (set_observer; docs/cuda.md "Observed prefill"):
  // enqueue_layers's pass over the n positions with each tap the
  // unobserved pass keeps inside a kernel made a tensor of its own, and
  // each tap copied to the host after it is computed and handed to the
  // observer (core/ls_gpt2.h's taps, names and shapes: one call per
  // position, head -1, in the reference's order), while nothing later has
  // overwritten it. What changes against the unobserved pass is only where
  // values are stored, never an operation or its operands:
  //  - LayerNorm before a product is its own launch into d_hs_ (ln_1 and
  //    ln_2; the tiled products do that unobserved too, the one-position
  //    kernels fuse it), then the product on d_hs_;
  //  - attention's c_proj, c_fc and the MLP's c_proj store their outputs
  //    (kStore) and the residual adds and the GELU follow as their own
  //    element-wise launches (kernels_observe.cuh): the epilogues'
  //    expressions on the same values;
  //  - int8: the quantization is its own launch (the fused one-position
  //    kernel not used), ln_f included, so that ln_f is stored;
  //  - attention is the unobserved pass's kernel in its kObs instantiation,
  //    which also writes each query's scores and probabilities from its
  //    shared memory to d_att_obs_ (cuda::attn_obs).
  // Every kernel is launched plainly
  // (no programmatic dependent launch: nothing of the observed pass starts
  // before its predecessor ends), which changes when kernels run, not what
  // they compute. The logits and the cache rows are copied back as by the
  // unobserved prefill, with the same bits (tests:
  // tests/cuda_observer_test.cc).
  ls_status prefill_observed(float* cache, size_t cache_capacity,
                             size_t cache_len, const int32_t* tokens, int n,
                             int32_t position, float* logits) {
    struct PlainLaunches {
      bool& pdl;
      const bool was;
      ~PlainLaunches() { pdl = was; }
    } plain{pdl_, pdl_};
    pdl_ = false;
    // Where the attention kernels write the scores and probabilities:
    // [n][heads][position + n] each (the row of the query at position p
    // holds p + 1). Copied from pageable memory: staged before the call
    // returns, in stream order.
    const cuda::AttnObs ao = {
        d_att_obs_,
        d_att_obs_ + size_t(positions_) * size_t(c_.n_head) * size_t(c_.n_ctx),
        position + n};
    LS_CUDA(cudaMemcpyToSymbolAsync(cuda::attn_obs, &ao, sizeof ao, 0,
                                    cudaMemcpyHostToDevice, stream_));
    after_kernel_ = false;
    sync_cache(mirror_, cache, cache_capacity, cache_len);
    put_info(position, tokens, n);
    enqueue_layers_observed(n, position);
    const size_t V = size_t(c_.n_vocab), C = size_t(c_.n_embd);
    for (int t = 0; t < n; ++t) {
      if (q8_) {
        const size_t lnf = ls_gpt2_q8_lnf_offset(&c_);
        layernorm_at(d_xs_ + size_t(t) * C, q8_floats(lnf),
                     q8_floats(lnf + 4 * C), 1, d_hf_);
        quantize_q8(d_hf_, false, 0, 0, 1, c_.n_embd);
        product_q8<cuda::kLogitsQ8>(0, SIZE_MAX, 1, c_.n_embd, c_.n_vocab,
                                    d_logits_, nullptr);
      } else {
        enqueue_final(t);  // ln_f into d_hf_, then the logits
      }
      float* row = logits + size_t(t) * V;
      LS_CUDA(copy_async(row, d_logits_, V * sizeof(float),
                         cudaMemcpyDeviceToHost, stream_));
      observe_rows(c_.n_layer, LS_TAP_LNF, d_hf_, position + t, 1, C);
      obs_(obs_user_, c_.n_layer, LS_TAP_LOGITS, position + t, -1, row, V);
    }
    return finish(cache, cache_capacity, cache_len, n, nullptr);
  }

  // The n rows of `width` floats at device `rows` (positions first ..
  // first+n-1), copied to the host once the stream has computed them, each
  // handed to the observer.
  void observe_rows(int layer, ls_gpt2_tap tap, const float* rows, int first,
                    int n, size_t width) {
    const size_t floats = size_t(n) * width;
    if (floats > obs_host_.size()) {
      throw Error("CUDA backend: observed tap larger than its buffer");
    }
    LS_CUDA(copy_async(obs_host_.data(), rows, floats * sizeof(float),
                       cudaMemcpyDeviceToHost, stream_));
    LS_CUDA(cudaStreamSynchronize(stream_));
    for (int t = 0; t < n; ++t) {
      obs_(obs_user_, layer, tap, first + t, -1,
           obs_host_.data() + size_t(t) * width, width);
    }
  }

  // The scores and probabilities the attention kernels wrote (attn_obs:
  // [n][heads][first + n] each), in the reference's order: per position,
  // per head, its scores then its probabilities (position p's p + 1).
  void observe_attention(int layer, int n, int first) {
    const size_t H = size_t(c_.n_head), pitch = size_t(first + n);
    const size_t floats = size_t(n) * H * pitch;
    const size_t probs_at =
        size_t(positions_) * size_t(c_.n_head) * size_t(c_.n_ctx);
    if (2 * floats > obs_host_.size()) {
      throw Error("CUDA backend: observed attention larger than its buffer");
    }
    LS_CUDA(copy_async(obs_host_.data(), d_att_obs_, floats * sizeof(float),
                       cudaMemcpyDeviceToHost, stream_));
    LS_CUDA(copy_async(obs_host_.data() + floats, d_att_obs_ + probs_at,
                       floats * sizeof(float), cudaMemcpyDeviceToHost,
                       stream_));
    LS_CUDA(cudaStreamSynchronize(stream_));
    for (int t = 0; t < n; ++t) {
      const int pos = first + t;
      for (size_t h = 0; h < H; ++h) {
        const float* sc = obs_host_.data() + (size_t(t) * H + h) * pitch;
        obs_(obs_user_, layer, LS_TAP_ATT_SCORE, pos, int(h), sc,
             size_t(pos) + 1);
        obs_(obs_user_, layer, LS_TAP_ATT_PROB, pos, int(h), sc + floats,
             size_t(pos) + 1);
      }
    }
  }

  // x[0..count) += y[0..count) (the residual add kResidual fuses).
  void residual_add(float* x, const float* y, size_t count) {
    launch(cuda::residual_add_kernel, ceil_div(int(count), 256), 256, 0, x, y,
           count);
    launched("residual add");
  }

  // f[0..count) = gelu(f) in place (the GELU kGelu fuses).
  void gelu_inplace(float* f, size_t count) {
    launch(cuda::gelu_inplace_kernel, ceil_div(int(count), 256), 256, 0, f,
           count);
    launched("gelu");
  }

  // enqueue_layers (with the cache) and enqueue_layers_q8, observed:
  // positions first .. first+n-1 of d_info_.
  void enqueue_layers_observed(int n, int first) {
    const int C = c_.n_embd;
    const size_t Cs = size_t(C), N = size_t(n);
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    if (q8_) {
      launch(cuda::embed_q8_kernel, n, 256, 0, d_wq_,
             d_wq_ + ls_gpt2_q8_wpe_offset(&c_), C, c_.n_vocab, c_.n_ctx,
             d_info_, d_xs_, d_flag_);
      launched("embed q8");
    } else {
      launch(cuda::embed_kernel, n, 256, 0, d_w_, ls_gpt2_wpe_offset(&c_), C,
             d_info_, d_xs_, d_flag_);
      launched("embed");
    }
    observe_rows(-1, LS_TAP_EMBED, d_xs_, first, n, Cs);
    for (int l = 0; l < c_.n_layer; ++l) {
      float* kv = d_cache_ + size_t(l) * 2 * Cs;
      // §6: h = LayerNorm(x; ln_1), qkv = h . c_attn + b (keys and values
      // to the cache rows too).
      if (q8_) {
        const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c_, l);
        layernorm_at(d_xs_, q8_floats(b.ln1_g), q8_floats(b.ln1_b), n, d_hs_);
        observe_rows(l, LS_TAP_LN1, d_hs_, first, n, Cs);
        quantize_q8(d_hs_, false, 0, 0, n, C);
        product_q8<cuda::kQkv>(b.attn_w, b.attn_b, n, C, 3 * C, d_qkvs_, kv);
      } else {
        const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
        layernorm(d_xs_, b.ln1_g, b.ln1_b, n, d_hs_);
        observe_rows(l, LS_TAP_LN1, d_hs_, first, n, Cs);
        product<cuda::kQkv>(d_hs_, false, 0, 0, b.attn_w, b.attn_b, n, C, 3 * C,
                            d_qkvs_, kv);
      }
      observe_rows(l, LS_TAP_QKV, d_qkvs_, first, n, 3 * Cs);
      attention<true>(n, kv, kv + C, row);
      observe_attention(l, n, first);
      observe_rows(l, LS_TAP_ATT_OUT, d_as_, first, n, Cs);
      // x += a . c_proj + b.
      if (q8_) {
        const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c_, l);
        quantize_q8(d_as_, false, 0, 0, n, C);
        product_q8<cuda::kStore>(b.proj_w, b.proj_b, n, C, C, d_ys_, nullptr);
      } else {
        const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
        product<cuda::kStore>(d_as_, false, 0, 0, b.proj_w, b.proj_b, n, C, C,
                              d_ys_, nullptr);
      }
      observe_rows(l, LS_TAP_PROJ, d_ys_, first, n, Cs);
      residual_add(d_xs_, d_ys_, N * Cs);
      observe_rows(l, LS_TAP_RES1, d_xs_, first, n, Cs);
      // x += gelu(LayerNorm(x; ln_2) . c_fc + b) . c_proj + b.
      if (q8_) {
        const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c_, l);
        layernorm_at(d_xs_, q8_floats(b.ln2_g), q8_floats(b.ln2_b), n, d_hs_);
        observe_rows(l, LS_TAP_LN2, d_hs_, first, n, Cs);
        quantize_q8(d_hs_, false, 0, 0, n, C);
        product_q8<cuda::kStore>(b.fc_w, b.fc_b, n, C, 4 * C, d_fs_, nullptr);
      } else {
        const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
        layernorm(d_xs_, b.ln2_g, b.ln2_b, n, d_hs_);
        observe_rows(l, LS_TAP_LN2, d_hs_, first, n, Cs);
        product<cuda::kStore>(d_hs_, false, 0, 0, b.fc_w, b.fc_b, n, C, 4 * C,
                              d_fs_, nullptr);
      }
      observe_rows(l, LS_TAP_FC, d_fs_, first, n, 4 * Cs);
      gelu_inplace(d_fs_, N * 4 * Cs);
      observe_rows(l, LS_TAP_GELU, d_fs_, first, n, 4 * Cs);
      if (q8_) {
        const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c_, l);
        quantize_q8(d_fs_, false, 0, 0, n, 4 * C);
        product_q8<cuda::kStore>(b.out_w, b.out_b, n, 4 * C, C, d_ys_, nullptr);
      } else {
        const ls_gpt2_block b = ls_gpt2_block_offsets(&c_, l);
        product<cuda::kStore>(d_fs_, false, 0, 0, b.out_w, b.out_b, n, 4 * C, C,
                              d_ys_, nullptr);
      }
      observe_rows(l, LS_TAP_MLP_OUT, d_ys_, first, n, Cs);
      residual_add(d_xs_, d_ys_, N * Cs);
      observe_rows(l, LS_TAP_RES2, d_xs_, first, n, Cs);
    }
  }

  // The int8 product's shared memory above 48 KB for the kStore epilogue
  // (set_q8_smem's limits for the observed pass's products).
  void set_q8_store_smem() {
    const auto attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
    const int K = 4 * c_.n_embd;
    const int big = int(cuda::q8_matmul_smem(8, K));
    if (big > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<8, cuda::kStore>,
                                   attr, big));
    }
    const int one = int(cuda::q8_matmul_smem(1, K));
    if (one > 48 * 1024) {
      LS_CUDA(cudaFuncSetAttribute(cuda::q8_matmul_kernel<1, cuda::kStore>,
                                   attr, one));
    }
  }

  // Copies back the logits (unless null) with the flag, and the n cache rows
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
    if (logits) {
      // The logits and the flag after them.
      LS_CUDA(copy_async(h_stage_, d_logits_, (V + 1) * sizeof(float),
                         cudaMemcpyDeviceToHost, stream_));
    } else {
      LS_CUDA(copy_async(h_flag_, d_flag_, sizeof(int), cudaMemcpyDeviceToHost,
                         stream_));
    }
    if (stage_row) {
      LS_CUDA(copy_async(h_stage_ + V + 1, d_cache_ + cache_len,
                         row * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    } else if (cache && rows) {
      LS_CUDA(copy_async(cache + cache_len, d_cache_ + cache_len,
                         rows * sizeof(float), cudaMemcpyDeviceToHost,
                         stream_));
    }
    LS_CUDA(cudaStreamSynchronize(stream_));
    int flag = 0;
    if (logits) {
      std::memcpy(logits, h_stage_, V * sizeof(float));
      std::memcpy(&flag, h_stage_ + V, sizeof(int));
    } else {
      flag = *h_flag_;
    }
    if (stage_row) std::memcpy(cache + cache_len, h_stage_ + V + 1, row * 4);
    if (cache) note_synced(mirror_, cache, cache_capacity, cache_len + rows);
    return flag ? LS_ERR_OUTPUT_NONFINITE : LS_OK;
  }

  // The device mirror m holds the host's rows [0, cache_len) when the
  // caller passes the buffer it passed last (same pointer and capacity), no
  // longer than the mirror holds, and the ends of row cache_len - 1 (sampled
  // when the mirror got it) are unchanged; otherwise those rows are uploaded
  // (docs/cuda.md). A shorter length (a rewound session) is trusted too.
  void sync_cache(Mirror& m, const float* cache, size_t capacity,
                  size_t cache_len) {
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    const size_t rows = cache_len / row;
    bool trusted =
        cache == m.host && capacity == m.capacity && cache_len <= m.synced_len;
    if (trusted && rows > 0) {
      const float* last = cache + cache_len - row;
      const float* s = m.samples.data() + (rows - 1) * 2 * kSample;
      trusted = std::memcmp(last, s, sizeof(float) * kSample) == 0 &&
                std::memcmp(last + row - kSample, s + kSample,
                            sizeof(float) * kSample) == 0;
    }
    m.sample_from = rows;
    if (!trusted && rows > 0) {
      LS_CUDA(copy_async(m.device, cache, cache_len * sizeof(float),
                         cudaMemcpyHostToDevice, stream_));
      ++uploads_;
      m.sample_from = 0;
    }
  }

  // After a call: the mirror equals the host's rows [0, len); samples the
  // rows it did not hold before (uploaded or appended).
  void note_synced(Mirror& m, const float* cache, size_t capacity, size_t len) {
    const size_t row = ls_gpt2_cache_row_floats(&c_);
    m.host = cache, m.capacity = capacity, m.synced_len = len;
    if (row < size_t(kSample)) {
      m.host = nullptr;  // too short to sample: always upload
      return;
    }
    if (m.samples.empty()) m.samples.assign(size_t(c_.n_ctx) * 2 * kSample, 0);
    for (size_t r = m.sample_from; r < len / row; ++r) {
      const float* p = cache + r * row;
      float* s = m.samples.data() + r * 2 * kSample;
      std::memcpy(s, p, sizeof(float) * kSample);
      std::memcpy(s + kSample, p + row - kSample, sizeof(float) * kSample);
    }
  }

  ls_gpt2_config c_;
  int positions_;
  // set_observer: the observer, and the observed pass's buffers (a
  // product before its residual add [P][C] and the attention scores and
  // probabilities [2][P][heads][n_ctx] on the device; one tap's rows, up to
  // that or [P][4C], on the host).
  ls_gpt2_observer obs_ = nullptr;
  void* obs_user_ = nullptr;
  float* d_ys_ = nullptr;
  float* d_att_obs_ = nullptr;  // scores, then probabilities
  std::vector<float> obs_host_;
  std::string device_name_;
  size_t device_bytes_ = 0;
  std::vector<void*> allocs_;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  size_t attention_smem_ = 0;
  int matvec_ = 0;         // LOCKSTEP_CUDA_MATVEC (0: 3 or 1 by shape)
  bool q8_ = false;        // grouped int8 weights (d_wq_)
  bool q8_fuse_ = true;    // LOCKSTEP_CUDA_Q8_FUSE
  bool pdl_ = true;        // LOCKSTEP_CUDA_PDL: programmatic dependent launch
  bool attn_pass_ = true;  // LOCKSTEP_CUDA_ATTN=1: attention_kernel<false>
  int attn_mode_ = 0;      // LOCKSTEP_CUDA_ATTN (0: pass2, 1, 2)
  enum {
    kSkipQkv = 1,
    kSkipAttn = 2,
    kSkipProj = 4,
    kSkipFc = 8,
    kSkipOut = 16,
    kSkipLogits = 32
  };
  int skip_ = 0;  // LOCKSTEP_CUDA_TIMING_SKIP (timings only)
  // The step's overlapped copies back (LOCKSTEP_CUDA_OVERLAP=0: off).
  bool overlap_wanted_ = false, overlap_ = false, capturing_ = false;
  int forks_ = 0, v_split_ = 0;
  cudaStream_t side_ = nullptr, cap_side_ = nullptr;
  cudaEvent_t ev_fork_ = nullptr, ev_join_ = nullptr, ev_row_ = nullptr;
  cudaEvent_t ev_la_ = nullptr, ev_row_done_ = nullptr, ev_la_done_ = nullptr;
  int attn_early_ = 128;          // LOCKSTEP_CUDA_ATTN_EARLY
  int splits_[4] = {0, 0, 0, 0};  // LOCKSTEP_CUDA_SPLITS
  int attn_q_ = 16;               // LOCKSTEP_CUDA_ATTN_Q
  int attn_step_ = 0;             // LOCKSTEP_CUDA_ATTN_STEP
  int ln_mode_ = 0;               // LOCKSTEP_CUDA_LN (1: layernorm_kernel)
  int logits_mode_ = 0;           // LOCKSTEP_CUDA_LOGITS=1: logits_kernel
  size_t attn_pass2_max_smem_ = 0;
  bool after_kernel_ = false;  // the stream's last operation was a kernel
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
  // matmul3 and matmul2 (LOCKSTEP_CUDA_MATMUL, default 3; 2 matmul2, 1
  // matmul): the split's tree nodes [S][n][N], per-tile counters,
  // LOCKSTEP_CUDA_SPLIT (0: by split_for), and the blocks per
  // multiprocessor for S = 1, 2, 4 (of matmul3 when it is the default).
  int matmul_ = 3;
  int split_ = 0;
  float* d_mpartial_ = nullptr;
  size_t mpartial_floats_ = 0;
  unsigned* d_mcounters_ = nullptr;
  int matmul2_occ_[3] = {1, 1, 1};
  int* h_info_ = nullptr;
  int* h_flag_ = nullptr;
  float* h_stage_ = nullptr;  // pinned: the logits, the flag, a cache row
  // The single sequence's mirror (sync_cache).
  Mirror mirror_;
  long uploads_ = 0;
  // Batches (step_batch): member i's device cache is d_bcache_ + i *
  // cache floats, mirrored by bmirrors_[i]; its logits d_blogits_ + i * V,
  // its flag d_bflags_[i]; pinned staging for the logits and new rows; one
  // graph per batch size.
  int slots_ = 0;
  float* d_bcache_ = nullptr;
  float* d_blogits_ = nullptr;
  int* d_bflags_ = nullptr;
  float* h_bstage_ = nullptr;
  int* h_bflags_ = nullptr;
  std::vector<Mirror> bmirrors_;
  std::vector<std::pair<int, cudaGraphExec_t>> batch_graphs_;
};

#ifndef LOCKSTEP_CUDA_FAST
double median_of(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
#endif

CudaBackend& as_cuda(Gpt2Backend& b, const char* what) {
  auto* cb = dynamic_cast<CudaBackend*>(&b);
  if (!cb) throw Error(std::string(what) + ": not a CUDA backend");
  return *cb;
}

}  // namespace

#ifdef LOCKSTEP_CUDA_FAST
// The "cost of exactness" variant (backends/cuda/cuda_backend_fast.cu):
// only the entries the comparison needs.
namespace cuda_fast {

std::unique_ptr<Gpt2Backend> make_cuda_backend(const ls_gpt2_config& c,
                                               const float* weights,
                                               size_t words, int max_prefix,
                                               ls_gpt2_layout layout) {
  return std::make_unique<CudaBackend>(c, weights, words, max_prefix, layout);
}

#else
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

#endif  // LOCKSTEP_CUDA_FAST

double device_prefill_seconds(Gpt2Backend& b, const int32_t* tokens, int n,
                              int reps) {
  return as_cuda(b, "device_prefill_seconds")
      .device_prefill_seconds(tokens, n, reps);
}

std::vector<std::pair<std::string, double>> profile_step(Gpt2Backend& b,
                                                         int position,
                                                         int token) {
  return as_cuda(b, "profile_step").profile_step(position, token);
}

std::vector<std::pair<std::string, double>> profile_prefill(
    Gpt2Backend& b, const int32_t* tokens, int n) {
  return as_cuda(b, "profile_prefill").profile_prefill(tokens, n);
}

double device_step_seconds(Gpt2Backend& b, int position, int token, int reps) {
  return as_cuda(b, "device_step_seconds")
      .device_step_seconds(position, token, reps);
}

ls_status step_batch(Gpt2Backend& b, int n, float* const* caches,
                     const size_t* capacities, const size_t* cache_lens,
                     const int32_t* tokens, const int32_t* positions,
                     float* logits, ls_status* statuses) {
  return as_cuda(b, "step_batch")
      .step_batch(n, caches, capacities, cache_lens, tokens, positions, logits,
                  statuses);
}

double device_batch_step_seconds(Gpt2Backend& b, int n, const int32_t* tokens,
                                 const int32_t* positions, int reps) {
  return as_cuda(b, "device_batch_step_seconds")
      .device_batch_step_seconds(n, tokens, positions, reps);
}

#ifdef LOCKSTEP_CUDA_FAST
}  // namespace cuda_fast
#else
}  // namespace cuda
#endif
}  // namespace lockstep::backends
