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
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ls_gpt2.h"

namespace lockstep {

struct WasmHostOptions {
  std::string module;         // default: the module this build made
  std::string module_sha256;  // default: its digest, recorded at build time
  int max_prefix = 0;         // GPT-2: longest infer() (<= 0: n_ctx)
  // GPT-2: plan the module's observation buffer too (observe(); its size
  // grows with max_prefix squared: docs/wasm.md "Observed pass").
  bool observe = false;
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
  // GPT-2, a host started with options.observe: the module's observed
  // pass over `tokens` at positions 0 .. n-1 (the layer pass of its
  // prefill, with this module's kernels), each of its tap records handed to
  // `observer` in the pass's order (core/ls_gpt2.h's layer, tap, position,
  // head, floats: every tap, attention scores included). The cache and
  // position() are untouched. Throws lockstep::Error when the host refuses
  // (too many tokens, a token outside the vocabulary, no observation
  // buffer) or sends malformed records.
  void observe(std::span<const int32_t> tokens, ls_gpt2_observer observer,
               void* user);

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

// The WebAssembly backend behind the Gpt2Backend interface (lib/verify's
// per-operation digests: backend_op_hashes; docs/verify.md "Per-operation
// bisect between backends"). Runs a WasmHost on `model_path` (binary32 or
// int8) planned for max_prefix positions (<= 0: n_ctx) with the
// observation buffer. The module keeps the cache: a step or prefill at
// position 0 starts over, and one at position p > 0 must follow the calls
// of this backend that filled positions 0 .. p-1 (else
// LS_ERR_CACHE_LENGTH); the rows it appends are copied into the caller's
// cache. The argument checks and their statuses are ls_gpt2_prefill's; a
// failure inside the module (its message) is thrown as lockstep::Error.
// With an observer (set_observer), a prefill at position 0 with every
// position's logits also runs the module's observed pass over the same
// tokens and hands it every tap (all of ls_gpt2_tap), then runs the
// unobserved prefill, whose logits and cache words are returned: it throws
// when the observed logits differ from them, and for an observed prefill
// at a later position (the module's observed pass starts at 0).
class WasmGpt2Backend final : public Gpt2Backend {
 public:
  WasmGpt2Backend(const std::string& model_path, const ls_gpt2_config& c,
                  int max_prefix, WasmHostOptions options = {});
  std::string name() const override { return "wasm (Node.js)"; }
  size_t extra_memory_bytes() const override { return memory_bytes_; }
  ls_status step(float* cache, size_t cache_capacity, size_t cache_len,
                 int32_t token, int32_t position, float* logits) override;
  ls_status infer(const int32_t* tokens, int n, float* logits) override;
  ls_status prefill(float* cache, size_t cache_capacity, size_t cache_len,
                    const int32_t* tokens, int n, int32_t position,
                    bool all_positions, float* logits) override;
  bool set_observer(ls_gpt2_observer observer, void* user) override {
    obs_ = observer;
    obs_user_ = user;
    return true;
  }

 private:
  ls_status start(float* cache, size_t cache_capacity, size_t cache_len,
                  const int32_t* tokens, int n, int32_t position,
                  const float* logits);
  void copy_rows(float* cache, int32_t position, int n);

  ls_gpt2_config c_;
  int max_prefix_;
  std::unique_ptr<WasmHost> host_;
  size_t memory_bytes_ = 0;
  ls_gpt2_observer obs_ = nullptr;
  void* obs_user_ = nullptr;
};

}  // namespace lockstep

#endif  // LOCKSTEP_HOSTS_NATIVE_WASM_HOST_H_
