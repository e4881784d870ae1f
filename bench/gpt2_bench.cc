// GPT-2 124M (seeded random binary32 weights, 498 MB) on the GPT-2 backends
// (backends/backend.h), with the machine's own limits measured in the same
// run (docs/cpu-backend.md):
//  - memory/read_1GB/threads:T    streaming read of a 1 GB buffer (2 MB
//                                  pages, varied contents);
//  - peak/nofma/threads:T          independent vmulps + vaddps chains: the
//                                  non-FMA arithmetic peak (AVX-512, else
//                                  AVX2);
//  - decode/<backend>/threads:T/pos:P  one cached step per iteration at
//                                  positions P .. P+127 (P = 0) or cycling
//                                  over P .. P+15 (P = 1000, the cache
//                                  filled with random rows first, on 4 KB
//                                  pages or on 2 MB transparent huge pages).
//                                  Counters: tok/s, floor_ms = the time of
//                                  a streaming read of 498 MB (the weights'
//                                  size) by T threads, measured
//                                  between the steps (4 reads every 8 steps:
//                                  the machine's bandwidth drifts with its
//                                  neighbours' load),
//                                  floor_ratio = floor time / step time
//                                  (1.0 = at the memory floor);
//                                  best_floor_ratio = fastest read / fastest
//                                  step (for a machine shared with other
//                                  jobs: each the least disturbed);
//  - prefill/<backend>/threads:T   infer() over 128 tokens; counters
//                                  GFLOP/s (formula at PrefillFlops),
//                                  peak_GFLOP/s = the peak kernel on T
//                                  threads, run for ~20 ms after every pass,
//                                  and peak_frac = GFLOP/s / peak_GFLOP/s;
//                                  best_peak_frac from the fastest pass and
//                                  the fastest peak burst;
//  - decode/reference, prefill/reference  the scalar core (the baselines;
//                                  each runs before the fast paths, which
//                                  report x_reference = reference time /
//                                  their time).
// Run: build/gpt2_bench --benchmark_repetitions=5
//      --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_isa.h"
#include "bench/machine_limits.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/huge_floats.h"
#include "ls_gpt2.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

namespace lb = lockstep::bench;
using Clock = std::chrono::steady_clock;
const ls_gpt2_config kC = lockstep::kGpt2_124M;

// Seeded random weights (formats/gpt2_checkpoint.h random_gpt2_weights) in a
// 64-byte-aligned buffer as load_gpt2 maps a packed file (a std::vector's
// 16-byte alignment would make every 512-bit load straddle two cache lines:
// measured 20.7 against 29.1 GB/s for a streaming read on this machine).
struct Aligned {
  float* p;
  size_t n;
  const float* data() const { return p; }
  size_t size() const { return n; }
};
const Aligned& Weights() {
  static const Aligned w = [] {
    const size_t n = ls_gpt2_param_count(&kC);
    float* v =
        static_cast<float*>(std::aligned_alloc(64, (n * 4 + 63) / 64 * 64));
    lockstep::random_gpt2_weights(kC, 124, v);
    return Aligned{v, n};
  }();
  return w;
}

// Bytes one decode step must read at least: every weight once (the
// position embedding row aside, this is all of them).
double WeightBytes() { return double(ls_gpt2_param_count(&kC)) * 4.0; }

// ------------------------------------------------------------ machine

// The best of five reads: the bandwidth this machine gives T threads.
double Bandwidth(int threads) {
  static double bw[3] = {0, 0, 0};
  if (bw[threads] == 0) {
    const size_t n = lb::bandwidth_buffer_floats();
    lb::read_seconds(lb::bandwidth_buffer(), n, threads);  // warm (faults)
    double best = 1e30;
    for (int r = 0; r < 5; ++r)
      best =
          std::min(best, lb::read_seconds(lb::bandwidth_buffer(), n, threads));
    bw[threads] = double(n) * 4.0 / best;
  }
  return bw[threads];
}

void BM_Bandwidth(benchmark::State& state) {
  const int threads = int(state.range(0));
  const float* buf = lb::bandwidth_buffer();
  const size_t n = lb::bandwidth_buffer_floats();
  lb::read_seconds(buf, n, threads);
  double secs = 0;
  for (auto _ : state) {
    const double s = lb::read_seconds(buf, n, threads);
    state.SetIterationTime(s);
    secs += s;
  }
  state.counters["GB/s"] =
      double(n) * 4.0 * double(state.iterations()) / secs / 1e9;
  state.counters["best_GB/s"] = Bandwidth(threads) / 1e9;
}
BENCHMARK(BM_Bandwidth)
    ->Name("memory/read_1GB")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Iterations(5);

// The best of five: the non-FMA peak (flop/s) of T threads.
double Peak(int threads) {
  static double peak[3] = {0, 0, 0};
  if (peak[threads] == 0) {
    for (int r = 0; r < 5; ++r)
      peak[threads] =
          std::max(peak[threads], lb::nonfma_peak(threads, 20000000));
  }
  return peak[threads];
}

void BM_Peak(benchmark::State& state) {
  const int threads = int(state.range(0));
  double rate = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    rate = std::max(rate, lb::nonfma_peak(threads, 20000000));
    state.SetIterationTime(
        std::chrono::duration<double>(Clock::now() - t0).count());
  }
  state.counters["GFLOP/s"] = rate / 1e9;
  state.counters["best_GFLOP/s"] = Peak(threads) / 1e9;
}
BENCHMARK(BM_Peak)
    ->Name("peak/nofma")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Iterations(3);

// ------------------------------------------------------------ GPT-2

std::unique_ptr<lockstep::Gpt2Backend> Make(const std::string& name,
                                            int threads, int max_prefix) {
  const auto& w = Weights();
  return lockstep::make_gpt2_backend(name, kC, w.data(), w.size(), threads,
                                     max_prefix);
}

std::vector<int32_t> Tokens(int n) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> d(0, kC.n_vocab - 1);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

// The reference's time per step, once measured (decode/reference runs
// first): the fast paths report their speedup over it.
double g_reference_ms = 0, g_reference_prefill_ms = 0;

// The KV cache on 2 MB pages (lockstep/huge_floats.h, as a Gpt2Session
// allocates it) or, for comparison, on 4 KB pages.
using lockstep::HugeFloats;

// One cached step per iteration. pos 0: positions 0 .. 127, then again;
// pos 1000: the cache holds 1000 random rows, steps cycle over 1000 .. 1015.
void Decode(benchmark::State& state, const std::string& name, int threads,
            int first, bool huge_cache) {
  auto b = Make(name, threads, 1);
  const size_t row = ls_gpt2_cache_row_floats(&kC);
  HugeFloats cache(ls_gpt2_cache_floats(&kC), huge_cache);
  if (first > 0) {
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<float> d(-1, 1);
    for (size_t i = 0; i < size_t(first) * row; ++i) cache[i] = d(rng);
  }
  const int span = first > 0 ? 16 : 128;
  const auto tokens = Tokens(span);
  std::vector<float> logits(size_t(kC.n_vocab));
  const bool floor = name != "reference";
  // The floor: a streaming read of as many bytes as the weights, by the
  // same number of threads, from a buffer kept as warm as the weights (it
  // is read every 8 steps) and on the same page size as the backend's copy
  // of them (reading the caller's own weight buffer, which the backend no
  // longer touches after creation, measured up to 4x slower here: memory
  // left cold is not equal on this virtual machine).
  const float* weights = lb::bandwidth_buffer();
  const size_t floor_floats = Weights().size() / 256 * 256;
  int p = 0;
  double secs = 0, read_secs = 0, best = 1e30, best_read = 1e30;
  int since_floor = 0, reads = 0;
  for (auto _ : state) {
    const int pos = first + p;
    const auto t0 = Clock::now();
    const ls_status s = b->step(cache.data(), cache.size(), size_t(pos) * row,
                                tokens[size_t(p)], pos, logits.data());
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(dt);
    secs += dt;
    best = std::min(best, dt);
    if (s != LS_OK) state.SkipWithError(ls_status_message(s));
    p = (p + 1) % span;
    // The floor, measured between steps under the same conditions: one
    // streaming read of as many bytes as the weights, same thread count.
    // Every 8 steps, the floor: an untimed read first (the backend's
    // worker spins about 1 ms for its next job, then sleeps; the timed
    // reads must have both cores), then 4 timed reads.
    if (floor && ++since_floor == 8) {
      since_floor = 0;
      lb::read_seconds(weights, floor_floats / 4, threads);
      for (int r = 0; r < 4; ++r) {
        const double t = lb::read_seconds(weights, floor_floats, threads);
        read_secs += t;
        best_read = std::min(best_read, t);
        ++reads;
      }
    }
  }
  const double per_token = secs / double(state.iterations());
  state.counters["tok/s"] = 1.0 / per_token;
  state.counters["ms/tok"] = per_token * 1e3;
  state.counters["best_ms/tok"] = best * 1e3;
  // The weights' bytes over the step time: the bandwidth a step achieves.
  state.counters["GB/s"] = WeightBytes() / per_token / 1e9;
  if (floor && reads > 0) {
    const double floor_s = read_secs / reads;
    state.counters["floor_ms"] = floor_s * 1e3;
    state.counters["floor_ratio"] = floor_s / per_token;
    // On a machine shared with other jobs: the fastest step against the
    // fastest read, each the least disturbed of its kind.
    state.counters["best_floor_ratio"] = best_read / best;
  }
  if (!floor) {
    g_reference_ms = per_token * 1e3;
  } else if (g_reference_ms > 0) {
    state.counters["x_reference"] = g_reference_ms / (per_token * 1e3);
  }
  state.SetLabel(b->name());
}

// Prefill flops for n tokens: 2 flops per weight of every block matrix per
// position (2 * n * L * 12 C^2), the attention products (4 C flops per
// (query, key) pair per layer: q.k and p.v), and the head for the last
// position (2 V C). LayerNorm, softmax, GELU and biases are not counted.
double PrefillFlops(int n) {
  const double C = kC.n_embd, L = kC.n_layer, V = kC.n_vocab;
  const double pairs = double(n) * double(n + 1) / 2.0;
  return 2.0 * n * L * 12.0 * C * C + 4.0 * C * L * pairs + 2.0 * V * C;
}

void Prefill(benchmark::State& state, const std::string& name, int threads) {
  const int n = 128;
  auto b = Make(name, threads, n);
  const auto tokens = Tokens(n);
  std::vector<float> logits(size_t(kC.n_vocab));
  double secs = 0, peak_sum = 0, best = 1e30, best_peak = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const ls_status s = b->infer(tokens.data(), n, logits.data());
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(dt);
    secs += dt;
    best = std::min(best, dt);
    if (s != LS_OK) state.SkipWithError(ls_status_message(s));
    // The peak, measured after every pass under the same conditions (the
    // clock of this machine drifts with its neighbours' load): an untimed
    // burst while the backend's worker stops spinning, then ~20 ms.
    lb::nonfma_peak(threads, 1000000);
    const double pk = lb::nonfma_peak(threads, 8000000);
    peak_sum += pk;
    best_peak = std::max(best_peak, pk);
  }
  if (name == "reference")
    g_reference_prefill_ms = secs / double(state.iterations()) * 1e3;
  const double per_pass = secs / double(state.iterations());
  const double gflops = PrefillFlops(n) / per_pass / 1e9;
  const double peak = peak_sum / double(state.iterations());
  state.counters["GFLOP/s"] = gflops;
  state.counters["peak_GFLOP/s"] = peak / 1e9;
  state.counters["peak_frac"] = gflops * 1e9 / peak;
  state.counters["best_peak_frac"] = PrefillFlops(n) / best / best_peak;
  state.counters["ms/pass"] = per_pass * 1e3;
  state.counters["tok/s"] = n / per_pass;
  if (name != "reference" && g_reference_prefill_ms > 0) {
    state.counters["x_reference"] = g_reference_prefill_ms / (per_pass * 1e3);
  }
  state.SetLabel(b->name());
}

void RegisterAll() {
  benchmark::RegisterBenchmark(
      "decode/reference",
      [](benchmark::State& s) { Decode(s, "reference", 1, 0, false); })
      ->UseManualTime()
      ->Iterations(3);
  for (const auto& isa : lockstep::cpu::supported_isas()) {
    const std::string name = "cpu-" + isa;
    for (int threads : {1, 2}) {
      for (int first : {0, 1000}) {
        for (bool huge : {false, true}) {
          if (first == 0 && huge) continue;
          benchmark::RegisterBenchmark(
              ("decode/" + name + "/threads:" + std::to_string(threads) +
               "/pos:" + std::to_string(first) +
               (first ? (huge ? "/cache:2MB" : "/cache:4KB") : ""))
                  .c_str(),
              [=](benchmark::State& s) {
                Decode(s, name, threads, first, huge);
              })
              ->UseManualTime()
              ->MinTime(2.0);
        }
      }
    }
  }
  benchmark::RegisterBenchmark(
      "prefill/reference",
      [](benchmark::State& s) { Prefill(s, "reference", 1); })
      ->UseManualTime()
      ->Iterations(1);
  for (const auto& isa : lockstep::cpu::supported_isas()) {
    const std::string name = "cpu-" + isa;
    for (int threads : {1, 2}) {
      benchmark::RegisterBenchmark(
          ("prefill/" + name + "/threads:" + std::to_string(threads)).c_str(),
          [=](benchmark::State& s) { Prefill(s, name, threads); })
          ->UseManualTime()
          ->MinTime(2.0);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
