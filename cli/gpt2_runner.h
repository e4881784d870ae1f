// The GPT-2 session behind `generate` and `logits`: a native backend
// (Gpt2Session) or, for --backend wasm, the WebAssembly module in Node.js
// (hosts/native/wasm_host.h). Both return the same bits; the commands' own
// code (tokenizer, sampler, output) is the same for both.
#ifndef LOCKSTEP_CLI_GPT2_RUNNER_H_
#define LOCKSTEP_CLI_GPT2_RUNNER_H_

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"

namespace lockstep::cli {

class Gpt2Runner {
 public:
  Gpt2Runner(const std::string& path, const Gpt2Weights& w,
             const std::string& backend, int threads, int max_prefix)
      : threads_(backend == "wasm" || backend == "reference" ? 1
                 : threads > 0
                     ? threads
                     : int(std::max(1u, std::thread::hardware_concurrency()))) {
    if (backend == "wasm") {
      // An int8 file (docs/int8.md) runs on the module's int8 entries; the
      // host reads the file itself (hosts/node/checkpoint_q8.mjs).
      int8_ = w.quant == "int8";
      if (!int8_ && w.format != "packed") {
        throw Error(
            "--backend wasm reads packed .lockstep checkpoints; convert "
            "the Hugging Face folder first (lockstep convert DIR OUT)");
      }
      wasm_ =
          std::make_unique<WasmHost>(path, WasmHostOptions{{}, {}, max_prefix});
    } else {
      native_ = std::make_unique<Gpt2Session>(
          Gpt2View{w.config, w.data(), w.words(), w.layout, w.q8_data(),
                   w.q8_bytes()},
          Gpt2SessionOptions{backend, threads, max_prefix});
    }
  }
  std::span<const float> step(int32_t token) {
    return wasm_ ? wasm_->step(token) : native_->step(token);
  }
  std::span<const float> infer(std::span<const int32_t> tokens) {
    return wasm_ ? wasm_->infer(tokens) : native_->infer(tokens);
  }
  // Gpt2Session::prefill's contract: consumes the tokens at the next
  // positions, appends their keys and values and returns the last
  // position's logits (all_positions: every position's, one row each).
  std::span<const float> prefill(std::span<const int32_t> tokens,
                                 bool all_positions = false) {
    if (native_) return native_->prefill(tokens, all_positions);
    // --backend wasm: the module's batched prefill (WasmHost::prefill).
    return wasm_->prefill(tokens, all_positions);
  }
  // The backend as the summary names it, e.g. "cpu-avx512 x2".
  std::string backend_name() const {
    if (wasm_) return int8_ ? "wasm (Node.js), int8" : "wasm (Node.js)";
    return native_->backend_name();
  }
  // Compute threads (0 asked: one per hardware thread, as the session
  // resolves it; the reference and wasm run on one).
  int threads() const { return threads_; }
  int position() const {
    return wasm_ ? wasm_->position() : native_->position();
  }
  // Back to position 0: the next step or prefill starts a new sequence.
  void reset() { wasm_ ? wasm_->reset() : native_->reset(); }
  // The used cache rows (position() rows of n_layer * 2 * n_embd binary32
  // words) as bytes; for wasm, copied out of the module.
  std::vector<uint8_t> cache_bytes() {
    if (wasm_) return wasm_->cache();
    const std::span<const float> c = native_->cache();
    const auto* p = reinterpret_cast<const uint8_t*>(c.data());
    return {p, p + c.size_bytes()};
  }
  // The native session (nullptr for wasm) and the wasm host (nullptr
  // otherwise), for memory figures.
  const Gpt2Session* session() const { return native_.get(); }
  WasmHost* wasm_host() { return wasm_.get(); }

 private:
  int threads_;
  bool int8_ = false;
  std::unique_ptr<Gpt2Session> native_;
  std::unique_ptr<WasmHost> wasm_;
};

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_GPT2_RUNNER_H_
