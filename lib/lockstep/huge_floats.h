// A float array on 2 MB pages: 2 MB aligned and, on Linux, given to
// transparent huge pages (madvise; advisory, so a kernel without them just
// uses 4 KB pages). For what is streamed or strided through every token:
// the CPU backend's repacked weights (4 KB pages cost a TLB miss every
// 4 KB of a 498 MB stream) and the KV cache, whose rows are 72 KB apart
// for 124M (attention at position 1,000 touches 1,000 pages per layer on
// 4 KB pages, 36 on 2 MB pages).
#ifndef LOCKSTEP_LIB_LOCKSTEP_HUGE_FLOATS_H_
#define LOCKSTEP_LIB_LOCKSTEP_HUGE_FLOATS_H_

#include <cstddef>
#include <memory>

namespace lockstep {

class HugeFloats {
 public:
  HugeFloats() = default;
  // n floats, all +0.0; throws std::bad_alloc when memory is short.
  // huge = false keeps 4 KB pages (for benchmarks that compare the two).
  explicit HugeFloats(size_t n, bool huge = true);

  float* data() { return p_.get(); }
  const float* data() const { return p_.get(); }
  size_t size() const { return n_; }
  float& operator[](size_t i) { return p_[i]; }
  const float& operator[](size_t i) const { return p_[i]; }
  float* begin() { return data(); }
  float* end() { return data() + n_; }
  // Bytes allocated: n floats rounded up to whole 2 MB pages.
  size_t bytes() const;
  static size_t bytes_for(size_t n);

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> p_;
  size_t n_ = 0;
};

}  // namespace lockstep

#endif  // LOCKSTEP_LIB_LOCKSTEP_HUGE_FLOATS_H_
