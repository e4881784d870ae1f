// lockstep verify on the tiny binary64 models (docs/verify.md "Tiny
// models"): every backend that runs them (the native core's checked entry,
// `reference`, and the WebAssembly module's, `wasm`) over seeded byte
// contexts at every prefix, the native every-position pass
// (train/tiny_grad.cc's forward) against them, every logit compared byte
// for byte, and per-operation digests from the every-position pass.
#ifndef LOCKSTEP_LIB_VERIFY_TINY_H_
#define LOCKSTEP_LIB_VERIFY_TINY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/verify.h"
#include "lockstep/tiny.h"

namespace lockstep {

// The backends that run the tiny models: "reference" (core/ls_tiny.c's
// checked entry, natively) and "wasm" (the same entry in the WebAssembly
// module, through the Node.js host).
const std::vector<std::string>& tiny_verify_backend_names();

// Lengths as make_verify_contexts draws them (the first context has the
// longest length); even-numbered contexts are bytes of `text` (Tiny
// Shakespeare) from a seeded offset, odd-numbered ones uniform random
// bytes. The tokens are byte values. Throws lockstep::Error for a text
// shorter than 4,096 bytes.
std::vector<VerifyContext> make_tiny_verify_contexts(int n_ctx,
                                                     const std::string& text,
                                                     const VerifyOptions& o);

// Byte comparison of rows of 256 binary64 logits of positions first.. of
// context ci: counts into r (logits_compared, mismatches) and keeps the
// first mismatch (position, token, both words as 16 hex digits).
void tiny_compare_logits(const double* a, const double* b, size_t rows,
                         int first, int ci, const std::string& la,
                         const std::string& lb, VerifyResult& r);

// The names of the per-operation digests the every-position pass records,
// in pass order: embed, h0.ln1, h0.qkv, h0.att_prob, h0.att_out, h0.res1,
// h0.ln2, h0.fc, h0.gelu, h0.res2, ln_f, logits (the GPT-2 names of
// docs/verify.md; att_score, proj and mlp_out are not kept by the pass).
const std::vector<std::string>& tiny_op_names();

// The every-position pass's per-operation digests over the contexts, on
// the weights clipped to [-bound, bound] as the checked entry clips them.
// Throws lockstep::Error for a bad bound or context.
std::vector<NamedHash> tiny_op_hashes(const TinyModel& m, double bound,
                                      const std::vector<VerifyContext>& ctxs);

// Runs the verification of a tiny model. o.backends names the backends
// (tiny_verify_backend_names(); o.threads is not used: every path is
// single-threaded); o.bound is the checked entry's bound. For each
// backend and context: the checked entry at every prefix (the logits of
// every position); for the first backend also the every-position pass
// over the whole context, compared row for row, whose intermediates give
// the operation digests (o.op_hashes). Across backends each context's
// logits are compared with the first backend's (by SHA-256; on a
// difference the first backend's rows are computed again and compared
// byte for byte). Greedy completions of two prompts (o.completion_tokens
// bytes, the window sliding as `lockstep generate` slides it) must agree.
// The result's cache fields stay empty (the tiny models keep no cache).
// Throws lockstep::Error for an unknown backend, a bound outside [0, 10],
// a failed pass, or a wasm host that cannot start.
VerifyResult run_verify_tiny(const TinyModel& m,
                             const std::vector<VerifyContext>& contexts,
                             const VerifyOptions& o,
                             const VerifyProgress& progress = {});

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_VERIFY_TINY_H_
