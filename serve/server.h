// `lockstep serve`'s HTTP side (docs/serve.md): cpp-httplib's server with
// the OpenAI-style routes over a SessionPool, JSON errors for every
// refusal, server-sent events for streams, one log line per request on
// standard error.
#ifndef LOCKSTEP_SERVE_SERVER_H_
#define LOCKSTEP_SERVE_SERVER_H_

#include <string>

#include "ls_gpt2.h"
#include "serve/request.h"
#include "serve/session_pool.h"
#include "tokenizer/bpe.h"

namespace lockstep::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (the log line names it)
  int queue_timeout_s = 60;
  size_t max_body_bytes = 1 << 20;
  std::string payload_sha256;
  std::string backend;  // the sessions' backend name
  std::string quant;    // "f32" or "int8"
  ls_gpt2_config config{};
};

// Serves until SIGINT or SIGTERM (blocked by the caller in every thread
// before any is started, so that this one alone takes them); returns the
// exit status. Throws lockstep::Error when the address cannot be bound.
int run_server(const ServeOptions& options, const RequestLimits& limits,
               SessionPool& pool, const Tokenizer& tok);

}  // namespace lockstep::serve

#endif  // LOCKSTEP_SERVE_SERVER_H_
