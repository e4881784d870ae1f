#include "lib/verify.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "backends/backend.h"
#include "cli/gpt2_runner.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep/sampling.h"
#include "ls_gpt2_layout.h"
#include "ls_gpt2_q8.h"
#include "tokenizer/bpe.h"

namespace lockstep {
namespace {

using Rng = VerifyRng;

constexpr ls_gpt2_tap kLayerTaps[] = {
    LS_TAP_LN1,     LS_TAP_QKV,  LS_TAP_ATT_SCORE, LS_TAP_ATT_PROB,
    LS_TAP_ATT_OUT, LS_TAP_PROJ, LS_TAP_RES1,      LS_TAP_LN2,
    LS_TAP_FC,      LS_TAP_GELU, LS_TAP_MLP_OUT,   LS_TAP_RES2};
constexpr int kLayerTapCount = int(std::size(kLayerTaps));

// The slot of (layer, tap) in pass order: embed, each layer's taps, ln_f,
// logits.
int tap_slot(int n_layer, int layer, ls_gpt2_tap tap) {
  if (tap == LS_TAP_EMBED) return 0;
  if (tap == LS_TAP_LNF) return 1 + n_layer * kLayerTapCount;
  if (tap == LS_TAP_LOGITS) return 2 + n_layer * kLayerTapCount;
  return 1 + layer * kLayerTapCount + (int(tap) - int(LS_TAP_LN1));
}

// "h<layer>.<op>", built by appending (GCC 12's -Wrestrict misfires on
// chains of std::string operator+).
std::string layer_op(int layer, const char* op) {
  std::string s = "h";
  s += std::to_string(layer);
  s += '.';
  s += op;
  return s;
}

std::vector<std::string> tap_slot_names(int n_layer) {
  std::vector<std::string> names{"embed"};
  for (int l = 0; l < n_layer; ++l) {
    for (ls_gpt2_tap t : kLayerTaps) names.push_back(gpt2_op_name(l, t));
  }
  names.push_back("ln_f");
  names.push_back("logits");
  return names;
}

struct OpHasher {
  int n_layer;
  std::vector<Sha256Hasher> streams;
  static void observe(void* user, int layer, ls_gpt2_tap tap, int, int,
                      const float* data, size_t n) {
    auto* h = static_cast<OpHasher*>(user);
    h->streams[size_t(tap_slot(h->n_layer, layer, tap))].update(
        data, n * sizeof(float));
  }
};

// The backends as run: each cpu backend once per thread count.
struct Planned {
  std::string name;
  int threads;
};

std::vector<Planned> plan_backends(const VerifyOptions& o) {
  std::vector<Planned> out;
  for (const std::string& b : o.backends) {
    if (b.rfind("cpu", 0) == 0) {
      for (int t : o.threads) out.push_back({b, t});
    } else {
      out.push_back({b, 1});
    }
  }
  return out;
}

// One backend's cached path over a context: every position's logits and
// the cache. Times each step when step_ms is given.
void run_steps(cli::Gpt2Runner& r, const std::vector<int32_t>& tokens, size_t V,
               std::vector<float>& logits, std::vector<uint8_t>& kv,
               std::vector<double>* step_ms) {
  r.reset();
  logits.resize(tokens.size() * V);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::span<const float> l = r.step(tokens[t]);
    if (step_ms) {
      step_ms->push_back(std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - t0)
                             .count());
    }
    std::memcpy(logits.data() + t * V, l.data(), V * sizeof(float));
  }
  kv = r.cache_bytes();
}

std::vector<Completion> complete(cli::Gpt2Runner& r, const Tokenizer& tok,
                                 const ls_gpt2_config& c, int n) {
  static const char* kPrompts[] = {"ROMEO:", "First Citizen:\nBefore we"};
  std::vector<Completion> out;
  for (const char* p : kPrompts) {
    Completion cm;
    cm.prompt = p;
    std::vector<int32_t> ids = tok.encode(p);
    if (ids.size() >= size_t(c.n_ctx)) ids.resize(size_t(c.n_ctx) - 1);
    const int room = c.n_ctx - int(ids.size());
    Sampler greedy(SamplerOptions{}, c.n_vocab);
    r.reset();
    std::span<const float> l = r.prefill(ids);
    for (int i = 0; i < std::min(n, room); ++i) {
      const int32_t next = greedy.next(l);
      cm.tokens.push_back(next);
      if (i + 1 < std::min(n, room)) l = r.step(next);
    }
    cm.text = tok.decode(cm.tokens);
    out.push_back(std::move(cm));
  }
  return out;
}

}  // namespace

uint64_t verify_proc_status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      return uint64_t(
                 std::strtoull(line.c_str() + std::strlen(key), nullptr, 10)) *
             1024;
    }
  }
  return 0;
}

// Linux >= 4.0; ignored where not permitted.
void verify_reset_peak_rss() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

std::string gpt2_op_name(int layer, ls_gpt2_tap tap) {
  if (tap == LS_TAP_EMBED || tap == LS_TAP_LNF || tap == LS_TAP_LOGITS) {
    return gpt2_tap_name(tap);
  }
  return layer_op(layer, gpt2_tap_name(tap));
}

void verify_count_contexts(const std::vector<VerifyContext>& contexts,
                           VerifyResult& r) {
  r.contexts = int(contexts.size());
  Sha256Hasher ctx_digest;
  for (const auto& ctx : contexts) {
    r.positions += ctx.tokens.size();
    ctx_digest.update(ctx.tokens.data(), ctx.tokens.size() * 4);
    r.context_sources.push_back(ctx.source);
  }
  r.contexts_sha256 = to_hex(ctx_digest.finish());
}

void verify_end_backend(BackendRecord& rec,
                        std::chrono::steady_clock::time_point t0) {
  rec.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  rec.peak_rss = verify_proc_status_bytes("VmHWM:");
}

void verify_note_mismatch(VerifyResult& r, const VerifyMismatch& m) {
  ++r.mismatches;
  if (!r.first) r.first = m;
}

void verify_compare_logit_words(const void* a, const void* b, size_t rows,
                                size_t n_vocab, int word_bytes, int first,
                                int ci, const std::string& la,
                                const std::string& lb, VerifyResult& r) {
  const size_t n = rows * n_vocab, w = size_t(word_bytes);
  r.logits_compared += n;
  if (std::memcmp(a, b, n * w) == 0) return;
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; ++i) {
    uint64_t wa = 0, wb = 0;  // the word's bits (little-endian hosts)
    std::memcpy(&wa, pa + i * w, w);
    std::memcpy(&wb, pb + i * w, w);
    if (wa == wb) continue;
    ++r.mismatches;
    if (r.first) continue;
    VerifyMismatch m;
    m.what = "logits", m.a = la, m.b = lb, m.context = ci;
    m.position = first + int(i / n_vocab);
    m.index = long(i % n_vocab);
    m.bits_a = wa, m.bits_b = wb;
    m.word_bytes = word_bytes;
    r.first = m;
  }
}

void verify_compare_completions(const BackendRecord& rec, VerifyResult& r) {
  const auto& a = r.backends[0].completions;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].tokens != rec.completions[i].tokens) {
      VerifyMismatch m;
      m.what = "completion", m.a = r.backends[0].name, m.b = rec.name;
      m.context = int(i);
      verify_note_mismatch(r, m);
    }
  }
}

std::vector<VerifyContext> verify_draw_contexts(
    int n_ctx, int64_t n_vocab, const std::string& text, const VerifyOptions& o,
    const std::function<std::vector<int32_t>(size_t offset, int len)>&
        text_tokens) {
  const int hi = o.max_length > 0 ? std::min(o.max_length, n_ctx) : n_ctx;
  const int lo = std::clamp(o.min_length, 1, hi);
  if (text.size() < 4096) {
    throw Error("the context text is too short (" +
                std::to_string(text.size()) + " bytes)");
  }
  Rng rng{o.seed};
  std::vector<VerifyContext> out;
  for (int i = 0; i < o.contexts; ++i) {
    const int len = i == 0 ? hi : int(rng.in(lo, hi));
    VerifyContext ctx;
    if (i % 2 == 0) {
      const size_t offset = size_t(rng.in(0, int64_t(text.size() / 2)));
      ctx.tokens = text_tokens(offset, len);
      ctx.source = "shakespeare@" + std::to_string(offset);
    } else {
      for (int t = 0; t < len; ++t) {
        ctx.tokens.push_back(int32_t(rng.in(0, n_vocab - 1)));
      }
      ctx.source = "random";
    }
    out.push_back(std::move(ctx));
  }
  return out;
}

void VerifyComparer::logits(const float* a, const float* b, size_t rows,
                            int first, int ci, const std::string& la,
                            const std::string& lb) {
  verify_compare_logit_words(a, b, rows, size_t(c_.n_vocab), 4, first, ci, la,
                             lb, r_);
}

void VerifyComparer::cache(const std::vector<uint8_t>& a,
                           const std::vector<uint8_t>& b, int ci,
                           const std::string& la, const std::string& lb) {
  const size_t n = std::min(a.size(), b.size()) / 4;
  r_.cache_words_compared += n;
  if (a.size() != b.size()) {
    ++r_.mismatches;
    if (!r_.first) {
      VerifyMismatch m;
      m.what = "cache length", m.a = la, m.b = lb, m.context = ci;
      m.index = long(a.size() / 4), m.bits_b = uint64_t(b.size() / 4);
      r_.first = m;
    }
    return;
  }
  if (std::memcmp(a.data(), b.data(), a.size()) == 0) return;
  const size_t C = size_t(c_.n_embd);
  const size_t row = ls_gpt2_cache_row_floats(&c_);
  for (size_t i = 0; i < n; ++i) {
    uint32_t wa, wb;
    std::memcpy(&wa, a.data() + 4 * i, 4);
    std::memcpy(&wb, b.data() + 4 * i, 4);
    if (wa == wb) continue;
    ++r_.mismatches;
    if (r_.first) continue;
    VerifyMismatch m;
    m.what = "cache", m.a = la, m.b = lb, m.context = ci;
    m.position = int(i / row);
    m.layer = int((i % row) / (2 * C));
    m.part = (i % (2 * C)) < C ? "k" : "v";
    m.index = long(i % C);
    m.bits_a = wa, m.bits_b = wb;
    r_.first = m;
  }
}

const char* gpt2_tap_name(ls_gpt2_tap tap) {
  switch (tap) {
    case LS_TAP_EMBED:
      return "embed";
    case LS_TAP_LN1:
      return "ln1";
    case LS_TAP_QKV:
      return "qkv";
    case LS_TAP_ATT_SCORE:
      return "att_score";
    case LS_TAP_ATT_PROB:
      return "att_prob";
    case LS_TAP_ATT_OUT:
      return "att_out";
    case LS_TAP_PROJ:
      return "proj";
    case LS_TAP_RES1:
      return "res1";
    case LS_TAP_LN2:
      return "ln2";
    case LS_TAP_FC:
      return "fc";
    case LS_TAP_GELU:
      return "gelu";
    case LS_TAP_MLP_OUT:
      return "mlp_out";
    case LS_TAP_RES2:
      return "res2";
    case LS_TAP_LNF:
      return "ln_f";
    case LS_TAP_LOGITS:
      return "logits";
    default:
      return "?";
  }
}

std::string VerifyMismatch::describe() const {
  char buf[512];
  // A word in hex, 8 digits for binary32 and 16 for binary64.
  const int w = 2 * word_bytes;
  const unsigned long long ua = bits_a, ub = bits_b;
  if (what == "cache length") {
    std::snprintf(buf, sizeof buf,
                  "context %d: cache of %s holds %ld words, of %s %llu",
                  context, a.c_str(), index, b.c_str(), ub);
  } else if (what == "cache") {
    std::snprintf(buf, sizeof buf,
                  "context %d, position %d, layer %d, %s[%ld]: %s 0x%0*llx, "
                  "%s 0x%0*llx",
                  context, position, layer, part.c_str(), index, a.c_str(), w,
                  ua, b.c_str(), w, ub);
  } else if (what == "completion") {
    std::snprintf(buf, sizeof buf,
                  "completion %d: %s and %s generate different tokens", context,
                  a.c_str(), b.c_str());
  } else if (what == "operations") {
    std::snprintf(buf, sizeof buf,
                  "operation digests: %s differs from the %s (by SHA-256 "
                  "over all contexts)",
                  b.c_str(), a.c_str());
  } else if (what == "observed logits") {
    std::snprintf(buf, sizeof buf,
                  "the logits of the %s differ from %s (by SHA-256 over all "
                  "contexts)",
                  b.c_str(), a.c_str());
  } else {
    std::snprintf(buf, sizeof buf,
                  "context %d, position %d, logit of token %ld: %s 0x%0*llx, "
                  "%s 0x%0*llx",
                  context, position, index, a.c_str(), w, ua, b.c_str(), w, ub);
  }
  return buf;
}

std::vector<VerifyContext> make_verify_contexts(const ls_gpt2_config& c,
                                                const Tokenizer& tok,
                                                const std::string& text,
                                                const VerifyOptions& o) {
  const auto encoded = [&](size_t offset, int len) {
    // Enough bytes for len tokens (BPE averages about 4 bytes a token on
    // this text), doubled until it is.
    size_t window = size_t(len) * 8 + 64;
    std::vector<int32_t> tokens;
    for (;;) {
      window = std::min(window, text.size() - offset);
      tokens = tok.encode(std::string_view(text).substr(offset, window));
      if (tokens.size() >= size_t(len) || offset + window >= text.size()) break;
      window *= 2;
    }
    if (tokens.size() < size_t(len)) {
      throw Error("the context text holds too few tokens");
    }
    tokens.resize(size_t(len));
    return tokens;
  };
  return verify_draw_contexts(c.n_ctx, c.n_vocab, text, o, encoded);
}

namespace {

// One context's observed full pass of a reference (binary32 or int8).
using ObservedPass =
    std::function<ls_status(const VerifyContext& ctx, float* scratch,
                            size_t n_scratch, float* logits, OpHasher& h)>;

// Every context through `pass`, its taps hashed by name; `what` names the
// pass in the error of a failed one.
std::vector<NamedHash> observed_op_hashes(
    const ls_gpt2_config& c, const std::vector<VerifyContext>& contexts,
    const char* what, const ObservedPass& pass) {
  size_t longest = 1;
  for (const auto& ctx : contexts)
    longest = std::max(longest, ctx.tokens.size());
  std::vector<float> scratch(ls_gpt2_infer_scratch_floats(&c, int(longest)));
  std::vector<float> logits(longest * size_t(c.n_vocab));
  const std::vector<std::string> names = tap_slot_names(c.n_layer);
  OpHasher h{c.n_layer, {}};
  for (size_t i = 0; i < names.size(); ++i) h.streams.emplace_back();
  for (const auto& ctx : contexts) {
    const ls_status s =
        pass(ctx, scratch.data(), scratch.size(), logits.data(), h);
    if (s != LS_OK) {
      throw Error(std::string(what) + ": " + ls_status_message(s));
    }
  }
  std::vector<NamedHash> out;
  for (size_t i = 0; i < names.size(); ++i) {
    out.push_back({names[i], to_hex(h.streams[i].finish())});
  }
  return out;
}

}  // namespace

std::vector<NamedHash> reference_op_hashes(
    const ls_gpt2_config& c, const float* plain_weights, size_t words,
    const std::vector<VerifyContext>& contexts) {
  return observed_op_hashes(c, contexts, "reference pass",
                            [&](const VerifyContext& ctx, float* scratch,
                                size_t n_scratch, float* logits, OpHasher& h) {
                              return ls_gpt2_infer_observed(
                                  &c, plain_weights, words, ctx.tokens.data(),
                                  int(ctx.tokens.size()), scratch, n_scratch,
                                  logits, &OpHasher::observe, &h);
                            });
}

std::vector<NamedHash> reference_q8_op_hashes(
    const ls_gpt2_config& c, const uint8_t* q8, size_t bytes,
    const std::vector<VerifyContext>& contexts) {
  if (!ls_gpt2_q8_config_valid(&c) || !q8 || bytes != ls_gpt2_q8_bytes(&c)) {
    throw Error("int8 reference pass: " + std::to_string(bytes) +
                " bytes of int8 weights, the config needs " +
                std::to_string(ls_gpt2_q8_bytes(&c)));
  }
  return observed_op_hashes(c, contexts, "int8 reference pass",
                            [&](const VerifyContext& ctx, float* scratch,
                                size_t n_scratch, float* logits, OpHasher& h) {
                              return ls_gpt2_q8_infer_observed(
                                  &c, q8, bytes, ctx.tokens.data(),
                                  int(ctx.tokens.size()), scratch, n_scratch,
                                  logits, &OpHasher::observe, &h);
                            });
}

std::vector<NamedHash> backend_op_hashes(
    Gpt2Backend& backend, const ls_gpt2_config& c,
    const std::vector<VerifyContext>& contexts) {
  const std::vector<std::string> names = tap_slot_names(c.n_layer);
  struct Hasher {
    OpHasher h;
    std::vector<char> seen;
    static void observe(void* user, int layer, ls_gpt2_tap tap, int position,
                        int head, const float* data, size_t n) {
      auto* s = static_cast<Hasher*>(user);
      s->seen[size_t(tap_slot(s->h.n_layer, layer, tap))] = 1;
      OpHasher::observe(&s->h, layer, tap, position, head, data, n);
    }
  } hs{{c.n_layer, {}}, std::vector<char>(names.size(), 0)};
  for (size_t i = 0; i < names.size(); ++i) hs.h.streams.emplace_back();
  if (!backend.set_observer(&Hasher::observe, &hs)) return {};
  const size_t row = ls_gpt2_cache_row_floats(&c);
  std::vector<float> cache, logits;
  for (const auto& ctx : contexts) {
    const size_t n = ctx.tokens.size();
    cache.assign(n * row, 0.0f);
    logits.assign(n * size_t(c.n_vocab), 0.0f);
    const ls_status s =
        backend.prefill(cache.data(), cache.size(), 0, ctx.tokens.data(),
                        int(n), 0, true, logits.data());
    if (s != LS_OK) {
      backend.set_observer(nullptr, nullptr);
      throw Error(backend.name() +
                  " observed prefill: " + ls_status_message(s));
    }
  }
  backend.set_observer(nullptr, nullptr);
  std::vector<NamedHash> out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (hs.seen[i]) out.push_back({names[i], to_hex(hs.h.streams[i].finish())});
  }
  return out;
}

std::optional<std::string> first_shared_difference(
    const std::vector<NamedHash>& a, const std::vector<NamedHash>& b) {
  for (const NamedHash& x : a) {
    for (const NamedHash& y : b) {
      if (x.name == y.name && x.sha256 != y.sha256) return x.name;
    }
  }
  return std::nullopt;
}

std::optional<std::string> first_difference(const std::vector<NamedHash>& a,
                                            const std::vector<NamedHash>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size()) return b[i].name + " (missing from the first)";
    if (i >= b.size()) return a[i].name + " (missing from the second)";
    if (a[i].name != b[i].name) {
      return a[i].name + " (the second has " + b[i].name + " there)";
    }
    if (a[i].sha256 != b[i].sha256) return a[i].name;
  }
  return std::nullopt;
}

VerifyResult run_verify(const Gpt2Weights& w, const std::string& model_path,
                        const std::vector<VerifyContext>& contexts,
                        const Tokenizer& tok, const VerifyOptions& o,
                        const VerifyProgress& progress) {
  const ls_gpt2_config& c = w.config;
  const size_t V = size_t(c.n_vocab), C = size_t(c.n_embd);
  const size_t row = ls_gpt2_cache_row_floats(&c);
  VerifyResult r;
  verify_count_contexts(contexts, r);

  const std::vector<Planned> plan = plan_backends(o);
  const long total = long(contexts.size()) * long(plan.size() + o.op_hashes);
  long done = 0;
  VerifyComparer cmp(c, r);
  // Per context, the first backend's digests of its cached logits and
  // cache: every later backend is compared with them.
  std::vector<Sha256> base_logits(contexts.size()), base_cache(contexts.size());
  std::vector<float> steps, base_steps;
  std::vector<uint8_t> kv, base_kv;
  for (size_t bi = 0; bi < plan.size(); ++bi) {
    BackendRecord rec;
    rec.requested = plan[bi].name;
    verify_reset_peak_rss();
    const auto t0 = std::chrono::steady_clock::now();
    cli::Gpt2Runner run(model_path, w, plan[bi].name, plan[bi].threads,
                        c.n_ctx);
    rec.name = run.backend_name();
    rec.threads = run.threads();
    const std::string label = rec.name;
    Sha256Hasher logits_hash;
    std::vector<Sha256Hasher> layer_hash(2 * size_t(c.n_layer));
    for (size_t ci = 0; ci < contexts.size(); ++ci) {
      const std::vector<int32_t>& tokens = contexts[ci].tokens;
      const size_t L = tokens.size();
      run_steps(run, tokens, V, steps, kv, ci == 0 ? &rec.step_ms : nullptr);
      if (ci == 0) rec.warm_rss = verify_proc_status_bytes("VmRSS:");
      // The full-prefix pass: the last position's logits.
      const std::span<const float> full = run.infer(tokens);
      cmp.logits(steps.data() + (L - 1) * V, full.data(), 1, int(L - 1),
                 int(ci), label + " cached", label + " full");
      // The prefill, whole, then in seeded chunks.
      run.reset();
      const std::span<const float> whole = run.prefill(tokens, true);
      cmp.logits(steps.data(), whole.data(), L, 0, int(ci), label + " cached",
                 label + " prefill");
      cmp.cache(kv, run.cache_bytes(), int(ci), label + " cached",
                label + " prefill");
      run.reset();
      Rng chunks{o.seed ^ (0x5eedull + ci)};
      for (size_t at = 0; at < L;) {
        const size_t n =
            size_t(chunks.in(1, std::max<int64_t>(1, int64_t(L) / 3)));
        const size_t m = std::min(n, L - at);
        const std::span<const float> part =
            run.prefill({tokens.data() + at, m}, true);
        cmp.logits(steps.data() + at * V, part.data(), m, int(at), int(ci),
                   label + " cached", label + " chunked prefill");
        at += m;
      }
      cmp.cache(kv, run.cache_bytes(), int(ci), label + " cached",
                label + " chunked prefill");
      // Digests: all contexts' logits, each layer's keys and values.
      logits_hash.update(steps.data(), steps.size() * sizeof(float));
      for (size_t t = 0; t < L; ++t) {
        for (size_t l = 0; l < size_t(c.n_layer); ++l) {
          const uint8_t* p = kv.data() + (t * row + l * 2 * C) * 4;
          layer_hash[2 * l].update(p, C * 4);
          layer_hash[2 * l + 1].update(p + C * 4, C * 4);
        }
      }
      // Across backends: this context's digests against the first's; on
      // a difference, the first backend's bytes again to name the word.
      const Sha256 dl = sha256(steps.data(), steps.size() * sizeof(float));
      const Sha256 dc = sha256(kv.data(), kv.size());
      if (bi == 0) {
        base_logits[ci] = dl, base_cache[ci] = dc;
      } else {
        r.logits_compared += L * V;
        r.cache_words_compared += kv.size() / 4;
        if (dl != base_logits[ci] || dc != base_cache[ci]) {
          cli::Gpt2Runner base(model_path, w, plan[0].name, plan[0].threads,
                               c.n_ctx);
          run_steps(base, tokens, V, base_steps, base_kv, nullptr);
          const std::string lb = r.backends[0].name + " cached";
          // Counted once above; the comparer counts again: undo.
          r.logits_compared -= L * V;
          r.cache_words_compared -= kv.size() / 4;
          cmp.logits(base_steps.data(), steps.data(), L, 0, int(ci), lb,
                     label + " cached");
          cmp.cache(base_kv, kv, int(ci), lb, label + " cached");
        }
      }
      if (progress) progress(++done, total, label);
    }
    rec.completions = complete(run, tok, c, o.completion_tokens);
    verify_end_backend(rec, t0);
    if (WasmHost* h = run.wasm_host()) rec.module_bytes = h->memory()[0];
    rec.logits_sha256 = to_hex(logits_hash.finish());
    for (size_t l = 0; l < size_t(c.n_layer); ++l) {
      rec.cache.push_back(
          {layer_op(int(l), "k"), to_hex(layer_hash[2 * l].finish())});
      rec.cache.push_back(
          {layer_op(int(l), "v"), to_hex(layer_hash[2 * l + 1].finish())});
    }
    if (bi > 0) verify_compare_completions(rec, r);
    // The backend's own operations: a fresh backend of the same kind and
    // thread count, observed (the CPU and CUDA backends show them;
    // docs/verify.md "Per-operation bisect between backends").
    if (o.op_hashes &&
        (plan[bi].name.rfind("cpu", 0) == 0 || plan[bi].name == "cuda")) {
      const std::unique_ptr<Gpt2Backend> ob =
          w.quant == "int8"
              ? make_gpt2_q8_backend(plan[bi].name, c, w.q8_data(),
                                     w.q8_bytes(), rec.threads, 0)
              : make_gpt2_backend(plan[bi].name, c, w.data(), w.words(),
                                  rec.threads, 0, w.layout);
      rec.ops = backend_op_hashes(*ob, c, contexts);
    }
    // wasm: the module's observed pass (docs/wasm.md "Observed pass").
    if (o.op_hashes && plan[bi].name == "wasm") {
      size_t longest = 1;
      for (const auto& x : contexts) {
        longest = std::max(longest, x.tokens.size());
      }
      WasmGpt2Backend ob(model_path, c, int(longest));
      rec.ops = backend_op_hashes(ob, c, contexts);
    }
    r.backends.push_back(std::move(rec));
  }

  if (o.op_hashes) {
    // The reference's named operations over every context, from weights
    // in the plain layout (the core's); int8 weights have one layout.
    if (w.quant == "int8") {
      r.ops = reference_q8_op_hashes(c, w.q8_data(), w.q8_bytes(), contexts);
    } else {
      std::vector<float> plain;
      const float* pw = w.data();
      if (w.layout == LS_GPT2_LAYOUT_PANEL64) {
        plain.resize(w.words());
        ls_gpt2_from_panels(&c, w.data(), plain.data());
        pw = plain.data();
      }
      r.ops = reference_op_hashes(c, pw, w.words(), contexts);
    }
    done += long(contexts.size());
    if (progress) progress(done, total, "reference operations");
    // The observed pass's logits are those of the cached step.
    if (!r.backends.empty() && !r.ops.empty() &&
        r.ops.back().sha256 != r.backends[0].logits_sha256) {
      VerifyMismatch m;
      m.what = "observed logits", m.a = r.backends[0].name + " cached";
      m.b = "reference observed full pass";
      verify_note_mismatch(r, m);
    }
    r.logits_compared += r.positions * V;
    // Each backend's own operations against the reference's (the names
    // both show); its logits digest is its cached step's.
    for (const BackendRecord& b : r.backends) {
      std::optional<std::string> d = first_shared_difference(b.ops, r.ops);
      if (!d && !b.ops.empty() && b.ops.back().name == "logits" &&
          b.ops.back().sha256 != b.logits_sha256) {
        d = "logits (observed prefill against cached step)";
      }
      if (!d) continue;
      VerifyMismatch m;
      m.what = "operations", m.a = "reference observed full pass";
      m.b = b.name + " observed prefill at " + *d;
      verify_note_mismatch(r, m);
    }
  }
  return r;
}

}  // namespace lockstep
