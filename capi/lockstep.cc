// The C ABI of capi/lockstep.h over the C++ library: each call catches
// every exception and turns it into a status and a thread-local message.
#include "lockstep.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "lockstep/paths.h"
#include "lockstep/sampling.h"
#include "tokenizer/bpe.h"

struct lockstep_model {
  lockstep::Gpt2Weights weights;
};

struct lockstep_session {
  std::optional<lockstep::Gpt2Session> session;
  std::string backend;
};

struct lockstep_tokenizer {
  std::optional<lockstep::Tokenizer> tokenizer;
};

struct lockstep_sampler {
  std::optional<lockstep::Sampler> sampler;
  int32_t n_vocab = 0;
};

namespace {

thread_local std::string last_error;

lockstep_status fail(lockstep_status s, const std::string& message) {
  try {
    last_error = message;
  } catch (...) {  // no memory for the message: keep the status
  }
  return s;
}

// A message that names the range problems the library throws as
// lockstep::Error (context, token, finite logits) as RANGE, the file
// problems as LOAD; the caller says which is likely for its call.
template <typename F>
lockstep_status guard(lockstep_status error_kind, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(LOCKSTEP_ERR_MEMORY, "out of memory");
  } catch (const lockstep::Error& e) {
    return fail(error_kind, e.what());
  } catch (const std::exception& e) {
    return fail(LOCKSTEP_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(LOCKSTEP_ERR_INTERNAL, "unknown exception");
  }
}

lockstep_status null_argument(const char* what) {
  return fail(LOCKSTEP_ERR_ARGUMENT, std::string(what) + " is NULL");
}

}  // namespace

extern "C" {

const char* lockstep_version(void) { return "0.1.0"; }

const char* lockstep_status_string(lockstep_status status) {
  switch (status) {
    case LOCKSTEP_OK:
      return "ok";
    case LOCKSTEP_ERR_ARGUMENT:
      return "bad argument";
    case LOCKSTEP_ERR_LOAD:
      return "cannot load";
    case LOCKSTEP_ERR_RANGE:
      return "out of range";
    case LOCKSTEP_ERR_BUFFER:
      return "buffer too small";
    case LOCKSTEP_ERR_MEMORY:
      return "out of memory";
    case LOCKSTEP_ERR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* lockstep_last_error(void) { return last_error.c_str(); }

lockstep_status lockstep_model_load(const char* path, lockstep_model** out) {
  if (!out) return null_argument("out");
  *out = nullptr;
  if (!path) return null_argument("path");
  return guard(LOCKSTEP_ERR_LOAD, [&] {
    auto m = std::make_unique<lockstep_model>();
    m->weights = lockstep::load_gpt2_any(path);
    *out = m.release();
    return LOCKSTEP_OK;
  });
}

void lockstep_model_free(lockstep_model* model) { delete model; }

lockstep_status lockstep_model_get_info(const lockstep_model* model,
                                        lockstep_model_info* out) {
  if (!model) return null_argument("model");
  if (!out) return null_argument("out");
  const ls_gpt2_config& c = model->weights.config;
  *out = {c.n_vocab, c.n_ctx,   c.n_embd,
          c.n_head,  c.n_layer, model->weights.quant == "int8" ? 1 : 0};
  return LOCKSTEP_OK;
}

const char* lockstep_model_payload_sha256(const lockstep_model* model) {
  return model ? model->weights.payload_sha256.c_str() : "";
}

void lockstep_session_options_init(lockstep_session_options* options) {
  if (options) *options = {"cpu", 0, 0};
}

lockstep_status lockstep_session_create(const lockstep_model* model,
                                        const lockstep_session_options* options,
                                        lockstep_session** out) {
  if (!out) return null_argument("out");
  *out = nullptr;
  if (!model) return null_argument("model");
  return guard(LOCKSTEP_ERR_ARGUMENT, [&] {
    lockstep::Gpt2SessionOptions o;
    if (options) {
      if (options->backend) o.backend = options->backend;
      if (options->threads < 0 || options->threads > 256) {
        return fail(LOCKSTEP_ERR_ARGUMENT,
                    "threads must be 0 (one per hardware thread) or 1 .. "
                    "256, not " +
                        std::to_string(options->threads));
      }
      if (options->max_prefix < 0) {
        return fail(LOCKSTEP_ERR_ARGUMENT,
                    "max_prefix must be >= 0 (0: n_ctx), not " +
                        std::to_string(options->max_prefix));
      }
      o.threads = options->threads;
      o.max_prefix = options->max_prefix;
    }
    const lockstep::Gpt2Weights& w = model->weights;
    auto s = std::make_unique<lockstep_session>();
    s->session.emplace(lockstep::Gpt2View{w.config, w.data(), w.words(),
                                          w.layout, w.q8_data(), w.q8_bytes()},
                       o);
    s->backend = s->session->backend_name();
    *out = s.release();
    return LOCKSTEP_OK;
  });
}

void lockstep_session_free(lockstep_session* session) { delete session; }

lockstep_status lockstep_session_step(lockstep_session* session, int32_t token,
                                      const float** logits) {
  if (!session) return null_argument("session");
  if (!logits) return null_argument("logits");
  return guard(LOCKSTEP_ERR_RANGE, [&] {
    *logits = session->session->step(token).data();
    return LOCKSTEP_OK;
  });
}

lockstep_status lockstep_session_prefill(lockstep_session* session,
                                         const int32_t* tokens, size_t n,
                                         const float** logits) {
  if (!session) return null_argument("session");
  if (!logits) return null_argument("logits");
  if (!tokens || n == 0) {
    return fail(LOCKSTEP_ERR_ARGUMENT, "prefill needs at least one token");
  }
  return guard(LOCKSTEP_ERR_RANGE, [&] {
    *logits = session->session->prefill({tokens, n}).data();
    return LOCKSTEP_OK;
  });
}

int32_t lockstep_session_position(const lockstep_session* session) {
  return session ? session->session->position() : 0;
}

void lockstep_session_reset(lockstep_session* session) {
  if (session) session->session->reset();
}

const char* lockstep_session_backend(const lockstep_session* session) {
  return session ? session->backend.c_str() : "";
}

void lockstep_sampler_options_init(lockstep_sampler_options* options) {
  if (options) *options = {0, 1.0, 0, 1.0};
}

lockstep_status lockstep_sampler_create(const lockstep_sampler_options* options,
                                        int32_t n_vocab,
                                        lockstep_sampler** out) {
  if (!out) return null_argument("out");
  *out = nullptr;
  if (!options) return null_argument("options");
  if (n_vocab < 1) {
    return fail(LOCKSTEP_ERR_ARGUMENT,
                "n_vocab must be >= 1, not " + std::to_string(n_vocab));
  }
  return guard(LOCKSTEP_ERR_ARGUMENT, [&] {
    auto s = std::make_unique<lockstep_sampler>();
    s->sampler.emplace(
        lockstep::SamplerOptions{options->top_k, options->temperature,
                                 options->seed, options->top_p},
        n_vocab);
    s->n_vocab = n_vocab;
    *out = s.release();
    return LOCKSTEP_OK;
  });
}

void lockstep_sampler_free(lockstep_sampler* sampler) { delete sampler; }

lockstep_status lockstep_sampler_next(lockstep_sampler* sampler,
                                      const float* logits, size_t n,
                                      int32_t* token) {
  if (!sampler) return null_argument("sampler");
  if (!logits) return null_argument("logits");
  if (!token) return null_argument("token");
  if (n != size_t(sampler->n_vocab)) {
    return fail(LOCKSTEP_ERR_ARGUMENT, "the sampler takes " +
                                           std::to_string(sampler->n_vocab) +
                                           " logits, not " + std::to_string(n));
  }
  return guard(LOCKSTEP_ERR_RANGE, [&] {
    *token = sampler->sampler->next(std::span<const float>(logits, n));
    return LOCKSTEP_OK;
  });
}

lockstep_status lockstep_generate(lockstep_session* session,
                                  lockstep_sampler* sampler,
                                  const int32_t* prompt, size_t n_prompt,
                                  size_t max_new, int32_t stop_token,
                                  int32_t* out, size_t* n_out) {
  if (!n_out) return null_argument("n_out");
  *n_out = 0;
  if (!session) return null_argument("session");
  if (!sampler) return null_argument("sampler");
  if (!out && max_new > 0) return null_argument("out");
  const ls_gpt2_config& c = session->session->config();
  if (sampler->n_vocab != c.n_vocab) {
    return fail(LOCKSTEP_ERR_ARGUMENT,
                "the sampler takes " + std::to_string(sampler->n_vocab) +
                    " logits; the model has " + std::to_string(c.n_vocab));
  }
  const float* logits = nullptr;
  const lockstep_status s =
      lockstep_session_prefill(session, prompt, n_prompt, &logits);
  if (s != LOCKSTEP_OK) return s;
  for (size_t i = 0; i < max_new; ++i) {
    int32_t next = 0;
    const lockstep_status t =
        lockstep_sampler_next(sampler, logits, size_t(c.n_vocab), &next);
    if (t != LOCKSTEP_OK) return t;
    out[(*n_out)++] = next;
    if (next == stop_token || i + 1 == max_new ||
        session->session->position() >= c.n_ctx) {
      break;
    }
    const lockstep_status u = lockstep_session_step(session, next, &logits);
    if (u != LOCKSTEP_OK) return u;
  }
  return LOCKSTEP_OK;
}

lockstep_status lockstep_tokenizer_load(const char* dir,
                                        lockstep_tokenizer** out) {
  if (!out) return null_argument("out");
  *out = nullptr;
  return guard(LOCKSTEP_ERR_LOAD, [&] {
    auto t = std::make_unique<lockstep_tokenizer>();
    t->tokenizer.emplace(lockstep::Tokenizer::load(
        dir ? std::string(dir) : lockstep::data_dir() + "/gpt2"));
    *out = t.release();
    return LOCKSTEP_OK;
  });
}

void lockstep_tokenizer_free(lockstep_tokenizer* tokenizer) {
  delete tokenizer;
}

lockstep_status lockstep_tokenize(const lockstep_tokenizer* tokenizer,
                                  const char* text, size_t len, int32_t* ids,
                                  size_t capacity, size_t* n_ids) {
  if (!n_ids) return null_argument("n_ids");
  *n_ids = 0;
  if (!tokenizer) return null_argument("tokenizer");
  if (!text && len > 0) return null_argument("text");
  if (!ids && capacity > 0) return null_argument("ids");
  return guard(LOCKSTEP_ERR_RANGE, [&] {
    const std::vector<int32_t> v =
        tokenizer->tokenizer->encode(std::string_view(text ? text : "", len));
    *n_ids = v.size();
    if (v.size() > capacity) {
      return fail(LOCKSTEP_ERR_BUFFER,
                  "the text has " + std::to_string(v.size()) +
                      " tokens; the buffer holds " + std::to_string(capacity));
    }
    if (!v.empty()) std::memcpy(ids, v.data(), v.size() * sizeof(int32_t));
    return LOCKSTEP_OK;
  });
}

lockstep_status lockstep_detokenize(const lockstep_tokenizer* tokenizer,
                                    const int32_t* ids, size_t n, char* text,
                                    size_t capacity, size_t* len) {
  if (!len) return null_argument("len");
  *len = 0;
  if (!tokenizer) return null_argument("tokenizer");
  if (!ids && n > 0) return null_argument("ids");
  if (!text && capacity > 0) return null_argument("text");
  return guard(LOCKSTEP_ERR_RANGE, [&] {
    const std::string s =
        tokenizer->tokenizer->decode(std::span<const int32_t>(ids, n));
    *len = s.size();
    if (s.size() > capacity) {
      return fail(LOCKSTEP_ERR_BUFFER,
                  "the text has " + std::to_string(s.size()) +
                      " bytes; the buffer holds " + std::to_string(capacity));
    }
    if (!s.empty()) std::memcpy(text, s.data(), s.size());
    if (s.size() < capacity) text[s.size()] = '\0';
    return LOCKSTEP_OK;
  });
}

}  // extern "C"
