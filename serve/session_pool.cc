#include "serve/session_pool.h"

#include <algorithm>

namespace lockstep::serve {

SessionPool::SessionPool(std::vector<std::unique_ptr<cli::Gpt2Runner>> sessions,
                         int queue_limit)
    : all_(std::move(sessions)), queue_limit_(queue_limit) {
  for (auto& s : all_) free_.push_back(s.get());
}

std::unique_ptr<SessionPool::Lease> SessionPool::acquire(
    std::chrono::milliseconds timeout, Refusal* why, double* waited_ms) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  *why = Refusal::kNone;
  *waited_ms = 0;
  std::unique_lock<std::mutex> lock(mu_);
  // A free session goes to the front of the queue: with nobody waiting,
  // to this request.
  if (queue_.empty() && !free_.empty()) {
    cli::Gpt2Runner* s = free_.back();
    free_.pop_back();
    return std::make_unique<Lease>(this, s);
  }
  if (int(queue_.size()) >= queue_limit_) {
    *why = Refusal::kQueueFull;
    return nullptr;
  }
  Waiter w;
  queue_.push_back(&w);
  const bool given =
      w.cv.wait_for(lock, timeout, [&] { return w.given != nullptr; });
  *waited_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!given) {
    queue_.remove(&w);
    *why = Refusal::kTimeout;
    return nullptr;
  }
  return std::make_unique<Lease>(this, w.given);
}

void SessionPool::give_back(cli::Gpt2Runner* s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty()) {
    // Handed straight to the longest waiting request.
    Waiter* w = queue_.front();
    queue_.pop_front();
    w->given = s;
    w->cv.notify_one();
    return;
  }
  free_.push_back(s);
}

int SessionPool::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(all_.size() - free_.size());
}

int SessionPool::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(queue_.size());
}

}  // namespace lockstep::serve
