/* lockstep's C ABI (docs/library.md "C"): load a GPT-2 model, tokenize,
 * run sessions (prefill, step), sample and generate, from C or any language
 * with a C foreign-function interface (python/lockstep.py uses ctypes).
 *
 * A thin layer over the C++ library (lockstep/gpt2.h, lockstep/sampling.h,
 * formats/gpt2_checkpoint.h, tokenizer/bpe.h): the same sessions, the same
 * bits. Every call that can fail returns a lockstep_status; the message of
 * the calling thread's last failure is lockstep_last_error(). No call
 * throws, aborts or exits on bad input.
 *
 * Handles are opaque. A model is immutable once loaded and may be shared by
 * any number of sessions on any threads; a session, a sampler and the
 * buffers they return belong to one thread at a time (see docs/library.md
 * "Threads"); a tokenizer may be used by several threads at once. */
#ifndef LOCKSTEP_CAPI_LOCKSTEP_H_
#define LOCKSTEP_CAPI_LOCKSTEP_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOCKSTEP_C_API_VERSION 1

typedef enum lockstep_status {
  LOCKSTEP_OK = 0,
  LOCKSTEP_ERR_ARGUMENT = 1, /* a null handle or pointer, a bad option */
  LOCKSTEP_ERR_LOAD = 2,     /* a file missing, unreadable or malformed */
  LOCKSTEP_ERR_RANGE = 3,    /* a token outside the vocabulary, a context
                                that would overflow, a non-finite logit */
  LOCKSTEP_ERR_BUFFER = 4,   /* the caller's buffer is too small: the size
                                needed is in the size output */
  LOCKSTEP_ERR_MEMORY = 5,   /* an allocation failed */
  LOCKSTEP_ERR_INTERNAL = 6  /* anything else (a bug: please report) */
} lockstep_status;

typedef struct lockstep_model lockstep_model;
typedef struct lockstep_session lockstep_session;
typedef struct lockstep_tokenizer lockstep_tokenizer;
typedef struct lockstep_sampler lockstep_sampler;

/* "0.1.0": the library's version. */
const char* lockstep_version(void);
/* A fixed English name of a status ("ok", "bad argument", ...). */
const char* lockstep_status_string(lockstep_status status);
/* The message of this thread's last failed call ("" if none): names the
 * problem and, for files, the path. Valid until this thread's next failed
 * call. */
const char* lockstep_last_error(void);

/* ---- Models ---------------------------------------------------------- */

typedef struct lockstep_model_info {
  int32_t n_vocab, n_ctx, n_embd, n_head, n_layer;
  /* 1 for a grouped int8 file (docs/int8.md), 0 for binary32 weights. */
  int32_t int8;
} lockstep_model_info;

/* Loads a GPT-2: a packed .lockstep file (binary32 or int8; mapped, its
 * payload digest verified, every weight checked finite) or a Hugging Face
 * folder (config.json + model.safetensors; packed into memory). Costs one
 * pass over the weights; allocates the model (an HF folder: its weights
 * too). *out is set on success, else left NULL. */
lockstep_status lockstep_model_load(const char* path, lockstep_model** out);
void lockstep_model_free(lockstep_model* model); /* NULL: no-op */
lockstep_status lockstep_model_get_info(const lockstep_model* model,
                                        lockstep_model_info* out);
/* The hex SHA-256 of the weights as stored (64 characters; valid while
 * the model lives): what `lockstep info` and `lockstep serve` report. */
const char* lockstep_model_payload_sha256(const lockstep_model* model);

/* ---- Sessions -------------------------------------------------------- */

typedef struct lockstep_session_options {
  /* "cpu" (default when NULL), "cpu-avx512", "cpu-avx2", "cpu-generic",
   * "reference" (and "cuda" in a CUDA build): every one gives the same
   * bits. */
  const char* backend;
  int32_t threads;    /* 0: one per hardware thread; 1 .. 256 */
  int32_t max_prefix; /* longest batch of one prefill chunk; 0: n_ctx */
} lockstep_session_options;

/* Fills *options with the defaults ("cpu", 0 threads, max_prefix 0). */
void lockstep_session_options_init(lockstep_session_options* options);

/* A session over `model` (which must outlive it): allocates the KV cache
 * (n_ctx positions), the logits and the backend's scratch, once; starts
 * its compute threads. options NULL: the defaults. */
lockstep_status lockstep_session_create(const lockstep_model* model,
                                        const lockstep_session_options* options,
                                        lockstep_session** out);
void lockstep_session_free(lockstep_session* session); /* NULL: no-op */

/* Consumes `token` at the next position and points *logits at the n_vocab
 * binary32 logits (owned by the session, valid until its next call).
 * Allocates nothing. */
lockstep_status lockstep_session_step(lockstep_session* session, int32_t token,
                                      const float** logits);
/* Consumes n >= 1 tokens at once (batched matrix products, in chunks of
 * max_prefix): the same logits and cache, bit for bit, as stepping them
 * one at a time. *logits: the last position's n_vocab logits. Consumes
 * nothing on failure. Allocates nothing. */
lockstep_status lockstep_session_prefill(lockstep_session* session,
                                         const int32_t* tokens, size_t n,
                                         const float** logits);
/* Positions consumed so far (0 .. n_ctx); reset empties the cache (O(1)). */
int32_t lockstep_session_position(const lockstep_session* session);
void lockstep_session_reset(lockstep_session* session);
/* The backend in use, e.g. "cpu-avx512 x2" (valid while the session lives). */
const char* lockstep_session_backend(const lockstep_session* session);

/* ---- Sampling -------------------------------------------------------- */

typedef struct lockstep_sampler_options {
  int32_t top_k;      /* 0: all candidates (greedy unless top_p < 1) */
  double temperature; /* > 0 and finite (1.0) */
  uint64_t seed;
  double top_p; /* (0, 1]; 1: off */
} lockstep_sampler_options;

/* Greedy: top_k 0, temperature 1, seed 0, top_p 1. */
void lockstep_sampler_options_init(lockstep_sampler_options* options);
/* A sampler over `n_vocab` logits (docs/arithmetic.md §5): greedy, or
 * seeded top-k / top-p with temperature. Allocates its work arrays. */
lockstep_status lockstep_sampler_create(const lockstep_sampler_options* options,
                                        int32_t n_vocab,
                                        lockstep_sampler** out);
void lockstep_sampler_free(lockstep_sampler* sampler); /* NULL: no-op */
/* The next token from n logits (n must be the sampler's n_vocab). Advances
 * the seeded state; allocates nothing. */
lockstep_status lockstep_sampler_next(lockstep_sampler* sampler,
                                      const float* logits, size_t n,
                                      int32_t* token);

/* Prefills `prompt` (n_prompt >= 1 tokens) after what the session holds,
 * then samples up to max_new tokens into out (room for max_new), stepping
 * each one but the last through the model. Stops early after writing
 * `stop_token` (-1: none) or when the context is full. *n_out: tokens
 * written (also on failure). Equals prefill + sampler_next + step by hand. */
lockstep_status lockstep_generate(lockstep_session* session,
                                  lockstep_sampler* sampler,
                                  const int32_t* prompt, size_t n_prompt,
                                  size_t max_new, int32_t stop_token,
                                  int32_t* out, size_t* n_out);

/* ---- Tokenizer ------------------------------------------------------- */

/* GPT-2's byte-level BPE from dir/encoder.json and dir/vocab.bpe (both
 * SHA-256 pinned). dir NULL: $LOCKSTEP_DATA/gpt2, else the data/gpt2 of
 * the source tree the library was built from. An installed package has
 * them in <prefix>/share/lockstep/gpt2 (lockstep_DATADIR in CMake,
 * `pkg-config --variable=datadir lockstep`). Allocates its tables (about
 * 18 MB). */
lockstep_status lockstep_tokenizer_load(const char* dir,
                                        lockstep_tokenizer** out);
void lockstep_tokenizer_free(lockstep_tokenizer* tokenizer); /* NULL: no-op */
/* The ids of `len` bytes of text (any bytes; "<|endoftext|>" as plain text).
 * Writes at most `capacity` ids; *n_ids is the count needed, and
 * LOCKSTEP_ERR_BUFFER says capacity was short (call again with *n_ids). */
lockstep_status lockstep_tokenize(const lockstep_tokenizer* tokenizer,
                                  const char* text, size_t len, int32_t* ids,
                                  size_t capacity, size_t* n_ids);
/* The bytes of n ids, concatenated (not always valid UTF-8), then a NUL
 * when room is left. *len is the byte count needed (without the NUL);
 * LOCKSTEP_ERR_BUFFER says capacity was short. */
lockstep_status lockstep_detokenize(const lockstep_tokenizer* tokenizer,
                                    const int32_t* ids, size_t n, char* text,
                                    size_t capacity, size_t* len);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_CAPI_LOCKSTEP_H_ */
