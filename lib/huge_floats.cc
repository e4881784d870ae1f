// See lockstep/huge_floats.h.
#include "lockstep/huge_floats.h"

#include <cstdlib>
#include <cstring>
#include <new>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace lockstep {
namespace {
constexpr size_t kHuge = size_t(2) << 20;
}  // namespace

size_t HugeFloats::bytes_for(size_t n) {
  return (n * sizeof(float) + kHuge - 1) / kHuge * kHuge;
}

size_t HugeFloats::bytes() const { return bytes_for(n_); }

void HugeFloats::Free::operator()(float* p) const { std::free(p); }

HugeFloats::HugeFloats(size_t n, bool huge) : n_(n) {
  const size_t bytes = bytes_for(n);
  if (bytes == 0) return;
  p_.reset(static_cast<float*>(std::aligned_alloc(kHuge, bytes)));
  if (!p_) throw std::bad_alloc();
#ifdef __linux__
  if (huge) madvise(p_.get(), bytes, MADV_HUGEPAGE);  // advisory
#endif
  (void)huge;
  // All-zero bytes are +0.0f; touching every page now also takes the page
  // faults here rather than inside the first step.
  std::memset(p_.get(), 0, bytes);
}

}  // namespace lockstep
