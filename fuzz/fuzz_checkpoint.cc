// libFuzzer: the checkpoint container (formats/checkpoint.h,
// docs/checkpoint-format.md) through parse_checkpoint, the reader of the
// tiny models. What it accepts must survive a round trip: encoded again,
// it parses to the same fields and the same payload.
#include <string>
#include <vector>

#include "formats/checkpoint.h"
#include "fuzz/fuzz_util.h"
#include "lockstep/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes = lockstep::fuzz::Copy(data, size);
  lockstep::Checkpoint c;
  try {
    c = lockstep::parse_checkpoint(bytes, "fuzz");
  } catch (const lockstep::Error&) {
    return 0;
  }
  // Accepted: the payload is the header's words, the tensors tile it.
  uint64_t next = 0;
  for (const auto& t : c.tensors) {
    if (t.offset != next) lockstep::fuzz::Fail("tensors not contiguous");
    next += t.words();
  }
  if (next != c.words) lockstep::fuzz::Fail("tensors do not cover the words");
  const std::vector<uint8_t> again = lockstep::encode_checkpoint(c);
  lockstep::Checkpoint d;
  try {
    d = lockstep::parse_checkpoint(again, "fuzz-again");
  } catch (const lockstep::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    lockstep::fuzz::Fail("a checkpoint it accepted does not round-trip");
  }
  if (d.model != c.model || d.dtype != c.dtype || d.config != c.config ||
      d.meta != c.meta || d.words != c.words || d.payload != c.payload ||
      d.layout != c.layout || d.plain_sha256 != c.plain_sha256 ||
      d.tensors.size() != c.tensors.size()) {
    lockstep::fuzz::Fail("the round trip changed a field");
  }
  return 0;
}
