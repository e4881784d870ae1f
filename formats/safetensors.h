// Hugging Face safetensors: a validating, memory-mapped reader and a
// streaming, atomic writer (docs/gpt2-format.md "safetensors").
//
// File layout: u64 little-endian N, N bytes of UTF-8 JSON header (an object
// mapping tensor names to {"dtype", "shape", "data_offsets": [begin, end]},
// plus an optional "__metadata__" string-to-string map), then the data
// section. Offsets are relative to the data section; the tensors must cover
// it exactly, without gaps or overlaps.
#ifndef LOCKSTEP_FORMATS_SAFETENSORS_H_
#define LOCKSTEP_FORMATS_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/atomic_file.h"
#include "formats/mapped_file.h"

namespace lockstep {

// The safetensors element types of whole bytes. Only F32, F16 and BF16 can
// be widened to binary32; the others are parsed (so that buffers of any
// type can be skipped) but not converted.
enum class StDtype : uint8_t {
  kBool,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kF8E8M0,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
  kC64,
};

// "F32", "BF16", ...
const char* st_dtype_name(StDtype d);
// Bytes per element.
size_t st_dtype_bytes(StDtype d);
// Parses a safetensors dtype name; nullopt if unknown.
std::optional<StDtype> st_dtype_from_name(std::string_view name);

// Exact conversions between binary32 and the 16-bit formats. Widening is
// exact for every input (NaN payloads kept); narrowing rounds to nearest,
// ties to even, overflowing to infinity (IEEE 754 convertFormat).
float widen_f16(uint16_t h);
float widen_bf16(uint16_t h);
uint16_t narrow_f16(float f);
uint16_t narrow_bf16(float f);

// Widens n little-endian elements of dtype F32, F16 or BF16 at src (any
// alignment) to binary32 at dst. Throws lockstep::Error for other dtypes.
void widen_to_f32(StDtype dtype, const uint8_t* src, size_t n, float* dst);

struct SafetensorsTensor {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // byte range in the data section
  uint64_t end = 0;
  const uint8_t* data = nullptr;  // begin's byte in the mapping (unaligned)
  uint64_t elements() const;
  uint64_t bytes() const { return end - begin; }
};

class SafetensorsFile {
 public:
  // Maps and validates the file; every problem throws lockstep::Error
  // "safetensors '<path>': [tensor '<name>': ]<problem>".
  static SafetensorsFile open(const std::string& path);
  // Validates bytes held in memory, named `name` in messages (the same
  // checks; open() maps the file and calls this). The tensors' data
  // pointers point into `bytes`, which must outlive the result.
  static SafetensorsFile parse(std::span<const uint8_t> bytes,
                               const std::string& name);

  const std::string& path() const { return path_; }
  // The tensors in data-section order (ascending offsets).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // The tensor called `name`, or nullptr.
  const SafetensorsTensor* find(std::string_view name) const;
  // The "__metadata__" map (empty when absent).
  const std::map<std::string, std::string>& metadata() const {
    return metadata_;
  }
  uint64_t header_length() const { return header_length_; }  // N
  uint64_t data_offset() const { return 8 + header_length_; }
  uint64_t data_bytes() const { return size_ - data_offset(); }
  // The mapping (not open for a parse()d span).
  const MappedFile& file() const { return file_; }

 private:
  MappedFile file_;
  std::string path_;
  uint64_t size_ = 0;
  uint64_t header_length_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

// The largest header accepted, as in the reference implementation.
inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

struct SafetensorsSpec {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<uint64_t> shape;
};

// Streams a safetensors file: the header is written first (tensors in the
// given order, back to back from offset 0, header padded with spaces to a
// multiple of 8 bytes), then the data section through write_bytes /
// write_floats, in the same order. Atomic (formats/atomic_file.h): the
// bytes go to PATH.tmp.<pid>, which finish() syncs and renames over PATH;
// a writer destroyed without finish() removes it. A shape whose size
// overflows 64 bits throws before anything is written.
class SafetensorsWriter {
 public:
  SafetensorsWriter(const std::string& path,
                    std::vector<SafetensorsSpec> tensors,
                    const std::map<std::string, std::string>& metadata = {});
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;
  ~SafetensorsWriter();

  // The next n raw bytes of the data section.
  void write_bytes(const void* bytes, size_t n);
  // The next n elements, narrowed (round to nearest even) to the dtype of
  // the tensor(s) being written, which must be F32, F16 or BF16.
  void write_floats(const float* values, size_t n);
  // Checks that every byte was written, flushes and renames.
  void finish();

  uint64_t data_bytes() const { return total_; }

 private:
  void put(const void* bytes, size_t n);
  void flush_buffer();

  std::string path_;
  std::optional<AtomicFile> file_;
  std::vector<SafetensorsSpec> specs_;
  std::vector<uint64_t> ends_;  // byte end of each tensor
  uint64_t total_ = 0, written_ = 0;
  size_t current_ = 0;  // tensor being written
  std::vector<uint8_t> buffer_;
  bool finished_ = false;
};

// One tensor with its bytes, for small files.
struct SafetensorsTensorData {
  std::string name;
  StDtype dtype = StDtype::kF32;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian, elements * dtype bytes
};

// Writes a whole file (in the given order) with SafetensorsWriter.
void write_safetensors(const std::string& path,
                       const std::vector<SafetensorsTensorData>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_SAFETENSORS_H_
