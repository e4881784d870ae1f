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

// GCC vector types: each kernel body below is written once, as a macro
// over the vector type, and compiled once per instruction set with a
// target attribute (an inline function would be compiled once, for the
// baseline ISA).
typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V4 __attribute__((vector_size(16)));

// Sums p[0, n) read as `streams` interleaved sequential streams (stream s
// reads the s-th of `streams` equal parts), 128 floats per stream and
// round, into 8 independent sums (held in registers: the unrolled loop's
// indices are constants) so the loop is bound by loads, not by the latency
// of one chain of additions (with the sums in memory, one thread read
// 20 GB/s here instead of 29). Which number of streams the hardware
// prefetchers serve best differs between machines (on the 2-core AMD EPYC
// of docs/benchmarks.md one stream reads about 29 GB/s and eight about 22),
// so read_bandwidth takes the best of several. Every 4 KB of a stream, one
// prefetch touches the stream 8 KB ahead: the hardware prefetchers stop at
// 4 KB page boundaries, and this touch-ahead (which the CPU backend's
// decode kernel uses too) raised one thread's read from 26 to 37 GB/s on
// that machine. The caller passes n a multiple of kRound * streams.
constexpr size_t kRound = 128;
#define LOCKSTEP_SUM_BODY(V)                                                \
  constexpr int kW = int(sizeof(V) / sizeof(float));                        \
  V a[8] = {};                                                              \
  const size_t part = n / size_t(streams);                                  \
  for (size_t i = 0; i < part; i += kRound) {                               \
    for (int s = 0; s < streams; ++s) {                                     \
      const float* q = p + size_t(s) * part + i;                            \
      if ((i & 1023) == 0) __builtin_prefetch(q + 2048, 0, 2);              \
      _Pragma("GCC unroll 32") for (int k = 0; k < int(kRound) / kW; ++k) { \
        V v;                                                                \
        __builtin_memcpy(&v, q + k * kW, sizeof v);                         \
        a[k & 7] += v;                                                      \
      }                                                                     \
    }                                                                       \
  }                                                                         \
  V t = a[0];                                                               \
  for (int i = 1; i < 8; ++i) t += a[i];                                    \
  return t[0];

#if defined(__x86_64__)
__attribute__((target("avx512f"))) float sum_avx512(const float* p, size_t n,
                                                    int streams) {
  LOCKSTEP_SUM_BODY(V16)
}
__attribute__((target("avx2"))) float sum_avx2(const float* p, size_t n,
                                               int streams) {
  LOCKSTEP_SUM_BODY(V8)
}
#endif
float sum_generic(const float* p, size_t n, int streams) {
  LOCKSTEP_SUM_BODY(V4)
}

float sum(const float* p, size_t n, int streams) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return sum_avx512(p, n, streams);
  if (__builtin_cpu_supports("avx2")) return sum_avx2(p, n, streams);
#endif
  return sum_generic(p, n, streams);
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

// Independent chains, 8 of multiplies and 8 of additions per round, all
// in registers: the arithmetic a non-FMA kernel can issue per cycle.
// Returns the flops done. The starting values and constants pass through
// an empty asm that the compiler must assume changed them: with values it
// could see, GCC proved seven of the eight addition chains constant
// (0.5 * i + 1e-9 rounds back to 0.5 * i) and dropped them, so the loop
// ran 8 multiplies and 1 addition while 16 were counted, and the "peak"
// came out 16/9 too high (every ratio against it 9/16 too low).
// tests/peak_kernel_check.sh counts the loop's instructions.
#define LOCKSTEP_PEAK_BODY(V)                                       \
  constexpr int kW = int(sizeof(V) / sizeof(float));                \
  V m[8], a[8], c, d;                                               \
  for (int i = 0; i < 8; ++i) {                                     \
    m[i] = V{} + (1.0f + float(i) * 1e-3f);                         \
    a[i] = V{} + 0.5f * float(i);                                   \
  }                                                                 \
  c = V{} + 0.9999999f;                                             \
  d = V{} + 1e-3f;                                                  \
  asm volatile("" : : "g"(m), "g"(a), "g"(&c), "g"(&d) : "memory"); \
  for (long r = 0; r < rounds; ++r) {                               \
    for (int i = 0; i < 8; ++i) {                                   \
      m[i] = m[i] * c;                                              \
      a[i] = a[i] + d;                                              \
    }                                                               \
  }                                                                 \
  V s = V{};                                                        \
  for (int i = 0; i < 8; ++i) s = s + (m[i] + a[i]);                \
  return double(rounds) * 16.0 * kW + double(s[0]) * 0.0;

#if defined(__x86_64__)
__attribute__((target("avx512f"), noinline)) double peak_avx512(long rounds) {
  LOCKSTEP_PEAK_BODY(V16)
}
__attribute__((target("avx2"), noinline)) double peak_avx2(long rounds) {
  LOCKSTEP_PEAK_BODY(V8)
}
#endif
__attribute__((noinline)) double peak_generic(long rounds) {
  LOCKSTEP_PEAK_BODY(V4)
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
  const size_t unit = kRound * size_t(streams);
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
    const size_t unit = kRound * size_t(streams) * size_t(threads);
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
