#include "backends/cpu/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LOCKSTEP_PAUSE() _mm_pause()
#else
#define LOCKSTEP_PAUSE() ((void)0)
#endif

namespace lockstep::cpu {
namespace {

// Every wait spins this many rounds (about 100 us: longer than the
// imbalance between two members of one phase) before sleeping in
// atomic::wait (a futex on Linux). Sleeping matters when the machine is
// oversubscribed: a spinning member would burn the time slice its partner
// needs to arrive.
// (A pause is about 25 ns on the machine of docs/cpu-backend.md.) Workers
// waiting for the next job spin longer, about a millisecond: a generation
// loop calls step() again after a few microseconds of sampling.
constexpr int kSpinRounds = 4000;
constexpr int kJobSpinRounds = 40000;

// Waits until a.load() != old.
template <class T>
void await_change(const std::atomic<T>& a, T old, int rounds = kSpinRounds) {
  for (int i = 0; i < rounds; ++i) {
    if (a.load(std::memory_order_acquire) != old) return;
    LOCKSTEP_PAUSE();
  }
  while (a.load(std::memory_order_acquire) == old) {
    a.wait(old, std::memory_order_acquire);
  }
}

}  // namespace

ThreadPool::ThreadPool(int members) : members_(members < 1 ? 1 : members) {
  threads_.reserve(size_t(members_ - 1));
  for (int m = 1; m < members_; ++m) {
    threads_.emplace_back([this, m] { worker(m); });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::run(Fn fn, void* ctx) {
  if (members_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  pending_.store(members_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(ctx, 0, members_);
  for (int p = pending_.load(std::memory_order_acquire); p != 0;
       p = pending_.load(std::memory_order_acquire)) {
    await_change(pending_, p);
  }
}

void ThreadPool::worker(int member) {
  unsigned seen = 0;
  for (;;) {
    await_change(generation_, seen, kJobSpinRounds);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    fn_(ctx_, member, members_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    pending_.notify_all();
  }
}

void ThreadPool::barrier() {
  if (members_ == 1) return;
  const unsigned phase = phase_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == members_ - 1) {
    arrived_.store(0, std::memory_order_relaxed);
    phase_.store(phase + 1, std::memory_order_release);
    phase_.notify_all();
    return;
  }
  await_change(phase_, phase);
}

}  // namespace lockstep::cpu
