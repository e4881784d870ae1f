// libFuzzer: the packed GPT-2 reader (parse_gpt2_packed,
// docs/gpt2-format.md "Checks") on arbitrary bytes. The payload digest is
// checked only when the first byte is odd: a mutation almost never keeps a
// SHA-256 right, and with the check the harness would stop there.
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "fuzz/fuzz_util.h"
#include "lockstep/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes = lockstep::fuzz::Copy(data, size);
  const bool verify = size > 0 && (data[0] & 1) != 0;
  try {
    const lockstep::Gpt2PackedView v =
        lockstep::parse_gpt2_packed(bytes, "fuzz", verify);
    if (v.payload_offset % 64 != 0 ||
        v.payload_offset + v.words * 4 != bytes.size() ||
        v.words != ls_gpt2_param_count(&v.config)) {
      lockstep::fuzz::Fail("an accepted file's payload does not add up");
    }
    // Every weight finite, as promised.
    const float* w =
        reinterpret_cast<const float*>(bytes.data() + v.payload_offset);
    if (!ls_gpt2_weights_finite(w, v.words)) {
      lockstep::fuzz::Fail("an accepted file has a non-finite weight");
    }
  } catch (const lockstep::Error&) {
  }
  return 0;
}
