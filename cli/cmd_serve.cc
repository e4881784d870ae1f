// lockstep serve: an OpenAI-style HTTP server over a fixed pool of GPT-2
// sessions (serve/, docs/serve.md).
#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "cli/gpt2_runner.h"
#include "cli/model_args.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#ifdef LOCKSTEP_HAVE_HTTPLIB
#include "serve/server.h"
#include "serve/session_pool.h"
#endif

namespace lockstep::cli {
namespace {

struct ServeArgs {
  ModelArgs model;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string backend = "cpu";
  int threads = 0;
  int sessions = 2;
  int queue = 16;
  int queue_timeout = 60;
  int max_tokens = 0;  // 0: the model's context
  int max_body_kib = 1024;
  std::string name;  // the model id; empty: the file or folder's name
};

// The model's id: its file or folder name without .lockstep/.safetensors.
[[maybe_unused]] std::string default_id(const std::string& path) {
  std::filesystem::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // "models/x/"
  std::string name = p.filename().string();
  for (const char* ext : {".lockstep", ".safetensors"}) {
    const std::string e = ext;
    if (name.size() > e.size() && name.ends_with(e)) {
      name.resize(name.size() - e.size());
    }
  }
  return name;
}

int run(const ServeArgs& a) {
#ifndef LOCKSTEP_HAVE_HTTPLIB
  (void)a;
  throw Error(
      "this lockstep was built without cpp-httplib, so it has no server "
      "(apt-get install libcpp-httplib-dev, then configure again)");
#else
  if (a.model.kind() != ModelKind::kGpt2) {
    throw Error("lockstep serve runs GPT-2 models; '" + a.model.label() +
                "' is a tiny model");
  }
  if (a.backend == "wasm") {
    throw Error(
        "lockstep serve runs native backends (cpu, cpu-avx512, cpu-avx2, "
        "cpu-generic, reference, cuda); --backend wasm is for generate and "
        "logits");
  }
  // SIGINT and SIGTERM go to the server's signal thread alone: blocked here,
  // before any session's compute threads or the HTTP workers start (they
  // inherit the mask).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  const std::string path = a.model.path();
  const Gpt2Weights w = load_gpt2_any(path);
  const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
  if (w.config.n_vocab != tok.vocab_size()) {
    throw Error(
        "the model's vocabulary has " + std::to_string(w.config.n_vocab) +
        " tokens; GPT-2's tokenizer has " + std::to_string(tok.vocab_size()));
  }
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  // Absent --threads: the cores shared out among the sessions.
  const int threads =
      a.threads > 0 ? a.threads : std::max(1, int(hw) / a.sessions);
  std::vector<std::unique_ptr<Gpt2Runner> > sessions;
  for (int k = 0; k < a.sessions; ++k) {
    sessions.push_back(std::make_unique<Gpt2Runner>(path, w, a.backend, threads,
                                                    w.config.n_ctx));
  }
  serve::ServeOptions o;
  o.host = a.host;
  o.port = a.port;
  o.queue_timeout_s = a.queue_timeout;
  o.max_body_bytes = size_t(a.max_body_kib) * 1024;
  o.payload_sha256 = w.payload_sha256;
  o.backend = sessions[0]->backend_name();
  o.quant = w.quant;
  o.config = w.config;
  serve::RequestLimits limits;
  limits.model_id = a.name.empty() ? default_id(path) : a.name;
  limits.n_ctx = w.config.n_ctx;
  limits.n_vocab = w.config.n_vocab;
  limits.max_tokens = a.max_tokens > 0 ? a.max_tokens : w.config.n_ctx;
  serve::SessionPool pool(std::move(sessions), a.queue);
  return serve::run_server(o, limits, pool, tok);
#endif
}

}  // namespace

Action add_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  a->model.add(app);
  app.add_option("--host", a->host,
                 "address to listen on (127.0.0.1: this machine only; "
                 "0.0.0.0: every interface, with no authentication)")
      ->capture_default_str();
  app.add_option("--port", a->port,
                 "TCP port (0: any free port, named in the first log line)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  add_backend_options(app, a->backend, a->threads);
  app.add_option("--sessions", a->sessions,
                 "sessions, each with its own KV cache: requests generated "
                 "at once (absent --threads: the cores shared among them)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--queue", a->queue,
                 "requests that may wait for a session; more get HTTP 429")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--queue-timeout", a->queue_timeout,
                 "seconds a request may wait for a session before HTTP 503")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--max-tokens-limit", a->max_tokens,
                 "the largest max_tokens a request may ask (0: the model's "
                 "context; also chat's default)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-body", a->max_body_kib,
                 "the largest request body in KiB (larger: HTTP 413)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--name", a->name,
                 "the model id clients send (default: the file or folder "
                 "name)");
  app.footer(
      "Routes: POST /v1/completions, POST /v1/chat/completions, GET "
      "/v1/models,\n"
      "GET /health. Every response carries the model's payload SHA-256 and "
      "the\n"
      "SHA-256 of each step's logits (docs/serve.md). One line per request "
      "on\n"
      "standard error; SIGINT or SIGTERM stops the server.\n"
      "\n"
      "Examples:\n"
      "  lockstep serve --model models/shakespeare-gpt2\n"
      "  lockstep serve --model gpt2.lockstep --port 9000 --sessions 4 "
      "--threads 2\n"
      "  curl -s localhost:8080/v1/completions -d '{\"prompt\": \"ROMEO:\", "
      "\"max_tokens\": 32, \"seed\": 1}'");
  return [a]() { return run(*a); };
}

}  // namespace lockstep::cli
