// libFuzzer: the Hugging Face config.json reader (parse_hf_gpt2_config).
// What it accepts is a usable GPT-2 config.
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "fuzz/fuzz_util.h"
#include "lockstep/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes = lockstep::fuzz::Copy(data, size);
  try {
    const ls_gpt2_config c = lockstep::parse_hf_gpt2_config(bytes, "fuzz");
    if (!ls_gpt2_config_valid(&c)) {
      lockstep::fuzz::Fail("an accepted config is not valid");
    }
  } catch (const lockstep::Error&) {
  }
  return 0;
}
