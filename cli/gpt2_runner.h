// The GPT-2 session behind `generate` and `logits`: a native backend
// (Gpt2Session) or, for --backend wasm, the WebAssembly module in Node.js
// (hosts/native/wasm_host.h). Both return the same bits; the commands' own
// code (tokenizer, sampler, output) is the same for both.
#ifndef LOCKSTEP_CLI_GPT2_RUNNER_H_
#define LOCKSTEP_CLI_GPT2_RUNNER_H_

#include <memory>
#include <span>
#include <string>

#include "formats/gpt2_checkpoint.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"

namespace lockstep::cli {

class Gpt2Runner {
 public:
  Gpt2Runner(const std::string& path, const Gpt2Weights& w,
             const std::string& backend, int threads, int max_prefix) {
    if (backend == "wasm") {
      if (w.format != "packed") {
        throw Error(
            "--backend wasm reads packed .lockstep checkpoints; convert "
            "the Hugging Face folder first (lockstep convert DIR OUT)");
      }
      wasm_ =
          std::make_unique<WasmHost>(path, WasmHostOptions{{}, {}, max_prefix});
    } else {
      native_ = std::make_unique<Gpt2Session>(
          Gpt2View{w.config, w.data(), w.words(), w.layout},
          Gpt2SessionOptions{backend, threads, max_prefix});
    }
  }
  std::span<const float> step(int32_t token) {
    return wasm_ ? wasm_->step(token) : native_->step(token);
  }
  std::span<const float> infer(std::span<const int32_t> tokens) {
    return wasm_ ? wasm_->infer(tokens) : native_->infer(tokens);
  }

 private:
  std::unique_ptr<Gpt2Session> native_;
  std::unique_ptr<WasmHost> wasm_;
};

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_GPT2_RUNNER_H_
