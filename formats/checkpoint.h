// The lockstep checkpoint container (docs/checkpoint-format.md): magic,
// version, JSON header, SHA-256 of the payload, 64-byte-aligned payload.
#ifndef LOCKSTEP_FORMATS_CHECKPOINT_H_
#define LOCKSTEP_FORMATS_CHECKPOINT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "formats/sha256.h"

namespace lockstep {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // in words from the payload's start
  uint64_t words() const;
};

struct Checkpoint {
  std::string model;  // "tiny"
  std::string dtype;  // "f64" or "f32"
  nlohmann::json config;
  nlohmann::json meta;
  std::vector<TensorInfo> tensors;
  uint64_t words = 0;
  std::vector<uint8_t> payload;  // little-endian words
  // Version 2 only (GPT-2 weight layouts, docs/gpt2-format.md): the
  // header's "layout" and "plain_sha256"; empty in a version 1 file.
  std::string layout;
  std::string plain_sha256;
  Sha256 payload_sha256{};
  std::string file_sha256;  // hex digest of the whole file
};

inline constexpr char kCheckpointMagic[8] = {'L', 'O', 'C', 'K',
                                             'S', 'T', 'E', 'P'};
inline constexpr uint32_t kCheckpointVersion = 1;
// Version 2 is version 1 plus the header fields "layout" and "plain_sha256"
// (GPT-2 only): the payload's words are permuted, so a version-1 reader,
// which would take them for the plain order, must refuse the file.
inline constexpr uint32_t kCheckpointVersionLayout = 2;
inline constexpr size_t kCheckpointFixedBytes = 56;

// Reads and validates a checkpoint; every failure throws lockstep::Error
// naming the path and the problem (docs/checkpoint-format.md "Checks").
Checkpoint read_checkpoint(const std::string& path);

// The "model" field of a checkpoint's header ("tiny", "gpt2"), reading only
// the fixed part and the JSON header (not the payload). Throws
// lockstep::Error for anything that is not a lockstep checkpoint.
std::string checkpoint_model_kind(const std::string& path);

// Serialises a checkpoint (payload_sha256 and file_sha256 are computed).
std::vector<uint8_t> encode_checkpoint(const Checkpoint& ckpt);

// Writes atomically: PATH.tmp.<pid>, flushed, then renamed over PATH.
void write_file_atomic(const std::string& path,
                       const std::vector<uint8_t>& bytes);

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_CHECKPOINT_H_
