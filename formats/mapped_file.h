// A whole file memory-mapped read-only (RAII). Used by the safetensors
// parser and the packed GPT-2 reader: the bytes are read in place, never
// copied into a buffer (docs/gpt2-format.md "Memory").
#ifndef LOCKSTEP_FORMATS_MAPPED_FILE_H_
#define LOCKSTEP_FORMATS_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep {

class MappedFile {
 public:
  // Maps the whole regular file at `path` read-only (MAP_PRIVATE). Throws
  // lockstep::Error naming the path and the problem: cannot open, not a
  // regular file, empty, mmap failed.
  static MappedFile open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The mapping starts on a page boundary, so an offset that is a multiple
  // of 64 gives a 64-byte-aligned pointer.
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  bool is_open() const { return data_ != nullptr; }

  // Hints that [offset, offset + n) will be read once from start to end
  // (madvise SEQUENTIAL + WILLNEED); a no-op where unsupported.
  void advise_sequential(size_t offset, size_t n) const;

 private:
  void reset() noexcept;

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_MAPPED_FILE_H_
