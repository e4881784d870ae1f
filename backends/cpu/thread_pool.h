// A fixed team of compute threads for one backend session: the calling
// thread is member 0, the others are std::threads created once with the
// pool and kept until it is destroyed. run() hands every member the same
// job and returns when all have finished it; inside a job, barrier() is a
// barrier over the whole team that spins briefly, then sleeps. No allocation
// after construction.
#ifndef LOCKSTEP_BACKENDS_CPU_THREAD_POOL_H_
#define LOCKSTEP_BACKENDS_CPU_THREAD_POOL_H_

#include <atomic>
#include <thread>
#include <vector>

namespace lockstep::cpu {

class ThreadPool {
 public:
  // A job: fn(ctx, member, team size), called once on every member.
  using Fn = void (*)(void* ctx, int member, int members);

  explicit ThreadPool(int members);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return members_; }
  // Runs fn on every member (member 0 on the calling thread) and waits.
  void run(Fn fn, void* ctx);
  // Convenience: f(member, members) for any callable, without allocating.
  template <class F>
  void run(F& f) {
    run([](void* c, int m, int n) { (*static_cast<F*>(c))(m, n); }, &f);
  }
  // Every member of the running job waits here until all have arrived.
  void barrier();

 private:
  void worker(int member);

  int members_;
  int spin_;      // pause rounds before a wait yields and then sleeps
  int job_spin_;  // the same for a worker waiting for the next job
  std::vector<std::thread> threads_;
  // Job hand-off: `generation` counts jobs; workers spin on it for a while
  // and then sleep in atomic::wait.
  std::atomic<unsigned> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  Fn fn_ = nullptr;
  void* ctx_ = nullptr;
  // Sense-reversing barrier.
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<unsigned> phase_{0};
};

}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_THREAD_POOL_H_
