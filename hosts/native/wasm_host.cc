#include "hosts/native/wasm_host.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "backends/prefill_args.h"
#include "lockstep/error.h"
#include "lockstep_wasm_sha256.h"

extern char** environ;

namespace lockstep {
namespace {

// node on PATH, as posix_spawnp would find it.
bool node_on_path() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string dirs = path;
  size_t at = 0;
  while (at <= dirs.size()) {
    size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = dirs.substr(at, end - at);
    const std::string node = (dir.empty() ? "." : dir) + "/node";
    if (access(node.c_str(), X_OK) == 0) return true;
    at = end + 1;
  }
  return false;
}

std::string join_tokens(std::span<const int32_t> tokens) {
  std::string s;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(tokens[i]));
  }
  return s;
}

}  // namespace

std::string wasm_module_path() {
  const char* env = std::getenv("LOCKSTEP_WASM_MODULE");
  return env && *env ? env : LOCKSTEP_WASM_MODULE;
}
std::string wasm_module_sha256() { return LOCKSTEP_WASM_SHA256; }
std::string wasm_scalar_module_sha256() { return LOCKSTEP_WASM_SCALAR_SHA256; }

WasmHost::WasmHost(const std::string& model_path, const WasmHostOptions& o) {
  if (!node_on_path()) {
    throw Error(
        "--backend wasm runs the WebAssembly module in Node.js, but `node` "
        "is not on PATH (Debian: apt-get install nodejs)");
  }
  // A host that exits early must not kill us with SIGPIPE: writes then fail
  // with EPIPE and become an Error.
  std::signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) {
    throw Error(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> args = {
      "node",
      LOCKSTEP_NODE_HOST,
      "serve",
      "--model",
      model_path,
      "--module",
      o.module.empty() ? wasm_module_path() : o.module,
      "--module-sha256",
      o.module_sha256.empty() ? wasm_module_sha256() : o.module_sha256,
      "--max-prefix",
      std::to_string(o.max_prefix)};
  if (o.observe) args.push_back("--observe");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  for (int fd : {in[0], in[1], out[0], out[1]}) {
    posix_spawn_file_actions_addclose(&fa, fd);
  }
  const int rc =
      posix_spawnp(&pid_, "node", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  to_host_ = in[1];
  from_host_ = out[0];
  if (rc != 0) {
    pid_ = -1;
    throw Error(std::string("cannot start node: ") + std::strerror(rc));
  }
  // The hello frame: n_vocab, n_ctx, memory bytes, the module's digest.
  // A host that refused the module or the model has exited: reap it here,
  // since the destructor does not run for a constructor that throws.
  std::vector<uint8_t> hello;
  try {
    int32_t status = 0;
    uint32_t len = 0;
    read_exactly(&status, 4);
    read_exactly(&len, 4);
    if (len > 4096) len = 0;
    hello.resize(len);
    read_exactly(hello.data(), len);
    if (status != 0 || len != 12 + 64) {
      throw Error("the WebAssembly host sent an unexpected greeting");
    }
  } catch (...) {
    close(to_host_);
    close(from_host_);
    int st = 0;
    waitpid(pid_, &st, 0);
    throw;
  }
  uint32_t v[3];
  std::memcpy(v, hello.data(), 12);
  n_vocab_ = int(v[0]);
  n_ctx_ = int(v[1]);
  module_sha256_.assign(hello.begin() + 12, hello.end());
  logits_.resize(size_t(n_vocab_));
}

WasmHost::~WasmHost() {
  if (to_host_ >= 0) close(to_host_);
  if (from_host_ >= 0) close(from_host_);
  if (pid_ > 0) {
    int st = 0;
    waitpid(pid_, &st, 0);
  }
}

void WasmHost::read_exactly(void* dst, size_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t r = read(from_host_, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw Error(
          "the WebAssembly host (node hosts/node/lockstep.mjs) stopped; its "
          "message is above");
    }
    p += r;
    n -= size_t(r);
  }
}

std::vector<uint8_t> WasmHost::request(const std::string& line) {
  const std::string msg = line + "\n";
  size_t at = 0;
  while (at < msg.size()) {
    const ssize_t w = write(to_host_, msg.data() + at, msg.size() - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      throw Error(
          "the WebAssembly host (node hosts/node/lockstep.mjs) stopped; its "
          "message is above");
    }
    at += size_t(w);
  }
  int32_t status = 0;
  uint32_t len = 0;
  read_exactly(&status, 4);
  read_exactly(&len, 4);
  std::vector<uint8_t> payload(len);
  read_exactly(payload.data(), len);
  if (status != 0) {
    throw Error(std::string(payload.begin(), payload.end()));
  }
  return payload;
}

std::span<const float> WasmHost::step(int32_t token) {
  const auto p = request("step " + std::to_string(token));
  if (p.size() != logits_.size() * sizeof(float)) {
    throw Error("the WebAssembly host returned a short row of logits");
  }
  std::memcpy(logits_.data(), p.data(), p.size());
  ++position_;
  return logits_;
}

std::span<const float> WasmHost::infer(std::span<const int32_t> tokens) {
  const auto p = request("infer " + join_tokens(tokens));
  if (p.size() != logits_.size() * sizeof(float)) {
    throw Error("the WebAssembly host returned a short row of logits");
  }
  std::memcpy(logits_.data(), p.data(), p.size());
  return logits_;
}

std::span<const float> WasmHost::prefill(std::span<const int32_t> tokens,
                                         bool all_positions) {
  const auto p = request(std::string("prefill ") + (all_positions ? "1" : "0") +
                         " " + join_tokens(tokens));
  const size_t rows = all_positions ? tokens.size() : 1;
  if (p.size() != rows * logits_.size() * sizeof(float)) {
    throw Error("the WebAssembly host returned a short block of logits");
  }
  position_ += int(tokens.size());
  if (!all_positions) {
    std::memcpy(logits_.data(), p.data(), p.size());
    return logits_;
  }
  all_logits_.resize(rows * logits_.size());
  std::memcpy(all_logits_.data(), p.data(), p.size());
  // The last position's logits are also the session's current logits.
  std::copy(all_logits_.end() - long(logits_.size()), all_logits_.end(),
            logits_.begin());
  return all_logits_;
}

void WasmHost::reset() {
  request("reset");
  position_ = 0;
}

std::vector<uint8_t> WasmHost::cache() { return request("cache"); }

std::array<double, 256> WasmHost::tiny_logits(std::span<const int32_t> tokens,
                                              double bound) {
  uint64_t bits = 0;
  std::memcpy(&bits, &bound, 8);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)bits);
  const auto p =
      request(std::string("tiny ") + hex + " " + join_tokens(tokens));
  std::array<double, 256> out{};
  if (p.size() != sizeof out) {
    throw Error("the WebAssembly host returned a short row of logits");
  }
  std::memcpy(out.data(), p.data(), p.size());
  return out;
}

std::array<uint32_t, 2> WasmHost::memory() {
  const auto p = request("memory");
  std::array<uint32_t, 2> m{};
  if (p.size() != 8) throw Error("the WebAssembly host: bad memory reply");
  std::memcpy(m.data(), p.data(), 8);
  return m;
}

void WasmHost::observe(std::span<const int32_t> tokens,
                       ls_gpt2_observer observer, void* user) {
  const auto p = request("observe " + join_tokens(tokens));
  // Records: int32 layer, tap, position, head, count, then count floats.
  std::vector<float> row;
  for (size_t at = 0; at < p.size();) {
    int32_t h[5];
    if (p.size() - at < sizeof h) {
      throw Error("the WebAssembly host sent a truncated observed record");
    }
    std::memcpy(h, p.data() + at, sizeof h);
    at += sizeof h;
    const size_t n = size_t(uint32_t(h[4]));
    if (h[1] < 0 || h[1] >= int32_t(LS_TAP_COUNT) ||
        n > (p.size() - at) / sizeof(float)) {
      throw Error("the WebAssembly host sent a malformed observed record");
    }
    row.resize(n);
    if (n) std::memcpy(row.data(), p.data() + at, n * sizeof(float));
    at += n * sizeof(float);
    if (observer) {
      observer(user, h[0], ls_gpt2_tap(h[1]), h[2], h[3], row.data(), n);
    }
  }
}

WasmGpt2Backend::WasmGpt2Backend(const std::string& model_path,
                                 const ls_gpt2_config& c, int max_prefix,
                                 WasmHostOptions options)
    : c_(c),
      max_prefix_(max_prefix > 0 && max_prefix < c.n_ctx ? max_prefix
                                                         : c.n_ctx) {
  options.max_prefix = max_prefix_;
  options.observe = true;
  host_ = std::make_unique<WasmHost>(model_path, options);
  if (host_->n_vocab() != c.n_vocab || host_->n_ctx() != c.n_ctx) {
    throw Error("the wasm backend: " + model_path +
                " has another vocabulary or context than the config given");
  }
  memory_bytes_ = host_->memory()[1];
}

// ls_gpt2_prefill's checks in its order (step: n 1, after step's own token
// check); then the module's position: 0 starts over, a later one continues
// this backend's own rows.
ls_status WasmGpt2Backend::start(float* cache, size_t cache_capacity,
                                 size_t cache_len, const int32_t* tokens, int n,
                                 int32_t position, const float* logits) {
  const ls_status bad =
      check_prefill_args(c_, cache, cache_capacity, cache_len, tokens, n,
                         position, logits, max_prefix_);
  if (bad != LS_OK) return bad;
  if (position == 0) host_->reset();
  if (host_->position() != position) return LS_ERR_CACHE_LENGTH;
  return LS_OK;
}

// The module's cache rows position .. position+n-1 into the caller's.
void WasmGpt2Backend::copy_rows(float* cache, int32_t position, int n) {
  const size_t row = ls_gpt2_cache_row_floats(&c_);
  const std::vector<uint8_t> kv = host_->cache();
  const size_t from = size_t(position) * row * sizeof(float);
  const size_t bytes = size_t(n) * row * sizeof(float);
  if (kv.size() < from + bytes) {
    throw Error("the WebAssembly host returned a short cache");
  }
  std::memcpy(cache + size_t(position) * row, kv.data() + from, bytes);
}

ls_status WasmGpt2Backend::step(float* cache, size_t cache_capacity,
                                size_t cache_len, int32_t token,
                                int32_t position, float* logits) {
  // ls_gpt2_step checks the token before the position (prefill after it).
  if (!cache || !logits) return LS_ERR_NULL;
  if (token < 0 || token >= c_.n_vocab) return LS_ERR_TOKEN;
  const ls_status s =
      start(cache, cache_capacity, cache_len, &token, 1, position, logits);
  if (s != LS_OK) return s;
  const std::span<const float> l = host_->step(token);
  std::memcpy(logits, l.data(), l.size() * sizeof(float));
  copy_rows(cache, position, 1);
  return LS_OK;
}

ls_status WasmGpt2Backend::infer(const int32_t* tokens, int n, float* logits) {
  if (!logits || (n > 0 && !tokens)) return LS_ERR_NULL;
  if (n < 1) return LS_ERR_EMPTY_SEQUENCE;
  if (n > c_.n_ctx) return LS_ERR_SEQUENCE_TOO_LONG;
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c_.n_vocab) return LS_ERR_TOKEN;
  }
  if (n > max_prefix_) return LS_ERR_SCRATCH;
  const std::span<const float> l = host_->infer({tokens, size_t(n)});
  std::memcpy(logits, l.data(), l.size() * sizeof(float));
  return LS_OK;
}

ls_status WasmGpt2Backend::prefill(float* cache, size_t cache_capacity,
                                   size_t cache_len, const int32_t* tokens,
                                   int n, int32_t position, bool all_positions,
                                   float* logits) {
  const ls_status s =
      start(cache, cache_capacity, cache_len, tokens, n, position, logits);
  if (s != LS_OK) return s;
  const std::span<const int32_t> toks(tokens, size_t(n));
  const size_t V = size_t(c_.n_vocab);
  // Observed: the module's observed pass first, its logits taps kept.
  std::vector<float> observed;
  if (obs_ && all_positions) {
    if (position != 0) {
      throw Error(
          "the wasm backend observes a prefill at position 0 only (the "
          "module's observed pass starts there)");
    }
    struct Relay {
      ls_gpt2_observer fn;
      void* user;
      std::vector<float>* logits;
      size_t V;
      static void observe(void* u, int layer, ls_gpt2_tap tap, int position,
                          int head, const float* data, size_t count) {
        auto* r = static_cast<Relay*>(u);
        if (tap == LS_TAP_LOGITS && count == r->V) {
          r->logits->insert(r->logits->end(), data, data + count);
        }
        r->fn(r->user, layer, tap, position, head, data, count);
      }
    } relay{obs_, obs_user_, &observed, V};
    host_->observe(toks, &Relay::observe, &relay);
    if (observed.size() != size_t(n) * V) {
      throw Error("the wasm backend's observed pass showed " +
                  std::to_string(observed.size() / V) + " rows of logits for " +
                  std::to_string(n) + " positions");
    }
  }
  const std::span<const float> l = host_->prefill(toks, all_positions);
  std::memcpy(logits, l.data(), l.size() * sizeof(float));
  copy_rows(cache, position, n);
  if (!observed.empty() &&
      std::memcmp(observed.data(), l.data(), l.size() * sizeof(float)) != 0) {
    size_t i = 0;
    while (std::memcmp(&observed[i], &l[i], sizeof(float)) == 0) ++i;
    uint32_t a = 0, b = 0;
    std::memcpy(&a, &observed[i], 4);
    std::memcpy(&b, &l[i], 4);
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the wasm backend's observed pass and its prefill differ at "
                  "position %zu, logit %zu: 0x%08x and 0x%08x",
                  i / V, i % V, unsigned(a), unsigned(b));
    throw Error(buf);
  }
  return LS_OK;
}

}  // namespace lockstep
