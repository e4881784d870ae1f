// Tile lab (x86-64 with AVX-512): the batched product's AVX-512 register
// tile alone (4 x 6 over one 64-column panel, the CPU backend's prefill
// kernel) against one thread's non-FMA peak measured in the same run, then
// the whole 124M prefill of 512 tokens at each thread count given, against
// the peak of that many threads. Usage: tile_lab [THREADS ...]
// (docs/benchmarks.md, "CPU engine after the peak fix").
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/kernels_impl.h"
#include "backends/cpu/vec_avx512.h"
#include "bench/machine_limits.h"
#include "formats/gpt2_checkpoint.h"

using namespace lockstep;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

template <int NV, int NP>
double product(const std::vector<float>& x, const std::vector<float>& w,
               std::vector<float>& y, const std::vector<float>& b, int n, int K,
               int N) {
  const auto t0 = Clock::now();
  for (int o0 = 0; o0 < N; o0 += 64) {
    lockstep::cpu::matmul_range<lockstep::cpu::VecAvx512, NV, NP>(
        x.data(), size_t(K), n, w.data() + size_t(o0) * size_t(K),
        b.data() + o0, K, 64, 0, 64, y.data() + o0, size_t(N));
  }
  return seconds_since(t0);
}

template <int NV, int NP>
void shape(const char* name, int n, int K, int N, double peak) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> x(size_t(n) * K), w(size_t(K) * N), y(size_t(n) * N),
      b(static_cast<size_t>(N));
  for (auto& v : x) v = d(g);
  for (auto& v : w) v = d(g);
  for (auto& v : b) v = d(g);
  std::vector<double> s;
  for (int r = 0; r < 5; ++r) s.push_back(product<NV, NP>(x, w, y, b, n, K, N));
  std::sort(s.begin(), s.end());
  const double gf = 2.0 * n * K * N / s[2] / 1e9;
  std::printf(
      "tile %-10s NV=%d NP=%-2d n=%d K=%-4d N=%-4d %8.1f GFLOP/s  %.3f of "
      "peak\n",
      name, NV, NP, n, K, N, gf, gf / peak);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && argv[1][0] == '-') {
    std::puts("usage: tile_lab [THREADS ...]  (AVX-512 only)");
    return argv[1][1] == 'h' ? 0 : 2;
  }
  if (!__builtin_cpu_supports("avx512f")) {
    std::fputs("tile_lab: this CPU has no AVX-512\n", stderr);
    return 1;
  }
  const int n = 512;
  bench::nonfma_peak(1, 1000000);
  double peak1 = 0;
  for (int i = 0; i < 3; ++i) peak1 = std::max(peak1, bench::nonfma_peak(1));
  peak1 /= 1e9;
  std::printf("nonfma peak 1 thread: %.1f GFLOP/s\n", peak1);
  shape<4, 6>("l1", 48, 256, 64, peak1);
  shape<4, 6>("gpt2", n, 768, 2304, peak1);
  shape<4, 6>("gpt2", n, 3072, 768, peak1);
  const ls_gpt2_config c{50257, 1024, 768, 12, 12};
  const std::vector<float> wts = random_gpt2_weights(c, 11);
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(size_t(c.n_vocab));
  std::vector<int32_t> tok(static_cast<size_t>(n));
  std::mt19937 g(3);
  for (auto& t : tok) t = int32_t(g() % 50257);
  const double fl =
      2.0 * n * 12 * 12 * 768.0 * 768 + 2.0 * 12 * 768 * n * (n + 1);
  for (int a = 1; a < argc; ++a) {
    const int threads = std::atoi(argv[a]);
    auto be = make_gpt2_backend("cpu", c, wts.data(), wts.size(), threads, n);
    std::vector<double> s, pk;
    for (int r = 0; r < 3; ++r) {
      bench::nonfma_peak(threads, 1000000);
      pk.push_back(bench::nonfma_peak(threads) / 1e9);
      const auto t0 = Clock::now();
      if (be->prefill(cache.data(), cache.size(), 0, tok.data(), n, 0, false,
                      logits.data()) != LS_OK) {
        std::puts("prefill failed");
        return 1;
      }
      s.push_back(seconds_since(t0));
    }
    std::sort(s.begin(), s.end());
    const double best = *std::max_element(pk.begin(), pk.end());
    std::printf(
        "threads=%2d peak %7.1f GFLOP/s (%.1f per thread)  prefill 512: %.3f "
        "s %6.0f tok/s %6.1f GFLOP/s  %.3f of peak\n",
        threads, best, best / threads, s[1], n / s[1], fl / s[1] / 1e9,
        fl / s[1] / 1e9 / best);
  }
  return 0;
}
