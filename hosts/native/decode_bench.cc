// The native half of hosts/node/bench.mjs: single-thread decode on the CPU
// backend, timed the way the Node.js half times the WebAssembly module
// (cached steps after a prompt, per-token milliseconds), so the two can be
// compared as a ratio in one run.
//   wasm_decode_bench --write-random-124m OUT.lockstep [--layers L]
//   wasm_decode_bench --write-random-124m-int8 OUT.lockstep [--layers L]
//     (the same seeded weights quantized to int8, as `lockstep convert
//     OUT.lockstep Q.lockstep --quant int8` would write them)
//   wasm_decode_bench --model M.lockstep --prompt P --steps N [--backend B]
//                     [--prefill T]
// prints one JSON object: {"backend", "ms_per_token": [...]} (one entry
// per step) and, with --prefill T, "prefill_ms": one Gpt2Session::prefill
// of a T-token prompt (bench.mjs's tokens) from an empty cache. An int8
// file (docs/int8.md) runs on whatever `backend` runs int8 with (the
// summary's "backend" names it).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"

namespace {

int run(int argc, char** argv) {
  std::string model, write_random, write_random_q8, backend = "cpu";
  int prompt = 16, steps = 32, layers = 12, prefill = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw lockstep::Error(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--model") {
      model = v;
    } else if (a == "--write-random-124m") {
      write_random = v;
    } else if (a == "--write-random-124m-int8") {
      write_random_q8 = v;
    } else if (a == "--prompt") {
      prompt = std::stoi(v);
    } else if (a == "--steps") {
      steps = std::stoi(v);
    } else if (a == "--prefill") {
      prefill = std::stoi(v);
    } else if (a == "--layers") {
      layers = std::stoi(v);
    } else if (a == "--backend") {
      backend = v;
    } else {
      throw lockstep::Error("unknown option " + a);
    }
  }
  if (!write_random.empty() || !write_random_q8.empty()) {
    ls_gpt2_config c = lockstep::kGpt2_124M;
    c.n_layer = layers;  // fewer layers: the same per-layer work, faster
    const auto w = lockstep::random_gpt2_weights(c, 124);
    const nlohmann::json meta = {{"source", "random_gpt2_weights(seed 124)"}};
    if (!write_random.empty()) {
      lockstep::write_gpt2_packed(write_random, c, w.data(), w.size(), meta);
    }
    if (!write_random_q8.empty()) {
      lockstep::write_gpt2_q8(write_random_q8, c, w.data(), meta);
    }
    return 0;
  }
  if (model.empty()) throw lockstep::Error("--model is required");
  if (prompt < 1 || steps < 1) throw lockstep::Error("bad --prompt/--steps");
  const lockstep::Gpt2Weights w = lockstep::load_gpt2_any(model, false);
  const ls_gpt2_config& c = w.config;
  if (prompt + steps > c.n_ctx || prefill < 0 || prefill > c.n_ctx) {
    throw lockstep::Error("past the context");
  }
  lockstep::Gpt2Session s(
      {c, w.data(), w.words(), w.layout, w.q8_data(), w.q8_bytes()},
      {backend, 1, prefill > 1 ? prefill : 1});
  // Tokens as bench.mjs draws them: 1000 + 37 i mod n_vocab.
  int32_t token = 0;
  for (int i = 0; i < prompt; ++i) {
    token = int32_t((1000 + 37 * i) % c.n_vocab);
    s.step(token);
  }
  std::printf("{\"backend\": \"%s\", \"ms_per_token\": [",
              s.backend_name().c_str());
  for (int i = 0; i < steps; ++i) {
    token = int32_t((1000 + 37 * (prompt + i)) % c.n_vocab);
    const auto t0 = std::chrono::steady_clock::now();
    s.step(token);
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
    std::printf("%s%.4f", i ? ", " : "", ms);
  }
  std::printf("]");
  if (prefill > 0) {
    std::vector<int32_t> tokens(size_t(prefill), 0);
    for (int i = 0; i < prefill; ++i) {
      tokens[size_t(i)] = int32_t((1000 + 37 * i) % c.n_vocab);
    }
    s.reset();
    const auto t0 = std::chrono::steady_clock::now();
    s.prefill(tokens);
    std::printf(", \"prefill_ms\": %.4f",
                std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count());
  }
  std::printf("}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wasm_decode_bench: error: %s\n", e.what());
    return 1;
  }
}
