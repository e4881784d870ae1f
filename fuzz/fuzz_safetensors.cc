// libFuzzer: the safetensors reader (formats/safetensors.h) on arbitrary
// bytes. Every tensor it accepts must lie inside the data section: its
// bytes are read (widened where the dtype allows) so that ASan checks it.
#include <algorithm>
#include <string>
#include <vector>

#include "formats/safetensors.h"
#include "fuzz/fuzz_util.h"
#include "lockstep/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes = lockstep::fuzz::Copy(data, size);
  try {
    const lockstep::SafetensorsFile f =
        lockstep::SafetensorsFile::parse(bytes, "fuzz");
    uint64_t covered = 0;
    for (const auto& t : f.tensors()) {
      if (t.bytes() != t.elements() * lockstep::st_dtype_bytes(t.dtype)) {
        lockstep::fuzz::Fail("a tensor's byte range does not match its shape");
      }
      if (f.find(t.name) != &t) lockstep::fuzz::Fail("find() disagrees");
      covered += t.bytes();
      volatile uint8_t sink = 0;
      for (uint64_t i = 0; i < t.bytes(); ++i) sink = sink ^ t.data[i];
      (void)sink;
      if (t.dtype == lockstep::StDtype::kF32 ||
          t.dtype == lockstep::StDtype::kF16 ||
          t.dtype == lockstep::StDtype::kBF16) {
        const size_t n = size_t(std::min<uint64_t>(t.elements(), 64));
        std::vector<float> out(n);
        lockstep::widen_to_f32(t.dtype, t.data, n, out.data());
      }
    }
    if (covered != f.data_bytes()) {
      lockstep::fuzz::Fail("the tensors do not cover the data section");
    }
  } catch (const lockstep::Error&) {
  }
  return 0;
}
