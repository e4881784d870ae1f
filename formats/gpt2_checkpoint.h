// GPT-2 weights for the binary32 core (core/ls_gpt2.h): Hugging Face
// checkpoints (config.json + model.safetensors) and the packed lockstep
// checkpoint (docs/gpt2-format.md), which is the container of
// docs/checkpoint-format.md with "model": "gpt2" and "dtype": "f32".
#ifndef LOCKSTEP_FORMATS_GPT2_CHECKPOINT_H_
#define LOCKSTEP_FORMATS_GPT2_CHECKPOINT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "formats/checkpoint.h"
#include "formats/mapped_file.h"
#include "ls_gpt2.h"
#include "ls_gpt2_layout.h"

namespace lockstep {

// The released GPT-2 sizes.
inline constexpr ls_gpt2_config kGpt2_124M = {50257, 1024, 768, 12, 12};
inline constexpr ls_gpt2_config kGpt2_355M = {50257, 1024, 1024, 16, 24};
inline constexpr ls_gpt2_config kGpt2_774M = {50257, 1024, 1280, 20, 36};
inline constexpr ls_gpt2_config kGpt2_1558M = {50257, 1024, 1600, 25, 48};

// The weights of one GPT-2, packed in the order of core/ls_gpt2.h. Either a
// read-only mapping of a packed file (data() points at its 64-byte-aligned
// payload, no copy) or one owned vector (an HF folder packed in memory).
// Move-only.
struct Gpt2Weights {
  ls_gpt2_config config{};
  std::string source;  // the path it was loaded from
  std::string format;  // "packed" or "hf"
  // Hex SHA-256 of the payload bytes as stored, in `layout` (the digest
  // the file records at offset 24; for an HF folder, the value a plain
  // packed file would record).
  std::string payload_sha256;
  // Hex SHA-256 of the same weights in the plain layout: equal to
  // payload_sha256 for plain weights; for a panel64 file the header's
  // "plain_sha256" (gpt2_plain_sha256 recomputes it). Matches the
  // payload_sha256 of the plain file of the same model.
  std::string plain_sha256;
  nlohmann::json meta;  // the packed file's "meta" (HF: provenance)
  // The order of the words at data() (core/ls_gpt2_layout.h).
  ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN;
  // "f32", or "int8" for a grouped int8 file (formats/gpt2_q8.h,
  // docs/int8.md, loaded by load_gpt2_q8): its payload is q8_data() /
  // q8_bytes() in the mapping, and data() is null and words() 0, so no
  // binary32 consumer can take its bytes for floats.
  std::string quant = "f32";
  const uint8_t* q8_data() const {
    return q8_map_ ? q8_map_->data() + q8_offset_ : nullptr;
  }
  size_t q8_bytes() const { return q8_bytes_; }

  const float* data() const;
  size_t words() const { return words_; }
  // True when data() points into a mapping of a packed file.
  bool mapped() const { return map_ != nullptr; }

  Gpt2Weights() = default;
  Gpt2Weights(Gpt2Weights&&) = default;
  Gpt2Weights& operator=(Gpt2Weights&&) = default;
  Gpt2Weights(const Gpt2Weights&) = delete;
  Gpt2Weights& operator=(const Gpt2Weights&) = delete;

 private:
  friend struct Gpt2WeightsBuilder;  // formats/gpt2_checkpoint.cc
  friend struct Gpt2Q8Builder;       // formats/gpt2_q8.cc
  std::unique_ptr<MappedFile> map_;
  size_t payload_offset_ = 0;
  size_t words_ = 0;
  std::vector<float> owned_;
  std::unique_ptr<MappedFile> q8_map_;  // an int8 file
  size_t q8_offset_ = 0, q8_bytes_ = 0;
};

// The packed tensor table of a config: names ("wte", "wpe", "h0.ln_1.g",
// ..., "ln_f.b"), shapes and word offsets, the offsets taken from
// ls_gpt2_block_offsets / ls_gpt2_lnf_offset. Throws lockstep::Error for an
// invalid config.
std::vector<TensorInfo> gpt2_tensor_table(const ls_gpt2_config& c);

// The Hugging Face key (without "transformer.") of a packed tensor name:
// "wte" -> "wte.weight", "h3.attn.c_attn.w" -> "h.3.attn.c_attn.weight",
// "h3.ln_1.b" -> "h.3.ln_1.bias".
std::string gpt2_hf_key(const std::string& packed_name);

// Reads an HF GPT-2 config.json: n_embd, n_head, n_layer, vocab_size,
// n_positions (or n_ctx); layer_norm_epsilon must be 1e-5 and
// activation_function "gelu_new" (absent: GPT2Config's defaults, which are
// those). Throws lockstep::Error naming the file and the key.
ls_gpt2_config read_hf_gpt2_config(const std::string& config_json_path);

// read_hf_gpt2_config on the bytes of a config.json held in memory, named
// `name` in messages.
ls_gpt2_config parse_hf_gpt2_config(std::span<const uint8_t> config_json,
                                    const std::string& name);

// "plain" or "panel64" (the header's "layout" value); and back: throws
// lockstep::Error naming the unknown name.
const char* gpt2_layout_name(ls_gpt2_layout layout);
ls_gpt2_layout gpt2_layout_from_name(const std::string& name);

// Loads GPT-2 weights from
//  - a packed lockstep file in either layout (docs/gpt2-format.md "Weight
//    layouts"): memory-mapped, validated (docs/gpt2-format.md
//    "Checks"), the payload's SHA-256 verified unless verify_digest is
//    false (for benchmarks: the digest is one pass over the payload), every
//    weight checked finite; data() points into the mapping and `layout` is
//    the file's (a panel64 file is read in place, never permuted here);
//  - an HF folder (config.json + model.safetensors), or the path of its
//    model.safetensors: packed into one vector, F16/BF16 widened exactly,
//    every weight checked finite; payload_sha256 is computed (the value a
//    converted file would store).
// Every failure throws lockstep::Error naming the file and the problem.
Gpt2Weights load_gpt2(const std::string& path, bool verify_digest = true);

// A packed GPT-2 file validated in memory: every check load_gpt2 makes on
// a packed file (the container through parse_checkpoint_container, then
// docs/gpt2-format.md "Checks"), without the mapping. load_gpt2 maps the
// file and calls this; the fuzz harnesses call it on their bytes, which
// must be 4-byte aligned. Throws lockstep::Error "checkpoint '<name>': ...".
struct Gpt2PackedView {
  ls_gpt2_config config{};
  ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN;
  size_t payload_offset = 0;  // bytes from the start, a multiple of 64
  size_t words = 0;
  std::string payload_sha256;  // hex, as recorded (Gpt2Weights's fields)
  std::string plain_sha256;
  nlohmann::json meta;
};
Gpt2PackedView parse_gpt2_packed(std::span<const uint8_t> file,
                                 const std::string& name,
                                 bool verify_digest = true);

// Called with (words done, words in total) as work proceeds; may be empty.
using Gpt2Progress = std::function<void(uint64_t done, uint64_t total)>;

// Converts an HF folder to a packed file at `out` in `layout`, streaming:
// the payload is widened, permuted (panel64: one matrix at a time) and
// hashed chunk by chunk into OUT.tmp.<pid>, the digests written last, the
// file synced and renamed over OUT. Same checks as load_gpt2 of the folder;
// on any error no file is left behind.
void convert_hf_to_packed(const std::string& hf_dir, const std::string& out,
                          const Gpt2Progress& progress = {},
                          ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN);

// Converts any GPT-2 source load_gpt2 reads (HF folder or safetensors file,
// packed file in either layout) to a packed file at `out` in `layout`:
// streaming from an HF source as convert_hf_to_packed; a packed source is
// mapped and validated (digest included) first, then permuted on the way
// out. When both layouts' digests are known (a panel64 source written as
// plain, or the reverse), the output's are checked against them. Atomic.
void convert_gpt2(const std::string& in, const std::string& out,
                  ls_gpt2_layout layout, const Gpt2Progress& progress = {});

// Writes packed weights held in memory (words: ls_gpt2_param_count(c)
// floats in the plain layout of core/ls_gpt2.h) as a packed file in
// `layout`, streaming and atomically. Throws for an invalid config, a wrong
// size or a non-finite weight.
void write_gpt2_packed(const std::string& out, const ls_gpt2_config& c,
                       const float* words, size_t n_words,
                       const nlohmann::json& meta = nlohmann::json::object(),
                       ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN);

// The hex SHA-256 of w's weights in the plain layout, computed (one pass;
// panel64 weights are un-permuted a matrix at a time, never as a whole).
std::string gpt2_plain_sha256(const Gpt2Weights& w);

// Plain word `i` of tensor `t` (an entry of gpt2_tensor_table(c)) is stored
// at word gpt2_panel64_index(c, t, i) of that tensor in the panel64 layout
// (i itself for tensors the layout leaves alone); and the inverse.
uint64_t gpt2_panel64_index(const ls_gpt2_config& c, const TensorInfo& t,
                            uint64_t i);
uint64_t gpt2_panel64_plain_index(const ls_gpt2_config& c, const TensorInfo& t,
                                  uint64_t stored);

// Writes DIR/config.json and DIR/model.safetensors for a GPT-2 of config c
// with seeded random weights (docs/gpt2-format.md "Random checkpoints"):
// dtype "F32", "F16" or "BF16"; keys "transformer.wte.weight", ... when
// prefixed_keys, else "wte.weight", .... Tensor values depend only on seed
// and the key without prefix, so both key styles hold the same weights.
// Streams (one small buffer), atomic per file; creates DIR if needed.
void write_random_gpt2_safetensors(const std::string& dir,
                                   const ls_gpt2_config& c, uint64_t seed,
                                   const std::string& dtype,
                                   bool prefixed_keys);

// Seeded random packed weights, in memory: the same values
// write_random_gpt2_safetensors(dir, c, seed, "F32", ...) writes, so a
// test or benchmark can skip the file. `dst` holds ls_gpt2_param_count(c)
// floats. Throws for an invalid config.
void random_gpt2_weights(const ls_gpt2_config& c, uint64_t seed, float* dst);
std::vector<float> random_gpt2_weights(const ls_gpt2_config& c, uint64_t seed);

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_GPT2_CHECKPOINT_H_
