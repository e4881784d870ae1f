// cuda_exactness_bench: the cost of exactness (docs/cuda.md, issue 10).
// The CUDA backend's exact kernels (the spec's bits) against the same
// kernels built with LOCKSTEP_CUDA_FAST (cuda_backend_fast.cu: fused
// multiply-adds, LayerNorm's and softmax's sums split across lanes), on
// the seeded random GPT-2 124M, in one run and interleaved (exact, fast,
// exact, fast, ...; medians of the rounds):
//  - decode through the interface at positions 0-127 (logits and the new
//    cache row to the host each step);
//  - one step's device time (graph replay) at positions 0 and 1023;
//  - time to first token of a 512-token prefill (the interface, and the
//    kernels alone);
//  - one batched step of 32 sequences (device time);
// the ratios exact / fast (time) and fast / exact (tokens/s), and how far
// the fast logits are from the exact ones over 128 cached steps (floats
// that differ, the largest difference, the relative 2-norm, the greedy
// tokens that change). Exits 1 if no logit differs: the switch would not
// be real. Prints JSON (stdout) and a table (stderr).
//   cuda_exactness_bench [--repeat N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "ls_gpt2_layout.h"
#include "ls_sampler.h"

namespace {

using Clock = std::chrono::steady_clock;
using lockstep::Error;
namespace bk = lockstep::backends;

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

struct Variant {
  std::string key;  // "exact" or "fast"
  std::unique_ptr<lockstep::Gpt2Backend> b;
  bool fast = false;
  double step_s(int pos, int tok) {
    return fast ? bk::cuda_fast::device_step_seconds(*b, pos, tok, 50)
                : bk::cuda::device_step_seconds(*b, pos, tok, 50);
  }
  double prefill_s(const int32_t* t, int n, int reps) {
    return fast ? bk::cuda_fast::device_prefill_seconds(*b, t, n, reps)
                : bk::cuda::device_prefill_seconds(*b, t, n, reps);
  }
  double batch_s(int n, const int32_t* t, const int32_t* p) {
    return fast ? bk::cuda_fast::device_batch_step_seconds(*b, n, t, p, 50)
                : bk::cuda::device_batch_step_seconds(*b, n, t, p, 50);
  }
};

int run(int repeat) {
  const ls_gpt2_config c = lockstep::kGpt2_124M;
  const size_t words = ls_gpt2_param_count(&c);
  std::fprintf(stderr, "cuda_exactness_bench: seeded random GPT-2 124M\n");
  const std::vector<float> w = lockstep::random_gpt2_weights(c, 20261130);
  const size_t row = ls_gpt2_cache_row_floats(&c), V = size_t(c.n_vocab);
  uint64_t tok_state = 7;
  std::vector<int32_t> tokens(size_t(c.n_ctx));
  for (auto& t : tokens) {
    t = int32_t(ls_splitmix64_next(&tok_state) % uint64_t(c.n_vocab));
  }
  Variant vs[2];
  vs[0].key = "exact";
  vs[0].b = lockstep::make_gpt2_backend("cuda", c, w.data(), words, 1, 512);
  vs[1].key = "fast";
  vs[1].fast = true;
  vs[1].b = bk::cuda_fast::make_cuda_backend(c, w.data(), words, 512,
                                             LS_GPT2_LAYOUT_PLAIN);
  nlohmann::json out = {{"model", "random GPT-2 124M (seed 20261130)"},
                        {"device", bk::cuda_device_name()},
                        {"repeat", repeat},
                        {"exact_backend_name", vs[0].b->name()},
                        {"fast_backend_name", vs[1].b->name()}};

  // How far the fast variant is: 128 cached steps of each, same tokens.
  const int span = 128;
  std::vector<std::vector<float>> lg(2, std::vector<float>(size_t(span) * V));
  for (int k = 0; k < 2; ++k) {
    std::vector<float> cache(size_t(span) * row);
    for (int p = 0; p < span; ++p) {
      check(vs[k].b->step(cache.data(), cache.size(), size_t(p) * row,
                          tokens[size_t(p)], p, lg[size_t(k)].data() + p * V),
            "step");
    }
  }
  size_t differ = 0, argmax_changed = 0;
  double max_abs = 0, num = 0, den = 0;
  for (int p = 0; p < span; ++p) {
    const float* e = lg[0].data() + p * V;
    const float* f = lg[1].data() + p * V;
    for (size_t i = 0; i < V; ++i) {
      differ += std::memcmp(e + i, f + i, 4) != 0;
      const double d = double(f[i]) - double(e[i]);
      max_abs = std::max(max_abs, std::fabs(d));
      num += d * d;
      den += double(e[i]) * double(e[i]);
    }
    argmax_changed +=
        std::max_element(e, e + V) - e != std::max_element(f, f + V) - f;
  }
  out["logits_compared"] = size_t(span) * V;
  out["logits_differ"] = differ;
  out["logits_max_abs_diff"] = max_abs;
  out["logits_rel_l2"] = std::sqrt(num / den);
  out["greedy_tokens_changed_of_128"] = argmax_changed;

  // Timings, interleaved by round.
  std::vector<float> cache(ls_gpt2_cache_floats(&c)), logits(V);
  std::vector<int32_t> bt(32), bp(32, 0);
  for (int i = 0; i < 32; ++i) bt[size_t(i)] = tokens[size_t(i)];
  std::vector<double> dec[2], st0[2], st1[2], ttft[2], dpre[2], b32[2];
  for (int r = 0; r <= repeat; ++r) {  // round 0 warms up
    for (int k = 0; k < 2; ++k) {
      Variant& v = vs[k];
      auto t0 = Clock::now();
      for (int p = 0; p < span; ++p) {
        check(v.b->step(cache.data(), cache.size(), size_t(p) * row,
                        tokens[size_t(p)], p, logits.data()),
              "step");
      }
      const double d = span / seconds_since(t0);
      const double s0 = v.step_s(0, tokens[0]);
      const double s1 = v.step_s(1023, tokens[1023]);
      t0 = Clock::now();
      check(v.b->prefill(cache.data(), cache.size(), 0, tokens.data(), 512, 0,
                         false, logits.data()),
            "prefill");
      const double tt = seconds_since(t0);
      const double dp = v.prefill_s(tokens.data(), 512, 5);
      const double bs = v.batch_s(32, bt.data(), bp.data());
      if (r == 0) continue;
      dec[k].push_back(d);
      st0[k].push_back(s0);
      st1[k].push_back(s1);
      ttft[k].push_back(tt);
      dpre[k].push_back(dp);
      b32[k].push_back(bs);
    }
  }
  for (int k = 0; k < 2; ++k) {
    const std::string p = vs[k].key + "_";
    out[p + "decode_tokens_per_s_pos0_127"] = median(dec[k]);
    out[p + "decode_runs"] = dec[k];
    out[p + "device_step_ms_pos0"] = median(st0[k]) * 1e3;
    out[p + "device_step_ms_pos1023"] = median(st1[k]) * 1e3;
    out[p + "ttft_prefill_s_512"] = median(ttft[k]);
    out[p + "device_prefill_s_512"] = median(dpre[k]);
    out[p + "batch32_device_step_ms_pos0"] = median(b32[k]) * 1e3;
  }
  out["ratio_decode_exact_over_fast"] =
      median(dec[0]) / median(dec[1]);  // tokens/s: < 1 means exact slower
  out["ratio_device_step_pos0_exact_over_fast"] =
      median(st0[0]) / median(st0[1]);  // time: > 1 means exact slower
  out["ratio_device_step_pos1023_exact_over_fast"] =
      median(st1[0]) / median(st1[1]);
  out["ratio_ttft_prefill_512_exact_over_fast"] =
      median(ttft[0]) / median(ttft[1]);
  out["ratio_device_prefill_512_exact_over_fast"] =
      median(dpre[0]) / median(dpre[1]);
  out["ratio_batch32_device_step_exact_over_fast"] =
      median(b32[0]) / median(b32[1]);

  std::printf("%s\n", out.dump(2).c_str());
  for (const auto& [k, v] : out.items()) {
    if (v.is_number()) {
      std::fprintf(stderr, "%-46s %14.6g\n", k.c_str(), v.get<double>());
    }
  }
  if (differ == 0) {
    std::fprintf(stderr,
                 "cuda_exactness_bench: the fast variant's logits equal the "
                 "exact ones: the switch is not real\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: cuda_exactness_bench [--repeat N]\n");
      return 2;
    }
  }
  if (repeat < 1 || repeat > 100) {
    std::fprintf(stderr, "cuda_exactness_bench: --repeat must be 1 .. 100\n");
    return 2;
  }
  try {
    return run(repeat);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_exactness_bench: %s\n", e.what());
    return 1;
  }
}
