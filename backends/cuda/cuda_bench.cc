// cuda_bench: GPT-2 124M on the CUDA backend against the device's own
// limits measured in the same run (scripts/cuda.sh, docs/cuda.md):
//  - the copy rate of a 1 GiB device-to-device copy (bytes read + written),
//    and the decode floor it implies: every weight read once per token;
//  - the non-FMA binary32 rate (a multiply, then an add);
//  - decode through the interface (logits and the new cache row copied back
//    to the host each step) at positions 0-127 and 896-1023, the device
//    time of one step alone (graph replay, no copies) at 0 and 1023, and
//    decode without the CUDA graph (LOCKSTEP_CUDA_GRAPH=0) and with each
//    decode product alone (LOCKSTEP_CUDA_MATVEC=1, 2, 3, 4; the default
//    mixes 1 and 3);
//  - time to first token: the batched prefill of 128 and 512 tokens into
//    an empty cache (through the interface, and the kernels alone), and
//    the full-prefix pass over 128;
//  - batches of 1, 8 and 32 independent sequences (cuda::step_batch):
//    tokens/s over 128 batched steps, and one batched step's device time;
//  - the same weights quantized to grouped int8 (docs/int8.md): decode,
//    the device step, kernel by kernel, and prefill, against the int8
//    floor (every weight byte read once per token at the copy rate).
// Seeded random weights (seed 20261130, as `lockstep bench`), random
// tokens. Prints JSON (stdout) and a table (stderr).
//   cuda_bench [--repeat N] [--batches-only]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lockstep/error.h"
#include "ls_sampler.h"

namespace {

using Clock = std::chrono::steady_clock;
using lockstep::Error;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void check(ls_status s, const char* what) {
  if (s != LS_OK) throw Error(std::string(what) + ": " + ls_status_message(s));
}

int run(int repeat, bool batches_only) {
  namespace cu = lockstep::backends::cuda;
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const size_t words = ls_gpt2_param_count(&c);
  const double weight_bytes = double(words) * 4;
  std::fprintf(stderr, "cuda_bench: seeded random GPT-2 124M weights\n");
  const std::vector<float> w = lockstep::random_gpt2_weights(c, 20261130);
  nlohmann::json out = {{"model", "random GPT-2 124M (seed 20261130)"},
                        {"weights_bytes", words * 4},
                        {"repeat", repeat},
                        {"device", lockstep::backends::cuda_device_name()}};

  std::fprintf(stderr, "cuda_bench: measuring the device's limits\n");
  const double bw = cu::copy_bandwidth_bytes_per_s(size_t(1) << 30, 20);
  const double peak = cu::nonfma_peak_flops();
  const double floor_tps = bw / weight_bytes;
  out["copy_bandwidth_gbps"] = bw / 1e9;
  out["decode_floor_tokens_per_s"] = floor_tps;
  out["nonfma_peak_gflops"] = peak / 1e9;

  const int longest = 512;
  auto be = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, longest);
  out["backend_name"] = be->name();
  out["backend_device_bytes"] = be->extra_memory_bytes();
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(V);
  uint64_t tok_state = 7;
  std::vector<int32_t> tokens(size_t(c.n_ctx));
  for (auto& t : tokens) {
    t = int32_t(ls_splitmix64_next(&tok_state) % uint64_t(c.n_vocab));
  }
  const int span = 128;
  auto decode = [&](lockstep::Gpt2Backend& b, int first) {
    const auto t0 = Clock::now();
    for (int p = first; p < first + span; ++p) {
      check(b.step(cache.data(), cache.size(), size_t(p) * row,
                   tokens[size_t(p)], p, logits.data()),
            "step");
    }
    return span / seconds_since(t0);
  };

  if (!batches_only) {
    std::fprintf(stderr, "cuda_bench: decode\n");
    decode(*be, 0);  // warm-up
    std::vector<double> short_runs, long_runs;
    for (int r = 0; r < repeat; ++r) short_runs.push_back(decode(*be, 0));
    for (int p = span; p < c.n_ctx - span; ++p) {
      check(be->step(cache.data(), cache.size(), size_t(p) * row,
                     tokens[size_t(p)], p, logits.data()),
            "fill");
    }
    for (int r = 0; r < repeat; ++r) {
      long_runs.push_back(decode(*be, c.n_ctx - span));
    }
    const double d0 = median(short_runs), d1 = median(long_runs);
    out["decode_tokens_per_s_pos0_127"] = d0;
    out["decode_tokens_per_s_pos896_1023"] = d1;
    out["decode_vs_floor_pos0_127"] = d0 / floor_tps;
    out["decode_vs_floor_pos896_1023"] = d1 / floor_tps;
    out["decode_runs_pos0_127"] = short_runs;
    out["decode_runs_pos896_1023"] = long_runs;

    // The device alone: one step's graph replay, no copies back.
    const double s0 = cu::device_step_seconds(*be, 0, tokens[0], 50);
    const double s1 = cu::device_step_seconds(*be, 1023, tokens[1023], 50);
    out["device_step_ms_pos0"] = s0 * 1e3;
    out["device_step_ms_pos1023"] = s1 * 1e3;
    out["device_step_tokens_per_s_pos0"] = 1 / s0;
    out["device_step_tokens_per_s_pos1023"] = 1 / s1;
    out["device_step_vs_floor_pos0"] = (1 / s0) / floor_tps;

    // Where one step's time goes (kernel by kernel, no graph; median of 5).
    for (int pos : {0, 1023}) {
      std::vector<std::vector<std::pair<std::string, double>>> runs;
      for (int r = 0; r < 6; ++r) {
        auto p = cu::profile_step(*be, pos, tokens[size_t(pos)]);
        if (r > 0) runs.push_back(p);
      }
      nlohmann::json prof = nlohmann::json::object();
      for (size_t i = 0; i < runs[0].size(); ++i) {
        std::vector<double> v;
        for (const auto& r : runs) v.push_back(r[i].second);
        prof[runs[0][i].first] = median(v);
      }
      out["profile_ms_pos" + std::to_string(pos)] = prof;
    }

    std::fprintf(stderr, "cuda_bench: prefill\n");
    auto flops_for = [&](double n) {
      const double C = c.n_embd, L = c.n_layer;
      return 2 * n * L * 12 * C * C + 2 * L * C * n * (n + 1) +
             2 * double(c.n_vocab) * C;
    };
    for (int n : {128, 512}) {
      std::vector<double> runs;
      for (int r = 0; r <= repeat; ++r) {
        const auto t0 = Clock::now();
        check(be->prefill(cache.data(), cache.size(), 0, tokens.data(), n, 0,
                          false, logits.data()),
              "prefill");
        if (r > 0) runs.push_back(seconds_since(t0));  // the first warms up
      }
      const double s = median(runs);
      const std::string k = std::to_string(n);
      out["ttft_prefill_s_" + k] = s;
      out["prefill_" + k + "_tokens_per_s"] = n / s;
      out["prefill_" + k + "_gflops"] = flops_for(n) / s / 1e9;
      out["prefill_" + k + "_vs_nonfma_peak"] = flops_for(n) / s / peak;
      // The kernels alone (no cache rows or logits copied back; median of
      // 20 or more).
      const double dev = cu::device_prefill_seconds(*be, tokens.data(), n,
                                                    std::max(repeat, 20));
      out["device_prefill_s_" + k] = dev;
      out["device_prefill_" + k + "_tokens_per_s"] = n / dev;
      out["device_prefill_" + k + "_vs_nonfma_peak"] =
          flops_for(n) / dev / peak;
    }
    {
      // Where a 512-token prefill's time goes (kernel by kernel; median of
      // 3 after a warm-up).
      std::vector<std::vector<std::pair<std::string, double>>> runs;
      for (int r = 0; r < 4; ++r) {
        auto p = cu::profile_prefill(*be, tokens.data(), 512);
        if (r > 0) runs.push_back(p);
      }
      nlohmann::json prof = nlohmann::json::object();
      for (size_t i = 0; i < runs[0].size(); ++i) {
        std::vector<double> v;
        for (const auto& r : runs) v.push_back(r[i].second);
        prof[runs[0][i].first] = median(v);
      }
      out["prefill_profile_ms_512"] = prof;
    }
    {
      std::vector<double> runs;
      for (int r = 0; r <= repeat; ++r) {
        const auto t0 = Clock::now();
        check(be->infer(tokens.data(), span, logits.data()), "infer");
        if (r > 0) runs.push_back(seconds_since(t0));
      }
      out["infer128_s"] = median(runs);
    }
  }  // !batches_only

  // Batches (cuda::step_batch): B independent sequences from position 0,
  // 128 batched steps, every member's logits and new cache row copied back
  // each step; tokens/s counts every member's tokens. And one batched
  // step's device time (graph replay) at positions 0 and 0..B-1 spread.
  std::fprintf(stderr, "cuda_bench: batches\n");
  for (int B : {1, 8, 32}) {
    const size_t cap = size_t(span + 1) * row;
    std::vector<std::vector<float>> caches(static_cast<size_t>(B),
                                           std::vector<float>(cap));
    std::vector<float*> ptrs(static_cast<size_t>(B));
    std::vector<size_t> caps(static_cast<size_t>(B), cap),
        lens(static_cast<size_t>(B));
    std::vector<int32_t> toks(static_cast<size_t>(B)),
        poss(static_cast<size_t>(B));
    std::vector<float> blog(static_cast<size_t>(B) * V);
    for (int i = 0; i < B; ++i) ptrs[size_t(i)] = caches[size_t(i)].data();
    auto batch_decode = [&]() {
      const auto t0 = Clock::now();
      for (int p = 0; p < span; ++p) {
        for (int i = 0; i < B; ++i) {
          lens[size_t(i)] = size_t(p) * row;
          poss[size_t(i)] = p;
          toks[size_t(i)] = tokens[size_t((p + 37 * i) % c.n_ctx)];
        }
        check(cu::step_batch(*be, B, ptrs.data(), caps.data(), lens.data(),
                             toks.data(), poss.data(), blog.data()),
              "step_batch");
      }
      return double(B) * span / seconds_since(t0);
    };
    batch_decode();  // warm-up (and the graph's capture)
    std::vector<double> runs;
    for (int r = 0; r < repeat; ++r) runs.push_back(batch_decode());
    const std::string k = "batch" + std::to_string(B);
    out[k + "_decode_tokens_per_s_pos0_127"] = median(runs);
    out[k + "_decode_runs"] = runs;
    for (int i = 0; i < B; ++i) poss[size_t(i)] = 0;
    const double d0 =
        cu::device_batch_step_seconds(*be, B, toks.data(), poss.data(), 50);
    for (int i = 0; i < B; ++i)
      poss[size_t(i)] = (i * 127) / std::max(1, B - 1);
    const double dm =
        cu::device_batch_step_seconds(*be, B, toks.data(), poss.data(), 50);
    out[k + "_device_step_ms_pos0"] = d0 * 1e3;
    out[k + "_device_step_tokens_per_s_pos0"] = B / d0;
    out[k + "_device_step_ms_pos0_127_spread"] = dm * 1e3;
    std::fprintf(stderr, "%-40s %14.4f\n%-40s %14.4f\n",
                 (k + "_decode_tokens_per_s_pos0_127").c_str(), median(runs),
                 (k + "_device_step_ms_pos0").c_str(), d0 * 1e3);
  }
  be.reset();
  if (batches_only) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }

  // The other decode products (LOCKSTEP_CUDA_MATVEC=2, 3), graph on.
  for (const char* v : {"1", "2", "3", "4"}) {
    setenv("LOCKSTEP_CUDA_MATVEC", v, 1);
    auto b = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, 16);
    const std::string k = std::string("matvec") + v;
    out[k + "_backend_name"] = b->name();
    decode(*b, 0);
    std::vector<double> runs;
    for (int r = 0; r < repeat; ++r) runs.push_back(decode(*b, 0));
    out[k + "_decode_tokens_per_s_pos0_127"] = median(runs);
    out[k + "_device_step_ms_pos0"] =
        cu::device_step_seconds(*b, 0, tokens[0], 50) * 1e3;
  }
  unsetenv("LOCKSTEP_CUDA_MATVEC");

  // The same decode with plain launches (no graph).
  setenv("LOCKSTEP_CUDA_GRAPH", "0", 1);
  auto plain = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, 16);
  decode(*plain, 0);
  std::vector<double> plain_runs;
  for (int r = 0; r < repeat; ++r) plain_runs.push_back(decode(*plain, 0));
  out["decode_no_graph_tokens_per_s_pos0_127"] = median(plain_runs);
  unsetenv("LOCKSTEP_CUDA_GRAPH");
  plain.reset();

  // The same decode without programmatic dependent launch (each kernel
  // starts only when the one before it has finished).
  {
    setenv("LOCKSTEP_CUDA_PDL", "0", 1);
    auto b = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, 16);
    unsetenv("LOCKSTEP_CUDA_PDL");
    out["no_pdl_backend_name"] = b->name();
    decode(*b, 0);
    std::vector<double> runs;
    for (int r = 0; r < repeat; ++r) runs.push_back(decode(*b, 0));
    out["decode_no_pdl_tokens_per_s_pos0_127"] = median(runs);
    out["no_pdl_device_step_ms_pos0"] =
        cu::device_step_seconds(*b, 0, tokens[0], 50) * 1e3;
  }

  // Prefill of 512 with the other batched products: matmul_kernel
  // (LOCKSTEP_CUDA_MATMUL=1), matmul2_kernel (2), the default with each
  // split forced
  // (LOCKSTEP_CUDA_SPLIT), attention_kernel for the pass
  // (LOCKSTEP_CUDA_ATTN=1), and without programmatic dependent launch.
  for (const auto& [name, var, val] :
       std::vector<std::tuple<std::string, const char*, const char*>>{
           {"matmul1", "LOCKSTEP_CUDA_MATMUL", "1"},
           {"matmul2", "LOCKSTEP_CUDA_MATMUL", "2"},
           {"split1", "LOCKSTEP_CUDA_SPLIT", "1"},
           {"split2", "LOCKSTEP_CUDA_SPLIT", "2"},
           {"split4", "LOCKSTEP_CUDA_SPLIT", "4"},
           {"attn1", "LOCKSTEP_CUDA_ATTN", "1"},
           {"attn2", "LOCKSTEP_CUDA_ATTN", "2"},
           {"no_pdl", "LOCKSTEP_CUDA_PDL", "0"}}) {
    setenv(var, val, 1);
    auto b = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, 512);
    unsetenv(var);
    out["prefill_" + name + "_backend_name"] = b->name();
    out["device_prefill_s_512_" + name] =
        cu::device_prefill_seconds(*b, tokens.data(), 512, repeat);
  }

  // Kernel and copy variants, each in its own backend (environment
  // variables read at creation): decode at 0-127 and 896-1023 through the
  // interface, the device step at 0 and 1023, and the 512-token prefill's
  // kernels. LOCKSTEP_BENCH_VARIANTS replaces the list:
  // "name:VAR=VAL,VAR=VAL;name2:...".
  {
    std::string spec =
        "attn2:LOCKSTEP_CUDA_ATTN=2;attnq32:LOCKSTEP_CUDA_ATTN_Q=32;"
        "step1:LOCKSTEP_CUDA_ATTN_STEP=1;ln1:LOCKSTEP_CUDA_LN=1;"
        "logits1:LOCKSTEP_CUDA_LOGITS=1;no_overlap:LOCKSTEP_CUDA_OVERLAP=0;"
        "early0:LOCKSTEP_CUDA_ATTN_EARLY=0;"
        "early1024:LOCKSTEP_CUDA_ATTN_EARLY=1024;"
        "split12:LOCKSTEP_CUDA_LOGITS_SPLIT=12;"
        "split4:LOCKSTEP_CUDA_LOGITS_SPLIT=4;"
        "p_default:LOCKSTEP_CUDA_SPLITS=0,0,0,0;p_mm2:LOCKSTEP_CUDA_MATMUL=2;"
        "p_ln1:LOCKSTEP_CUDA_LN=1;p_mm2b:LOCKSTEP_CUDA_MATMUL=2;"
        "p_q2:LOCKSTEP_CUDA_SPLITS=2,0,0,0;"
        "p_mm2_q2:LOCKSTEP_CUDA_MATMUL=2,LOCKSTEP_CUDA_SPLITS=2,0,0,0;"
        "p_q4:LOCKSTEP_CUDA_SPLITS=4,0,0,0;p_p2:LOCKSTEP_CUDA_SPLITS=0,2,0,0;"
        "p_p1:LOCKSTEP_CUDA_SPLITS=0,1,0,0;p_f4:LOCKSTEP_CUDA_SPLITS=0,0,4,0;"
        "p_o2:LOCKSTEP_CUDA_SPLITS=0,0,0,2;p_default2:LOCKSTEP_CUDA_SPLITS=0,0,"
        "0,0";
    if (const char* e = std::getenv("LOCKSTEP_BENCH_VARIANTS")) spec = e;
    std::fprintf(stderr, "cuda_bench: variants\n");
    size_t at = 0;
    while (at < spec.size()) {
      size_t end = spec.find(';', at);
      if (end == std::string::npos) end = spec.size();
      const std::string item = spec.substr(at, end - at);
      at = end + 1;
      const size_t colon = item.find(':');
      if (colon == std::string::npos) continue;
      const std::string name = item.substr(0, colon);
      std::vector<std::string> vars;
      // A piece without '=' continues the value before it (the comma
      // kept): LOCKSTEP_CUDA_SPLITS=0,2,0,0 is one setting (until
      // 2026-12-03 it was cut to LOCKSTEP_CUDA_SPLITS=0, so the p_p2, p_p1,
      // p_f4 and p_o2 variants ran the default splits).
      std::vector<std::pair<std::string, std::string>> settings;
      size_t a = colon + 1;
      while (a < item.size()) {
        size_t e = item.find(',', a);
        if (e == std::string::npos) e = item.size();
        const std::string kv = item.substr(a, e - a);
        a = e + 1;
        const size_t eq = kv.find('=');
        if (eq != std::string::npos) {
          settings.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
        } else if (!settings.empty()) {
          settings.back().second += "," + kv;
        }
      }
      for (const auto& [var, val] : settings) {
        setenv(var.c_str(), val.c_str(), 1);
        vars.push_back(var);
      }
      auto b = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, 512);
      for (const auto& v : vars) unsetenv(v.c_str());
      const std::string k = "variant_" + name + "_";
      out[k + "backend_name"] = b->name();
      // Names starting "p_": the prefill's kernels only.
      if (name.rfind("p_", 0) == 0) {
        out[k + "device_prefill_s_512"] = cu::device_prefill_seconds(
            *b, tokens.data(), 512, std::max(repeat, 20));
        continue;
      }
      std::vector<double> runs, long_runs;
      decode(*b, 0);
      for (int r = 0; r < repeat; ++r) runs.push_back(decode(*b, 0));
      decode(*b, c.n_ctx - span);
      for (int r = 0; r < repeat; ++r) {
        long_runs.push_back(decode(*b, c.n_ctx - span));
      }
      out[k + "decode_tokens_per_s_pos0_127"] = median(runs);
      out[k + "decode_tokens_per_s_pos896_1023"] = median(long_runs);
      out[k + "device_step_ms_pos0"] =
          cu::device_step_seconds(*b, 0, tokens[0], 50) * 1e3;
      out[k + "device_step_ms_pos1023"] =
          cu::device_step_seconds(*b, 1023, tokens[1023], 50) * 1e3;
      out[k + "device_prefill_s_512"] = cu::device_prefill_seconds(
          *b, tokens.data(), 512, std::max(repeat, 20));
    }
  }

  // Where the device step's time goes inside the graph: the step's device
  // time with kernels left out (LOCKSTEP_CUDA_TIMING_SKIP; the results are
  // wrong, only the time is used). LOCKSTEP_BENCH_SKIPS replaces the list
  // ("attn;logits;qkv,fc;...").
  {
    std::string spec = "attn;logits;qkv;proj;fc;out";
    if (const char* e = std::getenv("LOCKSTEP_BENCH_SKIPS")) spec = e;
    size_t at = 0;
    while (at < spec.size()) {
      size_t end = spec.find(';', at);
      if (end == std::string::npos) end = spec.size();
      const std::string item = spec.substr(at, end - at);
      at = end + 1;
      if (item.empty()) continue;
      setenv("LOCKSTEP_CUDA_TIMING_SKIP", item.c_str(), 1);
      auto b = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, 16);
      unsetenv("LOCKSTEP_CUDA_TIMING_SKIP");
      std::string k = "variant_skip_" + item + "_";
      std::replace(k.begin(), k.end(), ',', '_');
      out[k + "device_step_ms_pos0"] =
          cu::device_step_seconds(*b, 0, tokens[0], 50) * 1e3;
      out[k + "device_step_ms_pos1023"] =
          cu::device_step_seconds(*b, 1023, tokens[1023], 50) * 1e3;
    }
  }

  // Grouped int8: the same weights quantized (docs/int8.md).
  std::fprintf(stderr, "cuda_bench: int8\n");
  try {
    const std::vector<uint8_t> q8 = lockstep::quantize_gpt2_q8(c, w.data());
    const double q8_floor = bw / double(q8.size());
    out["q8_weights_bytes"] = q8.size();
    out["q8_decode_floor_tokens_per_s"] = q8_floor;
    auto qb =
        lockstep::backends::make_cuda_q8_backend(c, q8.data(), q8.size(), 512);
    out["q8_backend_name"] = qb->name();
    decode(*qb, 0);
    std::vector<double> runs, long_q8;
    for (int r = 0; r < repeat; ++r) runs.push_back(decode(*qb, 0));
    for (int p = span; p < c.n_ctx - span; ++p) {
      check(qb->step(cache.data(), cache.size(), size_t(p) * row,
                     tokens[size_t(p)], p, logits.data()),
            "q8 fill");
    }
    for (int r = 0; r < repeat; ++r) {
      long_q8.push_back(decode(*qb, c.n_ctx - span));
    }
    out["q8_decode_tokens_per_s_pos0_127"] = median(runs);
    out["q8_decode_tokens_per_s_pos896_1023"] = median(long_q8);
    out["q8_decode_vs_floor_pos0_127"] = median(runs) / q8_floor;
    const double q0 = cu::device_step_seconds(*qb, 0, tokens[0], 50);
    const double q1 = cu::device_step_seconds(*qb, 1023, tokens[1023], 50);
    out["q8_device_step_ms_pos0"] = q0 * 1e3;
    out["q8_device_step_ms_pos1023"] = q1 * 1e3;
    out["q8_device_step_vs_floor_pos0"] = (1 / q0) / q8_floor;
    std::vector<std::vector<std::pair<std::string, double>>> prof_runs;
    for (int r = 0; r < 6; ++r) {
      auto p = cu::profile_step(*qb, 0, tokens[0]);
      if (r > 0) prof_runs.push_back(p);
    }
    nlohmann::json prof = nlohmann::json::object();
    for (size_t i = 0; i < prof_runs[0].size(); ++i) {
      std::vector<double> v;
      for (const auto& r : prof_runs) v.push_back(r[i].second);
      prof[prof_runs[0][i].first] = median(v);
    }
    out["q8_profile_ms_pos0"] = prof;
    for (int n : {128, 512}) {
      std::vector<double> pr;
      for (int r = 0; r <= repeat; ++r) {
        const auto t0 = Clock::now();
        check(qb->prefill(cache.data(), cache.size(), 0, tokens.data(), n, 0,
                          false, logits.data()),
              "q8 prefill");
        if (r > 0) pr.push_back(seconds_since(t0));
      }
      const std::string k = std::to_string(n);
      out["q8_ttft_prefill_s_" + k] = median(pr);
      out["q8_prefill_" + k + "_tokens_per_s"] = n / median(pr);
      out["q8_device_prefill_s_" + k] =
          cu::device_prefill_seconds(*qb, tokens.data(), n, repeat);
    }
    // The quantization as its own launch before each product
    // (LOCKSTEP_CUDA_Q8_FUSE=0), for comparison.
    setenv("LOCKSTEP_CUDA_Q8_FUSE", "0", 1);
    auto uq =
        lockstep::backends::make_cuda_q8_backend(c, q8.data(), q8.size(), 16);
    unsetenv("LOCKSTEP_CUDA_Q8_FUSE");
    out["q8_unfused_backend_name"] = uq->name();
    decode(*uq, 0);
    std::vector<double> ur;
    for (int r = 0; r < repeat; ++r) ur.push_back(decode(*uq, 0));
    out["q8_unfused_decode_tokens_per_s_pos0_127"] = median(ur);
    out["q8_unfused_device_step_ms_pos0"] =
        cu::device_step_seconds(*uq, 0, tokens[0], 50) * 1e3;
  } catch (const std::exception& e) {
    // The binary32 results above are still printed.
    out["q8_error"] = e.what();
    std::fprintf(stderr, "cuda_bench: int8: %s\n", e.what());
  }

  std::printf("%s\n", out.dump(2).c_str());
  for (const char* k : {"copy_bandwidth_gbps",
                        "decode_floor_tokens_per_s",
                        "nonfma_peak_gflops",
                        "decode_tokens_per_s_pos0_127",
                        "decode_vs_floor_pos0_127",
                        "decode_tokens_per_s_pos896_1023",
                        "device_step_ms_pos0",
                        "device_step_ms_pos1023",
                        "device_step_vs_floor_pos0",
                        "decode_no_graph_tokens_per_s_pos0_127",
                        "decode_no_pdl_tokens_per_s_pos0_127",
                        "no_pdl_device_step_ms_pos0",
                        "matvec1_decode_tokens_per_s_pos0_127",
                        "matvec1_device_step_ms_pos0",
                        "matvec2_decode_tokens_per_s_pos0_127",
                        "matvec2_device_step_ms_pos0",
                        "matvec3_decode_tokens_per_s_pos0_127",
                        "matvec3_device_step_ms_pos0",
                        "matvec4_decode_tokens_per_s_pos0_127",
                        "matvec4_device_step_ms_pos0",
                        "ttft_prefill_s_128",
                        "ttft_prefill_s_512",
                        "prefill_512_tokens_per_s",
                        "prefill_512_gflops",
                        "prefill_512_vs_nonfma_peak",
                        "device_prefill_s_512",
                        "device_prefill_512_vs_nonfma_peak",
                        "device_prefill_s_512_matmul1",
                        "device_prefill_s_512_split1",
                        "device_prefill_s_512_split2",
                        "device_prefill_s_512_split4",
                        "device_prefill_s_512_attn1",
                        "device_prefill_s_512_attn2",
                        "device_prefill_s_512_no_pdl",
                        "infer128_s",
                        "batch1_decode_tokens_per_s_pos0_127",
                        "batch8_decode_tokens_per_s_pos0_127",
                        "batch32_decode_tokens_per_s_pos0_127",
                        "batch1_device_step_ms_pos0",
                        "batch8_device_step_ms_pos0",
                        "batch32_device_step_ms_pos0",
                        "batch32_device_step_tokens_per_s_pos0",
                        "batch32_device_step_ms_pos0_127_spread",
                        "q8_decode_floor_tokens_per_s",
                        "q8_decode_tokens_per_s_pos0_127",
                        "q8_decode_vs_floor_pos0_127",
                        "q8_decode_tokens_per_s_pos896_1023",
                        "q8_device_step_ms_pos0",
                        "q8_device_step_ms_pos1023",
                        "q8_device_step_vs_floor_pos0",
                        "q8_ttft_prefill_s_128",
                        "q8_ttft_prefill_s_512",
                        "q8_prefill_512_tokens_per_s",
                        "q8_device_prefill_s_512",
                        "q8_unfused_decode_tokens_per_s_pos0_127",
                        "q8_unfused_device_step_ms_pos0"}) {
    if (out.contains(k)) {
      std::fprintf(stderr, "%-40s %14.4f\n", k, out[k].get<double>());
    }
  }
  for (const auto& [key, val] : out.items()) {
    if (key.rfind("variant_", 0) == 0 && val.is_number()) {
      std::fprintf(stderr, "%-48s %14.4f\n", key.c_str(), val.get<double>());
    }
  }
  for (const char* k : {"profile_ms_pos0", "profile_ms_pos1023",
                        "q8_profile_ms_pos0", "prefill_profile_ms_512"}) {
    if (!out.contains(k)) continue;
    std::fprintf(stderr, "%s (kernel by kernel, no graph):\n", k);
    for (const auto& [label, ms] : out[k].items()) {
      std::fprintf(stderr, "  %-36s %10.4f ms\n", label.c_str(),
                   ms.get<double>());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  bool batches_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--batches-only") == 0) {
      batches_only = true;
    } else {
      std::fprintf(stderr, "usage: cuda_bench [--repeat N] [--batches-only]\n");
      return 2;
    }
  }
  if (repeat < 1 || repeat > 100) {
    std::fprintf(stderr, "cuda_bench: --repeat must be 1 .. 100\n");
    return 2;
  }
  try {
    return run(repeat, batches_only);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_bench: %s\n", e.what());
    return 1;
  }
}
