// The server's fixed pool of GPT-2 sessions (docs/serve.md "Concurrency"):
// K sessions, each with its own KV cache and compute threads, over one
// copy of the weights; a request takes one for its whole generation. When
// all are busy a request waits in a bounded first-come-first-served queue;
// past the bound it is refused at once (HTTP 429), and one that waits
// longer than the timeout is refused then (HTTP 503). A session's answer
// does not depend on which session runs it or on what ran there before:
// each request starts from position 0 (reset()).
#ifndef LOCKSTEP_SERVE_SESSION_POOL_H_
#define LOCKSTEP_SERVE_SESSION_POOL_H_

#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "cli/gpt2_runner.h"

namespace lockstep::serve {

class SessionPool {
 public:
  // Takes the sessions; queue_limit requests may wait (0: none).
  SessionPool(std::vector<std::unique_ptr<cli::Gpt2Runner>> sessions,
              int queue_limit);

  // A session held by one request; given back when destroyed.
  class Lease {
   public:
    Lease(SessionPool* pool, cli::Gpt2Runner* s) : pool_(pool), s_(s) {}
    ~Lease() { pool_->give_back(s_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    cli::Gpt2Runner& session() { return *s_; }

   private:
    SessionPool* pool_;
    cli::Gpt2Runner* s_;
  };

  enum class Refusal { kNone, kQueueFull, kTimeout };
  // A free session, after waiting in the queue if need be (up to timeout);
  // nullptr and the reason when refused. waited: the time spent queued.
  std::unique_ptr<Lease> acquire(std::chrono::milliseconds timeout,
                                 Refusal* why, double* waited_ms);

  int size() const { return int(all_.size()); }
  int queue_limit() const { return queue_limit_; }
  // Sessions in use and requests waiting, for /health.
  int busy() const;
  int waiting() const;

 private:
  struct Waiter {
    cli::Gpt2Runner* given = nullptr;
    std::condition_variable cv;
  };
  void give_back(cli::Gpt2Runner* s);

  std::vector<std::unique_ptr<cli::Gpt2Runner>> all_;
  int queue_limit_;
  mutable std::mutex mu_;
  std::vector<cli::Gpt2Runner*> free_;
  std::list<Waiter*> queue_;  // front: the longest waiting
};

}  // namespace lockstep::serve

#endif  // LOCKSTEP_SERVE_SESSION_POOL_H_
