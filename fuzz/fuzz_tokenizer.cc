// libFuzzer: GPT-2's tokenizer (tokenizer/bpe.h) on arbitrary bytes.
// Round trip: decode(encode(s)) == s for every byte string, with and
// without the special <|endoftext|>; and a differential: the BPE of each
// pre-token equals a direct transcription of GPT-2's encoder.py
// (tests/reference_bpe.h). The ids are compared exactly. Also decodes the
// input read as ids (any id outside the vocabulary must be an Error).
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "lockstep/error.h"
#include "tests/reference_bpe.h"
#include "tokenizer/bpe.h"

namespace {

// GPT-2's tokenizer files: data/gpt2 of the source tree this was built
// from, or $LOCKSTEP_GPT2_DATA (a copied binary run from another checkout:
// scripts/fuzz-device.sh).
std::string DataDir() {
  const char* d = std::getenv("LOCKSTEP_GPT2_DATA");
  return d != nullptr && *d != '\0'
             ? std::string(d)
             : std::string(LOCKSTEP_SOURCE_DIR "/data/gpt2");
}

const std::string kData = DataDir();

const lockstep::Tokenizer& Tok() {
  static const lockstep::Tokenizer tok = lockstep::Tokenizer::load(kData);
  return tok;
}

lockstep::test::ReferenceBpe& Ref() {
  static lockstep::test::ReferenceBpe ref(kData);
  return ref;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const lockstep::Tokenizer& tok = Tok();
  for (bool special : {false, true}) {
    const std::vector<int32_t> ids = tok.encode(text, special);
    if (tok.decode(ids) != text) {
      lockstep::fuzz::Fail("decode(encode(s)) != s");
    }
  }
  // The differential, pre-token by pre-token (the reference is slow on
  // long pre-tokens: its merge loop is quadratic).
  std::vector<int32_t> want;
  Ref().ClearCache();
  for (std::string_view p : tok.pretokenize(text)) {
    const std::vector<int32_t> part = Ref().Encode(p);
    want.insert(want.end(), part.begin(), part.end());
  }
  if (tok.encode(text) != want) {
    lockstep::fuzz::Fail("encode differs from the encoder.py transcription");
  }
  // The bytes as little-endian ids.
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 4 <= size; i += 4) {
    int32_t v;
    std::memcpy(&v, data + i, 4);
    ids.push_back(v % 60000);
  }
  try {
    tok.decode(ids);
  } catch (const lockstep::Error&) {
  }
  return 0;
}
