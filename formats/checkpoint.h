// The lockstep checkpoint container (docs/checkpoint-format.md): magic,
// version, JSON header, SHA-256 of the payload, 64-byte-aligned payload.
#ifndef LOCKSTEP_FORMATS_CHECKPOINT_H_
#define LOCKSTEP_FORMATS_CHECKPOINT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "formats/atomic_file.h"
#include "formats/sha256.h"

namespace lockstep {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // in words from the payload's start
  // The product of the dimensions; throws lockstep::Error when it does not
  // fit in 64 bits (the readers refuse such shapes where they read them).
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

// The container as read from its bytes, before any model's rules: the
// fixed part checked (magic, version, lengths against the size, 64-byte
// payload alignment), the header parsed (nesting bounded, bounded_json.h)
// with "model", "dtype", "config", "tensors" and "words" of the right JSON
// types, and the version's rules (version 2: "model" is "gpt2" and
// "layout", "plain_sha256" are strings; version 1 has neither). The
// payload's digest is not checked here (check_payload_digest).
struct CheckpointContainer {
  uint32_t version = 0;
  uint64_t header_bytes = 0;    // the JSON text, padding included
  uint64_t payload_offset = 0;  // 56 + header_bytes, a multiple of 64
  uint64_t payload_bytes = 0;
  Sha256 payload_sha256{};  // as recorded at offset 24
  nlohmann::json header;
  std::string layout;        // version 2's "layout", else empty
  std::string plain_sha256;  // version 2's "plain_sha256", else empty
};

// Every failure throws lockstep::Error "checkpoint '<name>': <problem>"
// (docs/checkpoint-format.md "Checks"). The one container parser: the
// tiny models' read_checkpoint and the packed GPT-2 reader both use it.
CheckpointContainer parse_checkpoint_container(std::span<const uint8_t> file,
                                               const std::string& name);

// Throws unless the payload's SHA-256 is the one the container records.
void check_payload_digest(const CheckpointContainer& c,
                          std::span<const uint8_t> file,
                          const std::string& name);

// Reads and validates a whole checkpoint held in memory (any model): the
// container, the dtype, "words" against the payload, the tensor table
// (contiguous, covering the payload, no product of a shape overflowing) and
// the payload digest. Throws lockstep::Error naming `name` and the problem.
Checkpoint parse_checkpoint(std::span<const uint8_t> file,
                            const std::string& name);

// read_checkpoint: the file at `path` through parse_checkpoint.
Checkpoint read_checkpoint(const std::string& path);

// The "model" field of a checkpoint's header ("tiny", "gpt2"), reading only
// the fixed part and the JSON header (not the payload), checked as
// parse_checkpoint_container checks them. Throws lockstep::Error for
// anything that is not a lockstep checkpoint.
std::string checkpoint_model_kind(const std::string& path);

// Serialises a checkpoint (payload_sha256 and file_sha256 are computed).
std::vector<uint8_t> encode_checkpoint(const Checkpoint& ckpt);

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_CHECKPOINT_H_
