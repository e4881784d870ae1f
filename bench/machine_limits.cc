// See machine_limits.h.
#include "bench/machine_limits.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lockstep::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBufferBytes = size_t(1) << 30;

struct Buffer {
  float* p;
  size_t n;
};

const Buffer& buffer() {
  static const Buffer b = [] {
    float* p =
        static_cast<float*>(std::aligned_alloc(size_t(2) << 20, kBufferBytes));
#ifdef __linux__
    madvise(p, kBufferBytes, MADV_HUGEPAGE);  // advisory: failure is fine
#endif
    uint32_t r = 1;
    for (size_t i = 0; i < kBufferBytes / 4; ++i) {
      r = r * 1664525u + 1013904223u;
      p[i] = float(r >> 8) * 0x1p-24f;
    }
    return Buffer{p, kBufferBytes / 4};
  }();
  return b;
}

// Sums p[0, n) read as `streams` interleaved sequential streams (stream s
// reads the s-th of `streams` equal parts), 32 floats per stream and round,
// into 8 independent sums so the loop is bound by loads, not by the latency
// of one chain of additions. More streams engage more of the hardware
// prefetchers: on the 2-core AMD EPYC of docs/benchmarks.md one thread
// reads 19.6 GB/s as one stream and 30.5 GB/s as eight. The caller passes
// n a multiple of 32 * streams.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) float sum_avx512(const float* p, size_t n,
                                                    int streams) {
  __m512 a[8];
  for (auto& x : a) x = _mm512_setzero_ps();
  const size_t part = n / size_t(streams);
  for (size_t i = 0; i < part; i += 32) {
    for (int s = 0; s < streams; ++s) {
      const float* q = p + size_t(s) * part + i;
      const int j = (2 * s) & 7;
      a[j] = _mm512_add_ps(a[j], _mm512_loadu_ps(q));
      a[j + 1] = _mm512_add_ps(a[j + 1], _mm512_loadu_ps(q + 16));
    }
  }
  __m512 t = a[0];
  for (int i = 1; i < 8; ++i) t = _mm512_add_ps(t, a[i]);
  float out[16];
  _mm512_storeu_ps(out, t);
  return out[0];
}
__attribute__((target("avx2"))) float sum_avx2(const float* p, size_t n,
                                               int streams) {
  __m256 a[8];
  for (auto& x : a) x = _mm256_setzero_ps();
  const size_t part = n / size_t(streams);
  for (size_t i = 0; i < part; i += 32) {
    for (int s = 0; s < streams; ++s) {
      const float* q = p + size_t(s) * part + i;
      for (int k = 0; k < 4; ++k) {
        const int j = (4 * s + k) & 7;
        a[j] = _mm256_add_ps(a[j], _mm256_loadu_ps(q + 8 * k));
      }
    }
  }
  __m256 t = a[0];
  for (int i = 1; i < 8; ++i) t = _mm256_add_ps(t, a[i]);
  float out[8];
  _mm256_storeu_ps(out, t);
  return out[0];
}
#endif

float sum(const float* p, size_t n, int streams) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return sum_avx512(p, n, streams);
  if (__builtin_cpu_supports("avx2")) return sum_avx2(p, n, streams);
#endif
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const size_t part = n / size_t(streams);
  for (size_t i = 0; i < part; i += 32) {
    for (int s = 0; s < streams; ++s) {
      const float* q = p + size_t(s) * part + i;
      for (int k = 0; k < 32; ++k) a[k & 7] += q[k];
    }
  }
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

// Runs job(t) on `threads` threads released together (the caller is
// thread 0) and returns the seconds from the release to the last join.
template <typename Job>
double run_team(int threads, Job job) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> team;
  for (int t = 1; t < threads; ++t) {
    team.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      job(t);
    });
  }
  while (ready.load() != threads - 1) {
  }
  const auto t0 = Clock::now();
  go.store(true);
  job(0);
  for (auto& th : team) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

#if defined(__x86_64__)
__attribute__((target("avx512f"), noinline)) double peak_avx512(long rounds) {
  __m512 m[8], a[8];
  for (int i = 0; i < 8; ++i) {
    m[i] = _mm512_set1_ps(1.0f + float(i) * 1e-3f);
    a[i] = _mm512_set1_ps(0.5f * float(i));
  }
  const __m512 c = _mm512_set1_ps(0.9999999f), d = _mm512_set1_ps(1e-9f);
  for (long r = 0; r < rounds; ++r) {
    for (int i = 0; i < 8; ++i) {
      m[i] = _mm512_mul_ps(m[i], c);
      a[i] = _mm512_add_ps(a[i], d);
    }
  }
  __m512 s = _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) s = _mm512_add_ps(s, _mm512_add_ps(m[i], a[i]));
  float out[16];
  _mm512_storeu_ps(out, s);
  return double(rounds) * 16.0 * 16.0 + out[0] * 0.0;  // flops
}
__attribute__((target("avx2"), noinline)) double peak_avx2(long rounds) {
  __m256 m[8], a[8];
  for (int i = 0; i < 8; ++i) {
    m[i] = _mm256_set1_ps(1.0f + float(i) * 1e-3f);
    a[i] = _mm256_set1_ps(0.5f * float(i));
  }
  const __m256 c = _mm256_set1_ps(0.9999999f), d = _mm256_set1_ps(1e-9f);
  for (long r = 0; r < rounds; ++r) {
    for (int i = 0; i < 8; ++i) {
      m[i] = _mm256_mul_ps(m[i], c);
      a[i] = _mm256_add_ps(a[i], d);
    }
  }
  __m256 s = _mm256_setzero_ps();
  for (int i = 0; i < 8; ++i) s = _mm256_add_ps(s, _mm256_add_ps(m[i], a[i]));
  float out[8];
  _mm256_storeu_ps(out, s);
  return double(rounds) * 16.0 * 8.0 + out[0] * 0.0;
}
#endif

typedef float V4 __attribute__((vector_size(16)));
__attribute__((noinline)) double peak_generic(long rounds) {
  V4 m[8], a[8];
  for (int i = 0; i < 8; ++i) {
    m[i] = V4{} + (1.0f + float(i) * 1e-3f);
    a[i] = V4{} + 0.5f * float(i);
  }
  const V4 c = V4{} + 0.9999999f, d = V4{} + 1e-9f;
  for (long r = 0; r < rounds; ++r) {
    for (int i = 0; i < 8; ++i) {
      m[i] = m[i] * c;
      a[i] = a[i] + d;
    }
  }
  V4 s = V4{};
  for (int i = 0; i < 8; ++i) s = s + m[i] + a[i];
  return double(rounds) * 16.0 * 4.0 + double(s[0]) * 0.0;
}

double peak_burst(long rounds) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return peak_avx512(rounds);
  if (__builtin_cpu_supports("avx2")) return peak_avx2(rounds);
#endif
  return peak_generic(rounds);
}

}  // namespace

const float* bandwidth_buffer() { return buffer().p; }
size_t bandwidth_buffer_floats() { return buffer().n; }

double read_seconds(const float* p, size_t n, int threads, int streams) {
  const size_t unit = 32 * size_t(streams);
  const size_t chunk = n / size_t(threads) / unit * unit;
  std::vector<float> sink(static_cast<size_t>(threads));
  const double s = run_team(threads, [&](int t) {
    sink[size_t(t)] = sum(p + size_t(t) * chunk, chunk, streams);
  });
  volatile float keep = sink[0];
  (void)keep;
  return s;
}

double read_bandwidth(size_t bytes, int threads) {
  const size_t n = std::min(bytes / 4, bandwidth_buffer_floats());
  double best = 0;
  for (int streams : {1, 4, 8}) {
    const size_t unit = 32 * size_t(streams) * size_t(threads);
    const size_t read = n / unit * unit;
    best = std::max(
        best, double(read) * 4.0 /
                  read_seconds(bandwidth_buffer(), read, threads, streams));
  }
  return best;
}

double nonfma_peak(int threads, long rounds) {
  std::vector<double> flops(static_cast<size_t>(threads));
  const double s =
      run_team(threads, [&](int t) { flops[size_t(t)] = peak_burst(rounds); });
  double total = 0;
  for (double f : flops) total += f;
  return total / s;
}

}  // namespace lockstep::bench
