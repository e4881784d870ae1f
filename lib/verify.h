// lockstep verify (docs/verify.md): runs every backend over seeded contexts
// through the cached step, the full-prefix pass and the prefill (whole and
// chunked), compares every logit and cache word byte for byte across paths
// and backends, and keeps SHA-256 digests per layer and operation for
// bundles, --against and bisect.
#ifndef LOCKSTEP_LIB_VERIFY_H_
#define LOCKSTEP_LIB_VERIFY_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "ls_gpt2.h"

namespace lockstep {

class Tokenizer;
class Gpt2Backend;

struct VerifyOptions {
  int contexts = 128;  // prompts, alternately Tiny Shakespeare and random ids
  int min_length = 1;  // lengths drawn uniformly in [min_length, max_length]
  int max_length = 0;  // 0: n_ctx
  uint64_t seed = 1;
  // Backend names as make_gpt2_backend takes them, or "wasm"; each cpu
  // backend runs once per thread count in `threads` (0: all cores).
  std::vector<std::string> backends;
  std::vector<int> threads = {0};
  int completion_tokens = 16;  // greedy tokens per completion prompt
  // Hash every named operation of the reference's layer pass (one more
  // reference pass per context).
  bool op_hashes = true;
  // "int8": the command quantized a binary32 model to a temporary int8
  // file first (lockstep verify --quant int8); recorded, and taken from
  // the record by --against.
  std::string quant = "none";
  // Tiny models (lib/verify_tiny.h): the checked entry's weight bound B
  // (every weight clipped to [-B, B], docs/models.md), as `generate
  // --bound`.
  double bound = 10.0;
};

// One prompt: its tokens and where they came from.
struct VerifyContext {
  std::vector<int32_t> tokens;
  std::string source;  // "shakespeare@<byte offset>" or "random"
};

// Lengths from the seed; every other context is Tiny Shakespeare from a
// seeded offset (`text` tokenized), the rest uniform random ids. The first
// context has max_length tokens. Deterministic in (options, text).
std::vector<VerifyContext> make_verify_contexts(const ls_gpt2_config& c,
                                                const Tokenizer& tok,
                                                const std::string& text,
                                                const VerifyOptions& o);

// A named digest: a layer's operation ("h3.qkv", "h3.k", "logits").
struct NamedHash {
  std::string name;
  std::string sha256;
};

// The first differing word of a comparison.
struct VerifyMismatch {
  std::string what;   // "logits" or "cache"
  std::string a, b;   // "<backend> <path>", e.g. "reference cached"
  int context = -1;   // index into the contexts
  int position = -1;  // position in the context
  int layer = -1;     // cache: the layer
  std::string part;   // cache: "k" or "v"
  long index = -1;    // logits: token id; cache: element in k or v
  uint64_t bits_a = 0, bits_b = 0;
  int word_bytes = 4;  // 4: binary32 words, 8: binary64 (the tiny models)
  std::string describe() const;
};

struct Completion {
  std::string prompt;
  std::vector<int32_t> tokens;  // generated, greedy
  std::string text;
};

struct BackendRecord {
  std::string name;       // as run, e.g. "cpu-avx2 x2"
  std::string requested;  // as asked, e.g. "cpu-avx2"
  int threads = 1;
  double seconds = 0;
  uint64_t warm_rss = 0;         // bytes resident after creation and a step
  uint64_t peak_rss = 0;         // the process's peak while this backend ran
  uint64_t module_bytes = 0;     // wasm: the module's memory
  std::vector<double> step_ms;   // the first (longest) context's steps
  std::string logits_sha256;     // every cached-step logit, all contexts
  std::vector<NamedHash> cache;  // "h<l>.k", "h<l>.v": all contexts' rows
  // The backend's own operations (backend_op_hashes; cpu backends, when
  // op_hashes), empty for one that shows none.
  std::vector<NamedHash> ops;
  std::vector<Completion> completions;
};

struct VerifyResult {
  int contexts = 0;
  uint64_t positions = 0;
  std::string contexts_sha256;  // the contexts' tokens as int32 LE
  std::vector<std::string> context_sources;
  std::vector<BackendRecord> backends;
  std::vector<NamedHash> ops;  // the reference's taps: "embed", "h0.ln1", ...
  uint64_t logits_compared = 0, cache_words_compared = 0, mismatches = 0;
  std::optional<VerifyMismatch> first;
};

// Byte comparisons that count into a result and keep its first mismatch
// (with position, layer, k or v, and both words).
class VerifyComparer {
 public:
  VerifyComparer(const ls_gpt2_config& c, VerifyResult& r) : c_(c), r_(r) {}
  // `rows` rows of n_vocab logits of positions first.. of context ci.
  void logits(const float* a, const float* b, size_t rows, int first, int ci,
              const std::string& la, const std::string& lb);
  // Two caches of the same positions, as bytes.
  void cache(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
             int ci, const std::string& la, const std::string& lb);

 private:
  const ls_gpt2_config& c_;
  VerifyResult& r_;
};

// Progress: units done of a total, with a short status.
using VerifyProgress =
    std::function<void(long done, long total, const std::string& status)>;

// Runs the verification. `model_path` is what the wasm backend loads (a
// packed file, or the int8 file). Int8 weights (w.quant "int8") run on the
// int8 view of every backend and their operations are hashed by
// reference_q8_op_hashes. Throws lockstep::Error for a backend that cannot be
// made.
VerifyResult run_verify(const Gpt2Weights& w, const std::string& model_path,
                        const std::vector<VerifyContext>& contexts,
                        const Tokenizer& tok, const VerifyOptions& o,
                        const VerifyProgress& progress = {});

// The reference's per-operation digests over the contexts (plain-layout
// weights): what run_verify records in `ops`.
std::vector<NamedHash> reference_op_hashes(
    const ls_gpt2_config& c, const float* plain_weights, size_t words,
    const std::vector<VerifyContext>& contexts);

// The int8 reference's named operations over the contexts (int8 weights,
// ls_gpt2_q8_bytes(c) bytes, docs/int8.md): ls_gpt2_q8_infer_observed,
// the same names, order and shapes as reference_op_hashes ("embed", per
// layer "h<l>.ln1" .. "h<l>.res2", "ln_f", "logits").
std::vector<NamedHash> reference_q8_op_hashes(
    const ls_gpt2_config& c, const uint8_t* q8, size_t bytes,
    const std::vector<VerifyContext>& contexts);

// A backend's own operation digests over the contexts (docs/verify.md
// "Per-operation bisect between backends"): one prefill of each context
// with every position's logits, observed through
// Gpt2Backend::set_observer; the names it shows, in the reference's pass
// order (the CPU backend: all but att_score, att_prob and fc). Empty when
// the backend shows none. The observer is removed before returning.
// Throws lockstep::Error when a prefill fails.
std::vector<NamedHash> backend_op_hashes(
    Gpt2Backend& backend, const ls_gpt2_config& c,
    const std::vector<VerifyContext>& contexts);

// The first entry of `a`, in its order, whose name `b` also has and whose
// digests differ: between a backend's ops and the reference's, where one
// side shows fewer operations. nullopt when every shared one agrees.
std::optional<std::string> first_shared_difference(
    const std::vector<NamedHash>& a, const std::vector<NamedHash>& b);

// Helpers lib/verify_tiny.cc shares: a /proc/self/status field in bytes
// (0 where unavailable), and a reset of the peak resident size (VmHWM) so
// that each backend's peak is its own.
uint64_t verify_proc_status_bytes(const char* key);
void verify_reset_peak_rss();

// The contexts' count, positions, sources and the SHA-256 of their tokens
// (int32 LE) into r.
void verify_count_contexts(const std::vector<VerifyContext>& contexts,
                           VerifyResult& r);

// The end of a backend's run: its wall time since t0 and the process's
// peak resident size (since verify_reset_peak_rss) into rec.
void verify_end_backend(BackendRecord& rec,
                        std::chrono::steady_clock::time_point t0);

// One more mismatch in r; m becomes r.first when it is the first.
void verify_note_mismatch(VerifyResult& r, const VerifyMismatch& m);

// Byte comparison of `rows` rows of n_vocab logit words (word_bytes 4:
// binary32, 8: binary64) of positions first.. of context ci: counts into r
// and keeps the first mismatch (position, token, both words).
void verify_compare_logit_words(const void* a, const void* b, size_t rows,
                                size_t n_vocab, int word_bytes, int first,
                                int ci, const std::string& la,
                                const std::string& lb, VerifyResult& r);

// A later backend's greedy completions against the first's (r.backends[0]):
// a completion whose tokens differ is a mismatch.
void verify_compare_completions(const BackendRecord& rec, VerifyResult& r);

// Contexts as make_verify_contexts draws them, for a model of n_ctx
// positions and n_vocab ids: lengths from the seed (the first context
// max_length long), even-numbered ones `text_tokens(offset, len)` from a
// seeded offset into the text (its source "shakespeare@<offset>"),
// odd-numbered ones uniform random ids. Throws lockstep::Error for a text
// shorter than 4,096 bytes.
std::vector<VerifyContext> verify_draw_contexts(
    int n_ctx, int64_t n_vocab, const std::string& text, const VerifyOptions& o,
    const std::function<std::vector<int32_t>(size_t offset, int len)>&
        text_tokens);

// splitmix64: a seeded stream that is the same on every machine (the
// standard library's distributions are not).
struct VerifyRng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (the tiny modulo bias does not matter here).
  int64_t in(int64_t lo, int64_t hi) {
    return lo + int64_t(next() % uint64_t(hi - lo + 1));
  }
};

// The tap names of core/ls_gpt2.h in pass order ("ln1", ..., "logits").
const char* gpt2_tap_name(ls_gpt2_tap tap);
// The name of a tap's tensor: "embed", "h<layer>.<tap>", "ln_f", "logits".
std::string gpt2_op_name(int layer, ls_gpt2_tap tap);

// The first entry, in order, where two digest lists differ (by name; an
// entry missing from one side counts), or nullopt when equal.
std::optional<std::string> first_difference(const std::vector<NamedHash>& a,
                                            const std::vector<NamedHash>& b);

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_VERIFY_H_
