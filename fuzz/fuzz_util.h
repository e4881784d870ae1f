// Shared by the libFuzzer harnesses (docs/fuzzing.md). A harness feeds its
// bytes to a parser that takes a byte span; lockstep::Error is the
// expected answer to bad input; anything else that escapes (another
// exception type, a signal, a sanitizer report) is a finding and aborts.
#ifndef LOCKSTEP_FUZZ_FUZZ_UTIL_H_
#define LOCKSTEP_FUZZ_FUZZ_UTIL_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace lockstep::fuzz {

// The input copied into a fresh vector: its data is suitably aligned for
// the binary32 reads of the packed reader (libFuzzer's buffer usually is,
// but the harness should not depend on it).
inline std::vector<uint8_t> Copy(const uint8_t* data, size_t size) {
  return std::vector<uint8_t>(data, data + size);
}

// A finding: print and abort (libFuzzer saves the input).
[[noreturn]] inline void Fail(const char* what) {
  std::fprintf(stderr, "lockstep fuzz finding: %s\n", what);
  std::abort();
}

// Reads the input front to back; past the end it yields zeros.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  uint8_t u8() { return n_ ? (--n_, *p_++) : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(u8()) << (8 * i);
    return v;
  }
  uint64_t u64() { return uint64_t(u32()) | uint64_t(u32()) << 32; }
  size_t left() const { return n_; }

 private:
  const uint8_t* p_;
  size_t n_;
};

}  // namespace lockstep::fuzz

#endif  // LOCKSTEP_FUZZ_FUZZ_UTIL_H_
