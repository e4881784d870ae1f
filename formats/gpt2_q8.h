// The grouped int8 GPT-2 file (docs/int8.md): the lockstep container
// (docs/checkpoint-format.md, version 2) with "dtype": "q8g64" and
// "layout": "q8panel64", holding the bytes of core/ls_gpt2_q8.h in place
// (int8 matrices in §7.6 panels with their bfloat16 scales beside them,
// binary32 LayerNorm parameters and biases), covered by the payload digest.
// Quantizing (docs/arithmetic.md §7.2) happens here, once, at conversion.
#ifndef LOCKSTEP_FORMATS_GPT2_Q8_H_
#define LOCKSTEP_FORMATS_GPT2_Q8_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/gpt2_checkpoint.h"
#include "ls_gpt2.h"

namespace lockstep {

inline constexpr char kGpt2Q8Dtype[] = "q8g64";
inline constexpr char kGpt2Q8Layout[] = "q8panel64";

// One entry of the int8 payload: the binary32 table's name and shape
// (gpt2_tensor_table), its dtype ("q8g64" or "f32") and where its bytes
// are (offset a multiple of 64; `bytes` without the padding).
struct Gpt2Q8Tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};
// The table of a config ls_gpt2_q8_config_valid accepts (else throws
// lockstep::Error saying why: n_embd must be a multiple of 64).
std::vector<Gpt2Q8Tensor> gpt2_q8_tensor_table(const ls_gpt2_config& c);

// Quantizes binary32 weights in the plain layout (ls_gpt2_param_count(c)
// words, checked finite) into the int8 payload (ls_gpt2_q8_bytes(c)
// bytes). Deterministic: the same weights give the same bytes.
std::vector<uint8_t> quantize_gpt2_q8(const ls_gpt2_config& c,
                                      const float* plain);

// True when `path` is a lockstep checkpoint whose header says dtype
// "q8g64" (reads the fixed part and the header only; false for anything
// else, folders included; never throws for a readable file).
bool is_gpt2_q8_file(const std::string& path);

// Loads an int8 file: mapped, the container and header checked
// (docs/int8.md "Checks"), the payload digest verified unless
// verify_digest is false, every tensor valid (ls_gpt2_q8_weights_valid,
// the failing tensor named). quant is "int8"; q8_data() points at the
// 64-byte-aligned payload in the mapping; plain_sha256 is the binary32
// digest of the weights it was quantized from. Throws lockstep::Error.
Gpt2Weights load_gpt2_q8(const std::string& path, bool verify_digest = true);

// What the commands that run a model load: an int8 file through
// load_gpt2_q8, anything else through load_gpt2.
Gpt2Weights load_gpt2_any(const std::string& path, bool verify_digest = true);

// Writes binary32 plain weights quantized, atomically (PATH.tmp.<pid>,
// synced, renamed). source_plain_sha256: the binary32 plain-layout digest
// of these weights (recorded as "plain_sha256"); empty: computed here.
void write_gpt2_q8(const std::string& out, const ls_gpt2_config& c,
                   const float* plain, const nlohmann::json& meta = {},
                   const std::string& source_plain_sha256 = "",
                   const Gpt2Progress& progress = {});

// lockstep convert --quant int8: any binary32 source load_gpt2 reads (HF
// folder or its model.safetensors, packed file in either layout) to an
// int8 file. The source is validated as load_gpt2 does (digest included);
// an int8 source is refused (re-quantizing is not a conversion).
void convert_gpt2_q8(const std::string& in, const std::string& out,
                     const Gpt2Progress& progress = {});

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_GPT2_Q8_H_
