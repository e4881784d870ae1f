#include "backends/cpu/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LOCKSTEP_PAUSE() _mm_pause()
#else
#define LOCKSTEP_PAUSE() ((void)0)
#endif

namespace lockstep::cpu {
namespace {

// Every wait spins up to `rounds` pauses (about 100 us for a barrier:
// longer than the imbalance between two members of one phase), then yields
// the processor a few times, then sleeps in atomic::wait (a futex on
// Linux). Sleeping matters when the machine is oversubscribed: a spinning
// member would burn the time slice its partner needs to arrive. With more
// members than hardware threads the spin is cut to a few rounds, since the
// member being waited for is then likely to be waiting for a processor.
// (A pause is about 25 ns on the machine of docs/cpu-backend.md.) Workers
// waiting for the next job spin longer, about a millisecond: a generation
// loop calls step() again after a few microseconds of sampling. The spin
// also adapts to the load (t_spin_budget below).
constexpr int kSpinRounds = 4000;
constexpr int kJobSpinRounds = 40000;
constexpr int kOversubscribedSpinRounds = 64;
constexpr int kYieldRounds = 8;

// This thread's spin budget, adapted to the machine: a wait that had to
// sleep halves it (down to kOversubscribedSpinRounds), one that ended while
// spinning doubles it (up to the caller's rounds). On a quiet machine it
// stays at the full spin; on one loaded by other work (a shared test
// machine) the members stop burning the time slices their partners need.
thread_local int t_spin_budget = kSpinRounds;

// Waits until a.load() != old.
template <class T>
void await_change(const std::atomic<T>& a, T old, int rounds) {
  const int spin = rounds < t_spin_budget ? rounds : t_spin_budget;
  for (int i = 0; i < spin; ++i) {
    if (a.load(std::memory_order_acquire) != old) {
      if (t_spin_budget < rounds) t_spin_budget *= 2;
      return;
    }
    LOCKSTEP_PAUSE();
  }
  if (t_spin_budget > kOversubscribedSpinRounds) t_spin_budget /= 2;
  for (int i = 0; i < kYieldRounds; ++i) {
    if (a.load(std::memory_order_acquire) != old) return;
    std::this_thread::yield();
  }
  while (a.load(std::memory_order_acquire) == old) {
    a.wait(old, std::memory_order_acquire);
  }
}

int hardware_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

}  // namespace

ThreadPool::ThreadPool(int members)
    : members_(members < 1 ? 1 : members),
      spin_(members_ > hardware_threads() ? kOversubscribedSpinRounds
                                          : kSpinRounds),
      job_spin_(members_ > hardware_threads() ? kOversubscribedSpinRounds
                                              : kJobSpinRounds) {
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
    await_change(pending_, p, spin_);
  }
}

void ThreadPool::worker(int member) {
  unsigned seen = 0;
  for (;;) {
    await_change(generation_, seen, job_spin_);
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
  await_change(phase_, phase, spin_);
}

}  // namespace lockstep::cpu
