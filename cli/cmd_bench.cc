// lockstep bench: GPT-2 decode and prefill speed against this machine's
// limits, measured in the same run: the memory-bandwidth floor for decode
// (every weight read once per token) and a measured non-FMA peak for
// prefill. Results go to stdout as a table or JSON (docs/benchmarks.md).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/backend.h"
#include "bench/machine_limits.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lockstep/error.h"
#include "lockstep/huge_floats.h"
#include "ls_gpt2_q8.h"
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

long peak_rss_kb() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

struct BenchArgs {
  std::string model;
  std::string backend = "cpu";
  std::vector<int> threads{1, 0};  // 0: all cores
  int repeat = 3;
  // Prompt lengths for time to first token (prefill against stepping).
  std::vector<int> prompts{128, 512, 1000};
  bool long_context = true;
  bool json = false;
  // Weight formats to measure, side by side in one run: "none" (binary32)
  // and/or "int8" (quantized in memory from the same weights; an int8
  // file is measured as int8 alone).
  std::vector<std::string> quant{"none"};
  // int8 kernel tables to measure side by side in one run
  // ($LOCKSTEP_Q8_KERNELS for each backend's creation; empty: the
  // backend's own table, measured as "int8_").
  std::vector<std::string> int8_kernels;
};

void check(ls_status s, const char* what) {
  if (s != LS_OK) throw Error(std::string(what) + ": " + ls_status_message(s));
}

int run(BenchArgs a) {
  // --threads 0: one per hardware thread; each count measured once.
  const unsigned hw = std::thread::hardware_concurrency();
  for (int& t : a.threads) t = t == 0 ? int(hw == 0 ? 1 : hw) : t;
  a.threads.erase(std::unique(a.threads.begin(), a.threads.end()),
                  a.threads.end());
  Gpt2Weights loaded;
  std::vector<float> generated;
  ls_gpt2_config c = kGpt2_124M;
  const float* w = nullptr;
  std::string source;
  const uint8_t* q8 = nullptr;
  size_t q8_bytes = 0;
  std::vector<uint8_t> quantized;
  if (!a.model.empty()) {
    loaded = load_gpt2_any(a.model, /*verify_digest=*/false);
    c = loaded.config;
    source = a.model;
    if (loaded.q8_data()) {  // an int8 file: int8 alone
      q8 = loaded.q8_data();
      q8_bytes = ls_gpt2_q8_bytes(&c);
      a.quant = {"int8"};
    } else {
      w = loaded.data();
    }
  } else {
    std::fprintf(stderr,
                 "bench: generating seeded random GPT-2 124M weights\n");
    generated = random_gpt2_weights(c, 20261130);
    w = generated.data();
    source = "random GPT-2 124M (seed 20261130)";
  }
  const size_t words = ls_gpt2_param_count(&c);
  const bool want_int8 =
      std::find(a.quant.begin(), a.quant.end(), "int8") != a.quant.end();
  if (want_int8 && !q8) {
    if (!ls_gpt2_q8_config_valid(&c)) {
      throw Error("bench: --quant int8 needs n_embd a multiple of 64");
    }
    std::fprintf(stderr, "bench: quantizing to int8 (docs/int8.md)\n");
    if (loaded.words() && loaded.layout != LS_GPT2_LAYOUT_PLAIN) {
      throw Error("bench: --quant int8 quantizes plain-layout weights; '" +
                  a.model + "' is PANEL64 (run lockstep convert --quant " +
                  "int8 on it and bench the int8 file)");
    }
    quantized = quantize_gpt2_q8(c, w);
    q8 = quantized.data();
    q8_bytes = quantized.size();
  }

  nlohmann::json out = {
      {"model", source},
      {"weights_bytes", words * 4},
      {"backend", a.backend},
      {"repeat", a.repeat},
      {"quant", a.quant},
      {"hardware_threads", std::thread::hardware_concurrency()}};
  if (q8) out["int8_weights_bytes"] = q8_bytes;
  HugeFloats cache(ls_gpt2_cache_floats(&c));  // as a Gpt2Session's
  std::vector<float> logits(size_t(c.n_vocab));
  const size_t row = ls_gpt2_cache_row_floats(&c);
  uint64_t tok_state = 7;
  std::vector<int32_t> tokens(size_t(c.n_ctx));
  for (auto& t : tokens) {
    t = int32_t(ls_splitmix64_next(&tok_state) % uint64_t(c.n_vocab));
  }
  const int span = std::min(128, c.n_ctx);
  const bool long_context = a.long_context && c.n_ctx >= 2 * span;
  const size_t weight_bytes = words * 4;
  // Each measurement of the engine is paired with one of the machine's
  // limit taken right before it, and each reported figure is a median:
  // the bandwidth and clock of a shared machine drift with its neighbours'
  // load, so a limit measured minutes apart would not be comparable.
  std::fprintf(stderr, "bench: measuring this machine's limits\n");
  lockstep::bench::read_bandwidth(weight_bytes, 1);  // page faults

  for (int t : a.threads) {
    const std::string key = std::to_string(t);
    // Sized for the longest prompt: the batched prefill runs it in one call.
    int longest = span;
    for (int n : a.prompts) longest = std::max(longest, std::min(n, c.n_ctx));
    auto measure = [&](const std::string& fmt, Gpt2Backend* be, size_t wbytes) {
      out[fmt + "backend_name"][key] = be->name();
      // What a session of this backend holds: the weights, the backend's own
      // memory (repacked matrices, scratch) and a KV cache for n_ctx
      // positions.
      out[fmt + "session_memory_bytes"][key] =
          wbytes + be->extra_memory_bytes() + cache.size() * 4;
      // Decode: positions 0..127, and (long) the last 128 positions.
      std::vector<double> short_runs, long_runs, bandwidth;
      auto decode = [&](int first) {
        const auto t0 = Clock::now();
        for (int p = first; p < first + span; ++p) {
          check(be->step(cache.data(), cache.size(), size_t(p) * row,
                         tokens[size_t(p)], p, logits.data()),
                "bench step");
        }
        return span / seconds_since(t0);
      };
      decode(0);  // warm: the first pass touches the scratch
      for (int r = 0; r < a.repeat; ++r) {
        // From DRAM: a buffer at least the binary32 weights' size (an
        // int8 model's 129 MB could sit in a large L3).
        bandwidth.push_back(
            lockstep::bench::read_bandwidth(std::max(wbytes, weight_bytes), t));
        short_runs.push_back(decode(0));
      }
      const double bw = median(bandwidth) / 1e9;
      out[fmt + "bandwidth_gbps"][key] = bw;
      out[fmt + "decode_tokens_per_s_pos0_127"][key] = median(short_runs);
      out[fmt + "decode_floor_tokens_per_s"][key] = bw / (wbytes / 1e9);
      out[fmt + "decode_vs_floor"][key] =
          median(short_runs) / (bw / (wbytes / 1e9));
      if (long_context) {
        ProgressBar bar("bench: filling the cache (" + key + " thread" +
                            (t > 1 ? "s)" : ")"),
                        c.n_ctx - 2 * span);
        for (int p = span; p < c.n_ctx - span; ++p) {
          check(be->step(cache.data(), cache.size(), size_t(p) * row,
                         tokens[size_t(p)], p, logits.data()),
                "bench step");
          bar.update(p - span + 1);
        }
        bar.finish();
        for (int r = 0; r < a.repeat; ++r) {
          long_runs.push_back(decode(c.n_ctx - span));
        }
        out[fmt + "decode_tokens_per_s_pos896_1023"][key] = median(long_runs);
      }
      // Prefill of 128 tokens, each pass after a burst of the peak kernel
      // (the first burst, untimed, lets the backend's worker stop spinning).
      std::vector<double> prefill, peak;
      lockstep::bench::nonfma_peak(t, 1000000);
      for (int r = 0; r < a.repeat; ++r) {
        peak.push_back(lockstep::bench::nonfma_peak(t));
        const auto t0 = Clock::now();
        check(be->infer(tokens.data(), span, logits.data()), "bench infer");
        prefill.push_back(seconds_since(t0));
      }
      out[fmt + "nonfma_peak_gflops"][key] = median(peak) / 1e9;
      const double s = median(prefill);
      // Multiply-adds of the matrix products for 128 positions, the attention
      // (scores and weighted sums over the causal prefix) and one logits row.
      const double C = c.n_embd, L = c.n_layer, n = span;
      const double flops = 2 * n * L * 12 * C * C + 2 * L * C * n * (n + 1) +
                           2 * double(c.n_vocab) * C;
      out[fmt + "prefill128_tokens_per_s"][key] = n / s;
      out[fmt + "prefill128_gflops"][key] = flops / s / 1e9;
      out[fmt + "prefill_vs_nonfma_peak"][key] =
          flops / s / 1e9 / double(out[fmt + "nonfma_peak_gflops"][key]);

      // Time to first token: a prompt of n tokens through the batched
      // prefill into an empty cache (each run after a peak burst, itself
      // after an untimed one: a backend worker still spinning after the last
      // job would take a CPU from the burst), against the same prompt fed
      // through n cached steps (once: it is the slow path this replaces).
      // Both end with the last position's logits. The prefill's ratio is
      // taken against the highest peak measured for this thread count in the
      // whole run (a peak burst that lost a CPU to the OS would otherwise
      // flatter the ratio: one such run read 0.81 where 0.42 was right).
      std::vector<std::pair<std::string, double>> prefill_gflops;
      double best_peak = *std::max_element(peak.begin(), peak.end());
      for (int n : a.prompts) {
        if (n > c.n_ctx) continue;
        const std::string pn = std::to_string(n);
        std::vector<double> runs;
        for (int r = 0; r < a.repeat; ++r) {
          lockstep::bench::nonfma_peak(t, 1000000);
          best_peak = std::max(best_peak, lockstep::bench::nonfma_peak(t));
          const auto t0 = Clock::now();
          check(be->prefill(cache.data(), cache.size(), 0, tokens.data(), n, 0,
                            false, logits.data()),
                "bench prefill");
          runs.push_back(seconds_since(t0));
        }
        ProgressBar bar("bench: stepping a " + pn + "-token prompt (" + key +
                            " thread" + (t > 1 ? "s)" : ")"),
                        n);
        const auto t0 = Clock::now();
        for (int p = 0; p < n; ++p) {
          check(be->step(cache.data(), cache.size(), size_t(p) * row,
                         tokens[size_t(p)], p, logits.data()),
                "bench step");
          bar.update(p + 1);
        }
        const double stepped = seconds_since(t0);
        bar.finish();
        const double pre = median(runs);
        const double C = c.n_embd, L = c.n_layer, nn = n;
        const double fl = 2 * nn * L * 12 * C * C + 2 * L * C * nn * (nn + 1) +
                          2 * double(c.n_vocab) * C;
        out[fmt + "ttft_prefill_s_" + pn][key] = pre;
        out[fmt + "ttft_stepping_s_" + pn][key] = stepped;
        out[fmt + "ttft_speedup_" + pn][key] = stepped / pre;
        out[fmt + "prefill_cache_" + pn + "_tokens_per_s"][key] = nn / pre;
        prefill_gflops.push_back({pn, fl / pre / 1e9});
      }
      out[fmt + "nonfma_best_peak_gflops"][key] = best_peak / 1e9;
      for (const auto& [pn, gf] : prefill_gflops) {
        out[fmt + "prefill_cache_" + pn + "_gflops"][key] = gf;
        out[fmt + "prefill_cache_" + pn + "_vs_nonfma_peak"][key] =
            gf / (best_peak / 1e9);
      }
    };
    if (w &&
        std::find(a.quant.begin(), a.quant.end(), "none") != a.quant.end()) {
      auto be = make_gpt2_backend(
          a.backend, c, w, words, t, longest,
          loaded.words() ? loaded.layout : LS_GPT2_LAYOUT_PLAIN);
      measure("", be.get(), words * 4);
    }
    // Each named int8 table in turn ("int8_<table>_" keys), with the
    // decode and prefill ratios of each to the first.
    for (size_t i = 0; q8 && i < a.int8_kernels.size(); ++i) {
      const std::string& name = a.int8_kernels[i];
      const char* old = std::getenv("LOCKSTEP_Q8_KERNELS");
      const std::string saved = old ? old : "";
      setenv("LOCKSTEP_Q8_KERNELS", name.c_str(), 1);
      std::unique_ptr<Gpt2Backend> be;
      try {
        be = make_gpt2_q8_backend(a.backend, c, q8, q8_bytes, t, longest);
      } catch (...) {
        old ? setenv("LOCKSTEP_Q8_KERNELS", saved.c_str(), 1)
            : unsetenv("LOCKSTEP_Q8_KERNELS");
        throw;
      }
      old ? setenv("LOCKSTEP_Q8_KERNELS", saved.c_str(), 1)
          : unsetenv("LOCKSTEP_Q8_KERNELS");
      const std::string fmt = "int8_" + name + "_";
      measure(fmt, be.get(), q8_bytes);
      if (i == 0) continue;
      const std::string f0 = "int8_" + a.int8_kernels[0] + "_";
      const std::string vs = fmt + "vs_" + a.int8_kernels[0] + "_";
      auto ratio = [&](const std::string& k) {
        out[vs + k][key] = double(out[fmt + k][key]) / double(out[f0 + k][key]);
      };
      ratio("decode_tokens_per_s_pos0_127");
      ratio("prefill128_tokens_per_s");
      for (int n : a.prompts) {
        if (n <= c.n_ctx) {
          ratio("prefill_cache_" + std::to_string(n) + "_tokens_per_s");
        }
      }
    }
    if (q8 && a.int8_kernels.empty()) {
      auto be = make_gpt2_q8_backend(a.backend, c, q8, q8_bytes, t, longest);
      measure("int8_", be.get(), q8_bytes);
      if (out.contains("decode_tokens_per_s_pos0_127")) {
        out["int8_decode_speedup"][key] =
            double(out["int8_decode_tokens_per_s_pos0_127"][key]) /
            double(out["decode_tokens_per_s_pos0_127"][key]);
        out["int8_prefill128_speedup"][key] =
            double(out["int8_prefill128_tokens_per_s"][key]) /
            double(out["prefill128_tokens_per_s"][key]);
      }
    }
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
  std::vector<std::string> rows, prefixes{"", "int8_"};
  for (const std::string& name : a.int8_kernels) {
    prefixes.push_back("int8_" + name + "_");
  }
  for (const std::string& pre : prefixes) {
    for (const char* k :
         {"backend_name", "bandwidth_gbps", "decode_floor_tokens_per_s",
          "decode_tokens_per_s_pos0_127", "decode_vs_floor",
          "decode_tokens_per_s_pos896_1023", "prefill128_tokens_per_s",
          "prefill128_gflops", "nonfma_peak_gflops", "prefill_vs_nonfma_peak",
          "nonfma_best_peak_gflops"}) {
      rows.push_back(pre + k);
    }
    for (int n : a.prompts) {
      const std::string pn = std::to_string(n);
      for (const std::string& k :
           {"ttft_prefill_s_" + pn, "ttft_stepping_s_" + pn,
            "ttft_speedup_" + pn, "prefill_cache_" + pn + "_tokens_per_s",
            "prefill_cache_" + pn + "_vs_nonfma_peak"}) {
        rows.push_back(pre + k);
      }
    }
    rows.push_back(pre + "session_memory_bytes");
  }
  rows.push_back("int8_decode_speedup");
  rows.push_back("int8_prefill128_speedup");
  for (size_t i = 1; i < a.int8_kernels.size(); ++i) {
    const std::string vs =
        "int8_" + a.int8_kernels[i] + "_vs_" + a.int8_kernels[0] + "_";
    rows.push_back(vs + "decode_tokens_per_s_pos0_127");
    rows.push_back(vs + "prefill128_tokens_per_s");
    for (int n : a.prompts) {
      rows.push_back(vs + "prefill_cache_" + std::to_string(n) +
                     "_tokens_per_s");
    }
  }
  for (const std::string& k : rows) {
    if (!out.contains(k)) continue;
    std::printf("%-34s", k.c_str());
    for (int t : a.threads) {
      const auto& v = out[k][std::to_string(t)];
      if (v.is_string()) {
        std::printf("%14s", v.get<std::string>().c_str());
      } else if (v.is_number_unsigned()) {
        std::printf("%11.1f MB", double(v.get<uint64_t>()) / 1e6);
      } else {
        std::printf("%14.3f", v.get<double>());
      }
    }
    std::printf("\n");
  }
  std::printf("%-34s%14.1f MB (includes the 1 GiB bandwidth buffer)\n",
              "peak resident memory", double(out["peak_rss_bytes"]) / 1e6);
  return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  app.add_option("--model,-m", a->model,
                 "a GPT-2 checkpoint or HF folder (default: seeded random "
                 "124M weights generated in memory)");
  app.add_option("--backend", a->backend,
                 "cpu, cpu-avx512, cpu-avx2, cpu-generic, reference or cuda "
                 "(the limits measured are the CPU's; the GPU's own: "
                 "cuda_bench, docs/cuda.md)")
      ->capture_default_str();
  app.add_option("--threads", a->threads,
                 "thread counts to measure, 1 to 256 (0: all cores)")
      ->delimiter(',')
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  app.add_option("--repeat", a->repeat, "runs per measurement (median)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--prompts", a->prompts,
                 "prompt lengths for time to first token: batched prefill "
                 "against cached steps (lengths above the context are "
                 "skipped)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_flag("!--no-long", a->long_context,
               "skip decode at positions 896-1023");
  app.add_option("--quant", a->quant,
                 "weight formats to measure side by side: none (binary32), "
                 "int8 (quantized in memory from the same weights, "
                 "docs/int8.md), or none,int8 (with the int8/binary32 "
                 "ratios); an int8 --model is measured as int8")
      ->delimiter(',')
      ->check(CLI::IsMember({"none", "int8"}))
      ->capture_default_str();
  app.add_option("--int8-kernels", a->int8_kernels,
                 "int8 kernel tables to measure side by side (with --quant "
                 "int8 or an int8 --model), e.g. avx2,avx-vnni or "
                 "avx512-vnni,amx: amx, avx512-vnni, avx-vnni, avx2, "
                 "neon-sdot, neon, generic (those this CPU runs; "
                 "$LOCKSTEP_Q8_KERNELS forces one for every command); "
                 "keys int8_<table>_..., ratios to the first")
      ->delimiter(',');
  app.add_flag("--json", a->json, "print JSON");
  return [a]() { return run(*a); };
}

}  // namespace lockstep::cli
