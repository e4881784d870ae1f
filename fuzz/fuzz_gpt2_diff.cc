// libFuzzer: a differential target. A small GPT-2 (sizes from the input)
// with seeded random weights, some of them overwritten by values from the
// input (any finite binary32: subnormals, huge values, exact ties), and
// tokens from the input, run by the scalar reference (core/ls_gpt2.c) and
// by every CPU backend this machine runs (each ISA, 1 and 3 threads): the
// cached steps, the full-prefix pass and a prefill must give the same
// status, and on success the same bytes (memcmp) in every logit and every
// cache word. docs/arithmetic.md is the contract; this is its fuzzed test.
#include <cmath>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "formats/gpt2_checkpoint.h"
#include "fuzz/fuzz_util.h"
#include "lockstep/error.h"

namespace {

using lockstep::fuzz::Fail;
using lockstep::fuzz::Reader;

// Everything one backend computes for the tokens.
struct Run {
  std::vector<ls_status> status;  // per step, then infer, then prefill
  std::vector<float> step_logits, cache, infer_logits, prefill_logits,
      prefill_cache;
};

Run RunAll(lockstep::Gpt2Backend& b, const ls_gpt2_config& c,
           const std::vector<int32_t>& tokens) {
  const size_t V = size_t(c.n_vocab);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  const size_t cap = ls_gpt2_cache_floats(&c);
  const int n = int(tokens.size());
  Run r;
  r.cache.assign(cap, 0.0f);
  r.step_logits.assign(V * tokens.size(), 0.0f);
  for (int i = 0; i < n; ++i) {
    const ls_status s = b.step(r.cache.data(), cap, size_t(i) * row,
                               tokens[size_t(i)], i, &r.step_logits[V * i]);
    r.status.push_back(s);
    if (s != LS_OK) break;  // later steps need this one's cache row
  }
  r.infer_logits.assign(V, 0.0f);
  r.status.push_back(b.infer(tokens.data(), n, r.infer_logits.data()));
  r.prefill_cache.assign(cap, 0.0f);
  r.prefill_logits.assign(V * tokens.size(), 0.0f);
  r.status.push_back(b.prefill(r.prefill_cache.data(), cap, 0, tokens.data(), n,
                               0, true, r.prefill_logits.data()));
  return r;
}

void Same(const std::vector<float>& got, const std::vector<float>& want,
          size_t n, const std::string& what, const std::string& backend) {
  if (std::memcmp(got.data(), want.data(), n * sizeof(float)) == 0) return;
  size_t i = 0;
  while (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) ++i;
  uint32_t g, w;
  std::memcpy(&g, &got[i], 4);
  std::memcpy(&w, &want[i], 4);
  std::fprintf(stderr, "%s: %s differs at index %zu: 0x%08x vs 0x%08x\n",
               backend.c_str(), what.c_str(), i, g, w);
  Fail("a backend's bytes differ from the reference's");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  ls_gpt2_config c{};
  c.n_vocab = 1 + in.u8() % 80;
  c.n_ctx = 1 + in.u8() % 12;
  c.n_head = 1 + in.u8() % 4;
  c.n_embd = c.n_head * (1 + in.u8() % 20);  // head sizes 1..20
  c.n_layer = 1 + in.u8() % 2;
  const int n_tokens = 1 + in.u8() % c.n_ctx;
  const uint64_t seed = in.u64();
  std::vector<float> w = lockstep::random_gpt2_weights(c, seed);
  std::vector<int32_t> tokens(static_cast<size_t>(n_tokens));
  for (auto& t : tokens) t = int32_t(in.u8()) % c.n_vocab;
  // The rest: (word index, binary32 bits) overrides, non-finite values
  // made finite (the loaders refuse them).
  while (in.left() >= 8) {
    const size_t at = in.u32() % w.size();
    const uint32_t bits = in.u32();
    float v;
    std::memcpy(&v, &bits, 4);
    if (!std::isfinite(v)) v = std::ldexp(1.0f, int(bits & 127));
    w[at] = v;
  }

  auto ref = lockstep::make_gpt2_backend("reference", c, w.data(), w.size(), 1,
                                         c.n_ctx);
  const Run want = RunAll(*ref, c, tokens);
  const size_t V = size_t(c.n_vocab);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  for (const std::string& name :
       lockstep::backends::available_gpt2_backends()) {
    if (name.rfind("cpu-", 0) != 0) continue;
    for (int threads : {1, 3}) {
      auto b = lockstep::make_gpt2_backend(name, c, w.data(), w.size(), threads,
                                           c.n_ctx);
      const Run got = RunAll(*b, c, tokens);
      const std::string who = name + " x" + std::to_string(threads);
      if (got.status != want.status) {
        std::fprintf(stderr, "%s: statuses differ from the reference's\n",
                     who.c_str());
        Fail("a backend's status differs from the reference's");
      }
      size_t ok_steps = 0;
      while (ok_steps < size_t(n_tokens) && want.status[ok_steps] == LS_OK) {
        ++ok_steps;
      }
      Same(got.step_logits, want.step_logits, V * ok_steps, "step logits", who);
      Same(got.cache, want.cache, row * ok_steps, "step cache", who);
      const size_t k = want.status.size();
      if (want.status[k - 2] == LS_OK) {
        Same(got.infer_logits, want.infer_logits, V, "infer logits", who);
      }
      if (want.status[k - 1] == LS_OK) {
        Same(got.prefill_logits, want.prefill_logits, V * size_t(n_tokens),
             "prefill logits", who);
        Same(got.prefill_cache, want.prefill_cache, row * size_t(n_tokens),
             "prefill cache", who);
      }
    }
  }
  return 0;
}
