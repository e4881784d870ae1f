#include "lib/verify_tiny.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <span>

#include "formats/sha256.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/sampling.h"
#include "train/tiny_grad.h"

extern "C" {
#include "ls_tiny.h"
}

namespace lockstep {
namespace {

constexpr size_t kV = LS_TINY_VOCAB;

// The checked entry's clip (core/ls_tiny.c, §4.0), for the every-position
// pass, which takes the weights as they are.
std::vector<double> clipped(const std::vector<double>& w, double bound) {
  std::vector<double> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const double v = w[i];
    out[i] = v > bound ? bound : (v < -bound ? -bound : v);
  }
  return out;
}

// One backend of a tiny run: the checked entry of the native core or of
// the WebAssembly module.
class TinyRunner {
 public:
  TinyRunner(const TinyModel& m, const std::string& name, double bound)
      : m_(m), bound_(bound) {
    if (name == "wasm") {
      if (m.path.empty()) {
        throw Error("--backends wasm: the tiny model has no file to load");
      }
      host_ = std::make_unique<WasmHost>(m.path);
      name_ = "wasm (Node.js)";
    } else if (name == "reference") {
      name_ = "reference";
    } else {
      throw Error("'" + name +
                  "' does not run the tiny models: they run on the binary64 "
                  "core (reference) and in the WebAssembly module (wasm)");
    }
  }
  const std::string& name() const { return name_; }
  WasmHost* host() const { return host_.get(); }
  TinyLogits logits(std::span<const int32_t> tokens) {
    return host_ ? host_->tiny_logits(tokens, bound_)
                 : tiny_logits(m_, tokens, bound_);
  }
  // Every position's logits of a context through the checked entry at
  // every prefix; the time of each call when step_ms is given.
  void prefixes(const std::vector<int32_t>& tokens, std::vector<double>& rows,
                std::vector<double>* step_ms) {
    rows.resize(tokens.size() * kV);
    for (size_t t = 0; t < tokens.size(); ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      const TinyLogits l = logits({tokens.data(), t + 1});
      if (step_ms) {
        step_ms->push_back(std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - t0)
                               .count());
      }
      std::memcpy(rows.data() + t * kV, l.data(), sizeof l);
    }
  }

 private:
  const TinyModel& m_;
  double bound_;
  std::string name_;
  std::unique_ptr<WasmHost> host_;
};

std::vector<Completion> complete(TinyRunner& r, int n_ctx, int n) {
  static const char* kPrompts[] = {"ROMEO:", "First Citizen:\nBefore we"};
  std::vector<Completion> out;
  for (const char* p : kPrompts) {
    Completion cm;
    cm.prompt = p;
    std::vector<int32_t> text;
    for (const char* c = p; *c; ++c) text.push_back(int32_t((unsigned char)*c));
    Sampler greedy(SamplerOptions{}, int(kV));
    for (int i = 0; i < n; ++i) {
      const size_t w = std::min(text.size(), size_t(n_ctx));
      const TinyLogits l = r.logits({text.data() + text.size() - w, w});
      const int32_t next = greedy.next(std::span<const double>(l));
      text.push_back(next);
      cm.tokens.push_back(next);
      cm.text.push_back(char(uint8_t(next)));
    }
    out.push_back(std::move(cm));
  }
  return out;
}

// The every-position pass's intermediates of one context into the
// operation streams, in tiny_op_names() order.
void hash_ops(const train::Workspace& ws, int n, std::vector<Sha256Hasher>& s) {
  const size_t N = size_t(n), nc = size_t(ws.n_ctx);
  const auto put = [&](size_t i, const std::vector<double>& v, size_t words) {
    s[i].update(v.data(), words * sizeof(double));
  };
  put(0, ws.x0, N * LS_TINY_EMBD);
  put(1, ws.h1, N * LS_TINY_EMBD);
  put(2, ws.qkv, N * 3 * LS_TINY_EMBD);
  // Per position, per head, the probabilities of keys 0..t.
  for (size_t t = 0; t < N; ++t) {
    for (size_t h = 0; h < LS_TINY_HEADS; ++h) {
      s[3].update(ws.probs.data() + (t * LS_TINY_HEADS + h) * nc,
                  (t + 1) * sizeof(double));
    }
  }
  put(4, ws.a, N * LS_TINY_EMBD);
  put(5, ws.x1, N * LS_TINY_EMBD);
  put(6, ws.h2, N * LS_TINY_EMBD);
  put(7, ws.u, N * LS_TINY_FF);
  put(8, ws.f, N * LS_TINY_FF);
  put(9, ws.x2, N * LS_TINY_EMBD);
  put(10, ws.h3, N * LS_TINY_EMBD);
  put(11, ws.logits, N * kV);
}

void check_bound(double bound) {
  if (!(bound >= 0.0 && bound <= 10.0)) {
    throw Error("the weight bound must be a number in [0, 10] (got " +
                std::to_string(bound) + ")");
  }
}

}  // namespace

const std::vector<std::string>& tiny_verify_backend_names() {
  static const std::vector<std::string> names = {"reference", "wasm"};
  return names;
}

const std::vector<std::string>& tiny_op_names() {
  static const std::vector<std::string> names = {
      "embed",  "h0.ln1", "h0.qkv",  "h0.att_prob", "h0.att_out", "h0.res1",
      "h0.ln2", "h0.fc",  "h0.gelu", "h0.res2",     "ln_f",       "logits"};
  return names;
}

std::vector<VerifyContext> make_tiny_verify_contexts(int n_ctx,
                                                     const std::string& text,
                                                     const VerifyOptions& o) {
  const auto bytes = [&](size_t offset, int len) {
    std::vector<int32_t> tokens;
    for (int t = 0; t < len; ++t) {
      tokens.push_back(int32_t((unsigned char)text[offset + size_t(t)]));
    }
    return tokens;
  };
  return verify_draw_contexts(n_ctx, int64_t(kV), text, o, bytes);
}

void tiny_compare_logits(const double* a, const double* b, size_t rows,
                         int first, int ci, const std::string& la,
                         const std::string& lb, VerifyResult& r) {
  verify_compare_logit_words(a, b, rows, kV, 8, first, ci, la, lb, r);
}

std::vector<NamedHash> tiny_op_hashes(const TinyModel& m, double bound,
                                      const std::vector<VerifyContext>& ctxs) {
  check_bound(bound);
  const std::vector<double> w = clipped(m.weights, bound);
  train::Workspace ws(m.n_ctx);
  std::vector<double> all;
  std::vector<Sha256Hasher> streams(tiny_op_names().size());
  for (const auto& ctx : ctxs) {
    const int n = int(ctx.tokens.size());
    all.resize(size_t(n) * kV);
    train::tiny_forward_all(w.data(), m.n_ctx, ctx.tokens.data(), n, all.data(),
                            ws);
    hash_ops(ws, n, streams);
  }
  std::vector<NamedHash> out;
  for (size_t i = 0; i < streams.size(); ++i) {
    out.push_back({tiny_op_names()[i], to_hex(streams[i].finish())});
  }
  return out;
}

VerifyResult run_verify_tiny(const TinyModel& m,
                             const std::vector<VerifyContext>& contexts,
                             const VerifyOptions& o,
                             const VerifyProgress& progress) {
  check_bound(o.bound);
  const auto& known = tiny_verify_backend_names();
  for (const std::string& b : o.backends) {
    if (std::find(known.begin(), known.end(), b) == known.end()) {
      throw Error("--backends: '" + b +
                  "' does not run the tiny models: they run on the binary64 "
                  "core (reference) and in the WebAssembly module (wasm)");
    }
  }
  if (o.backends.empty()) throw Error("no backend to verify");
  for (const auto& ctx : contexts) {
    if (ctx.tokens.empty() || ctx.tokens.size() > size_t(m.n_ctx)) {
      throw Error("a context of " + std::to_string(ctx.tokens.size()) +
                  " bytes does not fit the model's " + std::to_string(m.n_ctx) +
                  " positions");
    }
  }
  VerifyResult r;
  verify_count_contexts(contexts, r);

  // The every-position pass runs on the clipped weights (the checked entry
  // clips into its scratch).
  const std::vector<double> cw = clipped(m.weights, o.bound);
  train::Workspace ws(m.n_ctx);
  std::vector<Sha256Hasher> op_streams(tiny_op_names().size());
  std::vector<Sha256> base(contexts.size());
  std::vector<double> rows, all, base_rows;
  const long total = long(contexts.size()) * long(o.backends.size());
  long done = 0;
  for (size_t bi = 0; bi < o.backends.size(); ++bi) {
    BackendRecord rec;
    rec.requested = o.backends[bi];
    verify_reset_peak_rss();
    const auto t0 = std::chrono::steady_clock::now();
    TinyRunner run(m, o.backends[bi], o.bound);
    rec.name = run.name();
    rec.threads = 1;
    const std::string label = rec.name;
    Sha256Hasher logits_hash;
    for (size_t ci = 0; ci < contexts.size(); ++ci) {
      const std::vector<int32_t>& tokens = contexts[ci].tokens;
      const size_t L = tokens.size();
      run.prefixes(tokens, rows, ci == 0 ? &rec.step_ms : nullptr);
      if (ci == 0) rec.warm_rss = verify_proc_status_bytes("VmRSS:");
      logits_hash.update(rows.data(), rows.size() * sizeof(double));
      const Sha256 d = sha256(rows.data(), rows.size() * sizeof(double));
      if (bi == 0) {
        base[ci] = d;
        // The every-position pass over the whole context against the
        // checked entry's rows; its intermediates are the operations.
        all.resize(L * kV);
        train::tiny_forward_all(cw.data(), m.n_ctx, tokens.data(), int(L),
                                all.data(), ws);
        tiny_compare_logits(rows.data(), all.data(), L, 0, int(ci),
                            label + " full-prefix", "every-position pass", r);
        if (o.op_hashes) hash_ops(ws, int(L), op_streams);
      } else {
        r.logits_compared += L * kV;
        if (d != base[ci]) {
          // The first backend's rows again, to name the word.
          TinyRunner again(m, o.backends[0], o.bound);
          again.prefixes(tokens, base_rows, nullptr);
          r.logits_compared -= L * kV;  // the comparer counts them
          tiny_compare_logits(base_rows.data(), rows.data(), L, 0, int(ci),
                              r.backends[0].name + " full-prefix",
                              label + " full-prefix", r);
        }
      }
      if (progress) progress(++done, total, label);
    }
    rec.completions = complete(run, m.n_ctx, o.completion_tokens);
    verify_end_backend(rec, t0);
    if (WasmHost* h = run.host()) rec.module_bytes = h->memory()[0];
    rec.logits_sha256 = to_hex(logits_hash.finish());
    if (bi > 0) verify_compare_completions(rec, r);
    r.backends.push_back(std::move(rec));
  }
  if (o.op_hashes) {
    for (size_t i = 0; i < op_streams.size(); ++i) {
      r.ops.push_back({tiny_op_names()[i], to_hex(op_streams[i].finish())});
    }
    // The pass's logits digest is the first backend's (compared word for
    // word above; a broken hasher cannot pass unnoticed).
    if (r.ops.back().sha256 != r.backends[0].logits_sha256) {
      VerifyMismatch mm;
      mm.what = "observed logits", mm.a = r.backends[0].name + " full-prefix";
      mm.b = "every-position pass's operation digests";
      verify_note_mismatch(r, mm);
    }
  }
  return r;
}

}  // namespace lockstep
