// lockstep bench: GPT-2 decode and prefill speed against this machine's
// limits, measured in the same run: the memory-bandwidth floor for decode
// (every weight read once per token) and a measured non-FMA peak for
// prefill. Results go to stdout as a table or JSON (docs/benchmarks.md).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "backends/backend.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "ls_sampler.h"

namespace lockstep::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Streaming read bandwidth (GB/s) over a buffer larger than every cache,
// with `threads` threads; XOR of 64-bit words vectorises freely (integer
// arithmetic may be reordered) so the loop is bound by memory alone.
double read_bandwidth(const std::vector<uint64_t>& buf, int threads) {
  std::vector<uint64_t> sink(static_cast<size_t>(threads), 0);
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  const size_t part = buf.size() / size_t(threads);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      uint64_t x = 0;
      const uint64_t* p = buf.data() + size_t(t) * part;
      for (size_t i = 0; i < part; ++i) x ^= p[i];
      sink[size_t(t)] = x;
    });
  }
  for (auto& th : pool) th.join();
  const double s = seconds_since(t0);
  volatile uint64_t keep = sink[0];
  (void)keep;
  return double(part * size_t(threads) * 8) / s / 1e9;
}

// Peak binary32 GFLOP/s with separate multiplies and adds (no FMA, as the
// spec requires): 16 independent vector chains of x = x * a + b, compiled
// for the widest ISA this CPU has (the one the fast backend uses).
typedef float V16 __attribute__((vector_size(64)));

// The body is a macro so that each copy is compiled for its own target (a
// shared inline function would be compiled once, for the baseline ISA).
#define LOCKSTEP_PEAK_BODY                                                   \
  V16 x[16];                                                                 \
  for (int i = 0; i < 16; ++i) {                                             \
    for (int l = 0; l < 16; ++l) x[i][l] = 1.0f + float(i * 16 + l) * 1e-3f; \
  }                                                                          \
  const V16 a = V16{} + 0.999999f, b = V16{} + 1e-6f;                        \
  for (long it = 0; it < iters; ++it) {                                      \
    for (int i = 0; i < 16; ++i) x[i] = x[i] * a + b;                        \
  }                                                                          \
  float s = 0;                                                               \
  for (int i = 0; i < 16; ++i) s += x[i][0];                                 \
  return s;

__attribute__((target("avx512f"))) float peak_avx512(long iters) {
  LOCKSTEP_PEAK_BODY
}
__attribute__((target("avx2"))) float peak_avx2(long iters) {
  LOCKSTEP_PEAK_BODY
}
float peak_generic(long iters) { LOCKSTEP_PEAK_BODY }

double nonfma_peak(int threads) {
  constexpr long kIters = 2000000;
  float (*kernel)(long) = peak_generic;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    kernel = peak_avx512;
  } else if (__builtin_cpu_supports("avx2")) {
    kernel = peak_avx2;
  }
  std::vector<float> sink(static_cast<size_t>(threads));
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { sink[size_t(t)] = kernel(kIters); });
  }
  for (auto& th : pool) th.join();
  const double s = seconds_since(t0);
  volatile float keep = sink[0];
  (void)keep;
  return 2.0 * 16 * 16 * double(kIters) * threads / s / 1e9;
}

// Seeded random 124M-shaped weights, every parameter non-zero and
// LayerNorm gains near 1 (so activations keep their scale).
std::vector<float> random_weights(const ls_gpt2_config& c, uint64_t seed) {
  std::vector<float> w(ls_gpt2_param_count(&c));
  uint64_t s = seed;
  for (float& v : w) v = float((ls_uniform64(&s) - 0.5) * 0.04);
  auto gains = [&](size_t off) {
    for (int i = 0; i < c.n_embd; ++i) w[off + size_t(i)] += 1.0f;
  };
  for (int l = 0; l < c.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
    gains(b.ln1_g);
    gains(b.ln2_g);
  }
  gains(ls_gpt2_lnf_offset(&c));
  return w;
}

long peak_rss_kb() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

struct BenchArgs {
  std::string model;
  std::string backend = "cpu";
  std::vector<int> threads{1, 2};
  int repeat = 3;
  bool long_context = true;
  bool json = false;
};

void check(ls_status s, const char* what) {
  if (s != LS_OK) throw Error(std::string(what) + ": " + ls_status_message(s));
}

int run(const BenchArgs& a) {
  Gpt2Weights loaded;
  std::vector<float> generated;
  ls_gpt2_config c = kGpt2_124M;
  const float* w = nullptr;
  std::string source;
  if (!a.model.empty()) {
    loaded = load_gpt2(a.model, /*verify_digest=*/false);
    c = loaded.config;
    w = loaded.data();
    source = a.model;
  } else {
    std::fprintf(stderr,
                 "bench: generating seeded random GPT-2 124M weights\n");
    generated = random_weights(c, 20261130);
    w = generated.data();
    source = "random GPT-2 124M (seed 20261130)";
  }
  const size_t words = ls_gpt2_param_count(&c);
  const double weight_gb = double(words) * 4 / 1e9;

  nlohmann::json out = {
      {"model", source},
      {"weights_bytes", words * 4},
      {"backend", a.backend},
      {"repeat", a.repeat},
      {"hardware_threads", std::thread::hardware_concurrency()}};
  // Machine limits, measured now.
  {
    std::vector<uint64_t> buf(size_t(1) << 27);  // 1 GiB
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = i * 0x9e3779b97f4a7c15ULL;
    for (int t : a.threads) {
      std::vector<double> runs;
      for (int r = 0; r < a.repeat; ++r) runs.push_back(read_bandwidth(buf, t));
      out["bandwidth_gbps"][std::to_string(t)] = median(runs);
      std::vector<double> peaks;
      for (int r = 0; r < a.repeat; ++r) peaks.push_back(nonfma_peak(t));
      out["nonfma_peak_gflops"][std::to_string(t)] = median(peaks);
    }
  }

  std::vector<float> cache(ls_gpt2_cache_floats(&c));
  std::vector<float> logits(size_t(c.n_vocab));
  const size_t row = ls_gpt2_cache_row_floats(&c);
  uint64_t tok_state = 7;
  std::vector<int32_t> tokens(size_t(c.n_ctx));
  for (auto& t : tokens) t = int32_t(ls_splitmix64_next(&tok_state) % 50257);

  for (int t : a.threads) {
    const std::string key = std::to_string(t);
    auto be = make_gpt2_backend(a.backend, c, w, words, t, 128);
    out["backend_name"][key] = be->name();
    // Decode: positions 0..127, and (long) the last 128 positions.
    std::vector<double> short_runs, long_runs;
    for (int r = 0; r < a.repeat; ++r) {
      const auto t0 = Clock::now();
      for (int p = 0; p < 128; ++p) {
        check(be->step(cache.data(), cache.size(), size_t(p) * row,
                       tokens[size_t(p)], p, logits.data()),
              "bench step");
      }
      short_runs.push_back(128.0 / seconds_since(t0));
    }
    out["decode_tokens_per_s_pos0_127"][key] = median(short_runs);
    if (a.long_context) {
      ProgressBar bar(
          "bench: filling the cache (" + key + " thread" + (t > 1 ? "s)" : ")"),
          c.n_ctx - 128);
      for (int p = 128; p < c.n_ctx - 128; ++p) {
        check(be->step(cache.data(), cache.size(), size_t(p) * row,
                       tokens[size_t(p)], p, logits.data()),
              "bench step");
        bar.update(p - 127);
      }
      bar.finish();
      for (int r = 0; r < a.repeat; ++r) {
        const auto t0 = Clock::now();
        for (int p = c.n_ctx - 128; p < c.n_ctx; ++p) {
          check(be->step(cache.data(), cache.size(), size_t(p) * row,
                         tokens[size_t(p)], p, logits.data()),
                "bench step");
        }
        long_runs.push_back(128.0 / seconds_since(t0));
      }
      out["decode_tokens_per_s_pos896_1023"][key] = median(long_runs);
    }
    const double bw = out["bandwidth_gbps"][key];
    out["decode_floor_tokens_per_s"][key] = bw / weight_gb;
    out["decode_vs_floor"][key] = median(short_runs) / (bw / weight_gb);
    // Prefill of 128 tokens.
    std::vector<double> prefill;
    for (int r = 0; r < a.repeat; ++r) {
      const auto t0 = Clock::now();
      check(be->infer(tokens.data(), 128, logits.data()), "bench infer");
      prefill.push_back(seconds_since(t0));
    }
    const double s = median(prefill);
    // Multiply-adds of the matrix products for 128 positions, the attention
    // (scores and weighted sums over the causal prefix) and one logits row.
    const double C = c.n_embd, L = c.n_layer, n = 128;
    const double flops = 2 * n * L * 12 * C * C + 2 * L * C * n * (n + 1) +
                         2 * double(c.n_vocab) * C;
    out["prefill128_tokens_per_s"][key] = n / s;
    out["prefill128_gflops"][key] = flops / s / 1e9;
    out["prefill_vs_nonfma_peak"][key] =
        flops / s / 1e9 / double(out["nonfma_peak_gflops"][key]);
  }
  out["peak_rss_bytes"] = peak_rss_kb() * 1024;

  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model      %s\n", source.c_str());
  std::printf("%-34s", "threads");
  for (int t : a.threads) std::printf("%14d", t);
  std::printf("\n");
  for (const char* k :
       {"backend_name", "bandwidth_gbps", "decode_floor_tokens_per_s",
        "decode_tokens_per_s_pos0_127", "decode_vs_floor",
        "decode_tokens_per_s_pos896_1023", "prefill128_tokens_per_s",
        "prefill128_gflops", "nonfma_peak_gflops", "prefill_vs_nonfma_peak"}) {
    if (!out.contains(k)) continue;
    std::printf("%-34s", k);
    for (int t : a.threads) {
      const auto& v = out[k][std::to_string(t)];
      if (v.is_string()) {
        std::printf("%14s", v.get<std::string>().c_str());
      } else {
        std::printf("%14.3f", v.get<double>());
      }
    }
    std::printf("\n");
  }
  std::printf("%-34s%14.1f MB\n", "peak resident memory",
              double(out["peak_rss_bytes"]) / 1e6);
  return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  app.add_option("--model,-m", a->model,
                 "a GPT-2 checkpoint or HF folder (default: seeded random "
                 "124M weights generated in memory)");
  app.add_option("--backend", a->backend,
                 "cpu, cpu-avx512, cpu-avx2, cpu-generic or reference")
      ->capture_default_str();
  app.add_option("--threads", a->threads, "thread counts to measure")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  app.add_option("--repeat", a->repeat, "runs per measurement (median)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_flag("!--no-long", a->long_context,
               "skip decode at positions 896-1023");
  app.add_flag("--json", a->json, "print JSON");
  return [a]() { return run(*a); };
}

}  // namespace lockstep::cli
