#include "serve/server.h"

#include <httplib.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <thread>

#include "lockstep/error.h"
#include "serve/completion.h"

namespace lockstep::serve {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Every body is UTF-8: a token's bytes that are not (half of a character
// split across tokens, or any invalid sequence) are written as U+FFFD in
// text fields; the exact bytes are the token ids (docs/serve.md).
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// What the log line of the request being served on this thread says.
// cpp-httplib runs a request's routing, handler, content provider and
// logger on one worker thread, one request at a time.
struct RequestLog {
  Clock::time_point start;
  bool completion = false;
  bool stream = false;
  size_t prompt = 0, generated = 0;
  const char* finish = "";
  double queue_ms = 0, prefill_ms = 0;
};
thread_local RequestLog t_log;

json error_body(const std::string& message, const std::string& type,
                const std::string& param, const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json() : json(param)},
            {"code", code.empty() ? json() : json(code)}}}};
}

void send_error(httplib::Response& res, int status, const std::string& message,
                const std::string& type = "invalid_request_error",
                const std::string& param = "", const std::string& code = "") {
  res.status = status;
  res.set_content(dump(error_body(message, type, param, code)),
                  "application/json");
}

class Server {
 public:
  Server(const ServeOptions& o, const RequestLimits& l, SessionPool& pool,
         const Tokenizer& tok)
      : o_(o), limits_(l), pool_(pool), tok_(tok) {}

  int run();

 private:
  void completion(Endpoint ep, const httplib::Request& req,
                  httplib::Response& res);
  json model_card() const;
  json lockstep_summary(const CompletionRequest& r, const Completion& c,
                        bool per_step) const;
  json legacy_logprobs(const std::vector<int32_t>& tokens,
                       const std::vector<TokenLogprobs>& lp, size_t first,
                       size_t offset) const;
  json chat_logprobs(const std::vector<int32_t>& tokens,
                     const std::vector<TokenLogprobs>& lp, size_t first) const;
  json token_bytes(int32_t id) const;

  const ServeOptions& o_;
  const RequestLimits& limits_;
  SessionPool& pool_;
  const Tokenizer& tok_;
  std::atomic<uint64_t> next_id_{1};
  httplib::Server http_;
};

json Server::model_card() const {
  const ls_gpt2_config& c = o_.config;
  return {{"id", limits_.model_id},
          {"object", "model"},
          {"created", 0},
          {"owned_by", "lockstep"},
          {"lockstep",
           {{"payload_sha256", o_.payload_sha256},
            {"backend", o_.backend},
            {"quant", o_.quant},
            {"n_ctx", c.n_ctx},
            {"n_vocab", c.n_vocab},
            {"n_layer", c.n_layer},
            {"n_head", c.n_head},
            {"n_embd", c.n_embd},
            {"sessions", pool_.size()},
            {"queue", pool_.queue_limit()},
            {"max_tokens_limit", limits_.max_tokens}}}};
}

json Server::lockstep_summary(const CompletionRequest& r, const Completion& c,
                              bool per_step) const {
  json sampler = {{"seed", r.sampler.seed}};
  if (r.sampler.top_k == 0) {
    sampler["greedy"] = true;
  } else {
    sampler["greedy"] = false;
    sampler["top_k"] = r.sampler.top_k;
    sampler["temperature"] = r.sampler.temperature;
    sampler["top_p"] = r.sampler.top_p;
  }
  json j = {{"payload_sha256", o_.payload_sha256},
            {"backend", o_.backend},
            {"prompt_tokens", r.prompt_tokens},
            {"tokens", c.tokens},
            {"logits_sha256_all", c.logits_sha256_all},
            {"finish", lockstep_finish(c.finish)},
            {"sampler", sampler},
            {"stop", r.stops}};
  if (per_step) j["logits_sha256"] = c.logits_sha256;
  if (c.finish == Finish::kStopString) j["stop_string"] = c.stop_string;
  return j;
}

json Server::token_bytes(int32_t id) const {
  json b = json::array();
  for (char ch : tok_.token_bytes(id)) b.push_back(int(uint8_t(ch)));
  return b;
}

json Server::legacy_logprobs(const std::vector<int32_t>& tokens,
                             const std::vector<TokenLogprobs>& lp, size_t first,
                             size_t offset) const {
  json j = {{"tokens", json::array()},
            {"token_logprobs", json::array()},
            {"top_logprobs", json::array()},
            {"text_offset", json::array()}};
  for (size_t i = first; i < lp.size(); ++i) {
    j["tokens"].push_back(tok_.token_bytes(tokens[i]));
    j["token_logprobs"].push_back(lp[i].chosen);
    json top = json::object();
    for (const auto& [id, v] : lp[i].top) top[tok_.token_bytes(id)] = v;
    j["top_logprobs"].push_back(top);
    j["text_offset"].push_back(offset);
    offset += tok_.token_bytes(tokens[i]).size();
  }
  return j;
}

json Server::chat_logprobs(const std::vector<int32_t>& tokens,
                           const std::vector<TokenLogprobs>& lp,
                           size_t first) const {
  json content = json::array();
  for (size_t i = first; i < lp.size(); ++i) {
    json top = json::array();
    for (const auto& [id, v] : lp[i].top) {
      top.push_back({{"token", tok_.token_bytes(id)},
                     {"logprob", v},
                     {"bytes", token_bytes(id)}});
    }
    content.push_back({{"token", tok_.token_bytes(tokens[i])},
                       {"logprob", lp[i].chosen},
                       {"bytes", token_bytes(tokens[i])},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

void Server::completion(Endpoint ep, const httplib::Request& req,
                        httplib::Response& res) {
  t_log.completion = true;
  CompletionRequest r;
  try {
    r = parse_request(ep, req.body, limits_, tok_);
  } catch (const RequestError& e) {
    send_error(res, e.status, e.what(), e.type, e.param, e.code);
    return;
  }
  t_log.stream = r.stream;
  t_log.prompt = r.prompt_tokens.size();
  SessionPool::Refusal why;
  std::unique_ptr<SessionPool::Lease> lease = pool_.acquire(
      std::chrono::seconds(o_.queue_timeout_s), &why, &t_log.queue_ms);
  if (!lease) {
    res.set_header("Retry-After", "1");
    if (why == SessionPool::Refusal::kQueueFull) {
      send_error(res, 429,
                 "the server is busy: all " + std::to_string(pool_.size()) +
                     " sessions are generating and " +
                     std::to_string(pool_.queue_limit()) +
                     " requests are waiting (--sessions, --queue); retry "
                     "later",
                 "server_busy", "", "queue_full");
    } else {
      send_error(res, 503,
                 "no session became free within " +
                     std::to_string(o_.queue_timeout_s) +
                     " s (--queue-timeout); retry later",
                 "server_busy", "", "queue_timeout");
    }
    return;
  }
  const bool chat = ep == Endpoint::kChat;
  const std::string id =
      std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id_++);
  const long long created = (long long)std::time(nullptr);
  const int n_ctx = o_.config.n_ctx;
  json head = {{"id", id},
               {"object", chat ? "chat.completion" : "text_completion"},
               {"created", created},
               {"model", limits_.model_id}};

  if (!r.stream) {
    Completion c;
    try {
      c = run_completion(lease->session(), r, tok_, n_ctx, nullptr);
    } catch (const Error& e) {
      send_error(res, 500, std::string("the engine refused: ") + e.what(),
                 "server_error");
      return;
    }
    lease.reset();
    t_log.generated = c.tokens.size();
    t_log.finish = lockstep_finish(c.finish);
    t_log.prefill_ms = c.prefill_ms;
    json choice = {{"index", 0},
                   {"finish_reason", openai_finish(c.finish)},
                   {"logprobs", nullptr}};
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      if (r.top_logprobs >= 0) {
        choice["logprobs"] = chat_logprobs(c.tokens, c.logprobs, 0);
      }
    } else {
      choice["text"] = c.text;
      if (r.top_logprobs >= 0) {
        choice["logprobs"] =
            legacy_logprobs(c.tokens, c.logprobs, 0, r.prompt_text.size());
      }
    }
    json j = head;
    j["choices"] = json::array({choice});
    j["usage"] = {{"prompt_tokens", r.prompt_tokens.size()},
                  {"completion_tokens", c.tokens.size()},
                  {"total_tokens", r.prompt_tokens.size() + c.tokens.size()}};
    j["lockstep"] = lockstep_summary(r, c, true);
    res.set_content(dump(j), "application/json");
    return;
  }

  // A stream: one server-sent event per step, then the summary and
  // [DONE]. The lease lives in the provider; whatever ends the response
  // (done, a write that fails because the client has gone, the server
  // stopping) destroys the provider and frees the session.
  head["object"] = chat ? "chat.completion.chunk" : "text_completion";
  std::shared_ptr<SessionPool::Lease> held(std::move(lease));
  auto request = std::make_shared<CompletionRequest>(std::move(r));
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [this, held, request,
                                                         head, chat, n_ctx](
                                                            size_t,
                                                            httplib::DataSink&
                                                                sink) {
    const CompletionRequest& rq = *request;
    const auto send = [&](const json& j) {
      const std::string event = "data: " + dump(j) + "\n\n";
      return sink.is_writable() && sink.write(event.data(), event.size());
    };
    const auto chunk = [&](json choice) {
      choice["index"] = 0;
      json j = head;
      j["choices"] = json::array({choice});
      return j;
    };
    if (chat &&
        !send(chunk({{"delta", {{"role", "assistant"}, {"content", ""}}},
                     {"logprobs", nullptr},
                     {"finish_reason", nullptr}}))) {
      t_log.finish = lockstep_finish(Finish::kCancelled);
      return false;
    }
    size_t offset = rq.prompt_text.size();
    Completion c;
    try {
      c = run_completion(
          held->session(), rq, tok_, n_ctx, [&](const StepEvent& ev) {
            json choice = {{"finish_reason", nullptr}, {"logprobs", nullptr}};
            std::vector<int32_t> one = {ev.token};
            std::vector<TokenLogprobs> lp;
            if (ev.logprobs) lp.push_back(*ev.logprobs);
            if (chat) {
              choice["delta"] = {{"content", ev.text}};
              if (ev.logprobs) choice["logprobs"] = chat_logprobs(one, lp, 0);
            } else {
              choice["text"] = ev.text;
              if (ev.logprobs) {
                choice["logprobs"] = legacy_logprobs(one, lp, 0, offset);
              }
            }
            offset += tok_.token_bytes(ev.token).size();
            json j = chunk(choice);
            j["lockstep"] = {{"index", ev.index},
                             {"token", ev.token},
                             {"logits_sha256", ev.logits_sha256}};
            return send(j);
          });
    } catch (const Error& e) {
      send(error_body(std::string("the engine refused: ") + e.what(),
                      "server_error", "", ""));
      const std::string done = "data: [DONE]\n\n";
      sink.write(done.data(), done.size());
      sink.done();
      return true;
    }
    t_log.generated = c.tokens.size();
    t_log.finish = lockstep_finish(c.finish);
    t_log.prefill_ms = c.prefill_ms;
    if (c.finish == Finish::kCancelled) return false;
    json last = chunk(
        {{"finish_reason", openai_finish(c.finish)}, {"logprobs", nullptr}});
    if (chat) {
      last["choices"][0]["delta"] = json::object();
    } else {
      last["choices"][0]["text"] = "";
    }
    last["usage"] = {
        {"prompt_tokens", rq.prompt_tokens.size()},
        {"completion_tokens", c.tokens.size()},
        {"total_tokens", rq.prompt_tokens.size() + c.tokens.size()}};
    last["lockstep"] = lockstep_summary(rq, c, false);
    const std::string done = "data: [DONE]\n\n";
    if (!send(last) || !sink.write(done.data(), done.size())) {
      return false;
    }
    sink.done();
    return true;
  });
}

int Server::run() {
  // Enough workers for every session, every queued request and a few
  // more to answer refusals and /v1/models at once; further connections
  // wait in cpp-httplib's own queue for a worker.
  const size_t workers = size_t(pool_.size() + pool_.queue_limit() + 8);
  http_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  http_.set_payload_max_length(o_.max_body_bytes);
  http_.set_keep_alive_max_count(1000);

  http_.set_pre_routing_handler(
      [](const httplib::Request&, httplib::Response&) {
        t_log = RequestLog{};
        t_log.start = Clock::now();
        return httplib::Server::HandlerResponse::Unhandled;
      });
  http_.Post("/v1/completions",
             [this](const httplib::Request& req, httplib::Response& res) {
               completion(Endpoint::kCompletions, req, res);
             });
  http_.Post("/v1/chat/completions",
             [this](const httplib::Request& req, httplib::Response& res) {
               completion(Endpoint::kChat, req, res);
             });
  http_.Get(
      "/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(
            dump({{"object", "list"}, {"data", json::array({model_card()})}}),
            "application/json");
      });
  http_.Get("/v1/models/(.+)",
            [this](const httplib::Request& req, httplib::Response& res) {
              if (req.matches[1] != limits_.model_id) {
                send_error(res, 404,
                           "the model '" + std::string(req.matches[1]) +
                               "' is not served here; this server serves '" +
                               limits_.model_id + "'",
                           "invalid_request_error", "model", "model_not_found");
                return;
              }
              res.set_content(dump(model_card()), "application/json");
            });
  http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump({{"status", "ok"},
                          {"sessions", pool_.size()},
                          {"busy", pool_.busy()},
                          {"waiting", pool_.waiting()},
                          {"queue", pool_.queue_limit()}}),
                    "application/json");
  });
  // Errors cpp-httplib answers itself (no route, a body over the limit, a
  // malformed request line) get a JSON body too; the handlers' own error
  // bodies are kept.
  http_.set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        std::string message = "HTTP status " + std::to_string(res.status);
        if (res.status == 404) {
          message = "no route " + req.method + " " + req.path +
                    " (this server has POST /v1/completions, POST "
                    "/v1/chat/completions, GET /v1/models, GET /health)";
        } else if (res.status == 413) {
          message = "the body is over " + std::to_string(o_.max_body_bytes) +
                    " bytes (--max-body)";
        } else if (res.status == 400) {
          message = "malformed HTTP request";
        }
        res.set_content(
            dump(error_body(message, "invalid_request_error", "", "")),
            "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_.set_exception_handler([](const httplib::Request&,
                                 httplib::Response& res,
                                 std::exception_ptr ep) {
    std::string what = "unknown";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, "internal error: " + what, "server_error");
  });
  http_.set_logger([](const httplib::Request& req,
                      const httplib::Response& res) {
    const double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - t_log.start)
            .count();
    if (t_log.completion && t_log.prompt > 0) {
      std::fprintf(
          stderr,
          "lockstep serve: %s %s %d prompt=%zu generated=%zu "
          "finish=%s stream=%s queue_ms=%.1f prefill_ms=%.1f "
          "total_ms=%.1f\n",
          req.method.c_str(), req.path.c_str(), res.status, t_log.prompt,
          t_log.generated, *t_log.finish ? t_log.finish : "-",
          t_log.stream ? "yes" : "no", t_log.queue_ms, t_log.prefill_ms, ms);
    } else {
      std::fprintf(stderr, "lockstep serve: %s %s %d total_ms=%.1f\n",
                   req.method.c_str(), req.path.c_str(), res.status, ms);
    }
  });

  int port = o_.port;
  if (port == 0) {
    port = http_.bind_to_any_port(o_.host);
    if (port < 0) port = 0;
  } else if (!http_.bind_to_port(o_.host, port)) {
    port = 0;
  }
  if (port == 0) {
    throw Error("cannot listen on " + o_.host + ":" + std::to_string(o_.port) +
                " (the port is in use, or the host is not an address of "
                "this machine)");
  }
  std::fprintf(stderr,
               "lockstep serve: listening on http://%s:%d/v1 (model '%s', "
               "payload sha256 %s, backend %s, %d sessions, queue %d)\n",
               o_.host.c_str(), port, limits_.model_id.c_str(),
               o_.payload_sha256.c_str(), o_.backend.c_str(), pool_.size(),
               pool_.queue_limit());
  std::fflush(stderr);

  // SIGINT and SIGTERM (blocked in every thread) end the server: in-flight
  // requests finish, then run() returns 0.
  std::atomic<bool> over{false};
  std::thread waiter([this, &over] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    const timespec tick{0, 200 * 1000 * 1000};
    while (!over.load()) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig == SIGINT || sig == SIGTERM) {
        std::fprintf(stderr, "lockstep serve: %s, stopping\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM");
        http_.stop();
        return;
      }
    }
  });
  const bool ok = http_.listen_after_bind();
  over.store(true);
  waiter.join();
  return ok ? 0 : 1;
}

}  // namespace

int run_server(const ServeOptions& options, const RequestLimits& limits,
               SessionPool& pool, const Tokenizer& tok) {
  Server s(options, limits, pool, tok);
  return s.run();
}

}  // namespace lockstep::serve
