// The native side of `--backend wasm`: runs the Node.js host
// (hosts/node/lockstep.mjs serve) as a child process and asks it for logits
// over a pipe, so that the native CLI keeps its tokenizer, sampler and
// output code and only the arithmetic runs in the WebAssembly module.
// The host checks the module's SHA-256 against the digest this binary was
// built with (LOCKSTEP_WASM_SHA256) and refuses a module that differs.
#ifndef LOCKSTEP_HOSTS_NATIVE_WASM_HOST_H_
#define LOCKSTEP_HOSTS_NATIVE_WASM_HOST_H_

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lockstep {

struct WasmHostOptions {
  std::string module;         // default: the module this build made
  std::string module_sha256;  // default: its digest, recorded at build time
  int max_prefix = 0;         // GPT-2: longest infer() (<= 0: n_ctx)
};

// The module, host script and digest this binary was built with.
std::string wasm_module_path();
std::string wasm_module_sha256();
std::string wasm_scalar_module_sha256();

class WasmHost {
 public:
  // Starts `node hosts/node/lockstep.mjs serve` on a packed .lockstep
  // checkpoint (tiny or GPT-2). Throws lockstep::Error when node is not on
  // PATH or the host refuses the module or the model (its message is on
  // stderr).
  explicit WasmHost(const std::string& model_path,
                    const WasmHostOptions& options = {});
  ~WasmHost();
  WasmHost(const WasmHost&) = delete;
  WasmHost& operator=(const WasmHost&) = delete;

  int n_vocab() const { return n_vocab_; }
  int n_ctx() const { return n_ctx_; }
  const std::string& module_sha256() const { return module_sha256_; }

  // GPT-2: the cached step at position() and the full-prefix pass, with
  // Gpt2Session's contract; the logits stay valid until the next call.
  std::span<const float> step(int32_t token);
  std::span<const float> infer(std::span<const int32_t> tokens);
  // Batched prefill at position(), with Gpt2Session::prefill's contract:
  // appends the tokens' keys and values to the cache and returns the last
  // position's logits, or with all_positions every position's (n * n_vocab,
  // position()+i's at i * n_vocab); the same bits as step() on each token.
  // Throws (and consumes nothing) when the tokens do not fit the context
  // or one is outside the vocabulary.
  std::span<const float> prefill(std::span<const int32_t> tokens,
                                 bool all_positions = false);
  int position() const { return position_; }
  void reset();
  // The used KV-cache rows, as bytes.
  std::vector<uint8_t> cache();
  // The tiny checked entry.
  std::array<double, 256> tiny_logits(std::span<const int32_t> tokens,
                                      double bound);
  // The memory's size now and at creation, in bytes.
  std::array<uint32_t, 2> memory();

 private:
  std::vector<uint8_t> request(const std::string& line);
  void read_exactly(void* dst, size_t n);

  pid_t pid_ = -1;
  int to_host_ = -1, from_host_ = -1;
  int n_vocab_ = 0, n_ctx_ = 0, position_ = 0;
  std::string module_sha256_;
  std::vector<float> logits_;
  std::vector<float> all_logits_;  // prefill(all_positions)
};

}  // namespace lockstep

#endif  // LOCKSTEP_HOSTS_NATIVE_WASM_HOST_H_
