// The one way lockstep writes a file: under a temporary name beside it,
// renamed over the final name only when every byte is written and synced.
// A reader therefore sees the old file or the new one, never a part; after
// a crash or power loss, likewise (the data and the directory entry are
// fsync'ed). Used by every writer in the project: checkpoints, packed GPT-2
// files, safetensors, config.json, the logits dump.
#ifndef LOCKSTEP_FORMATS_ATOMIC_FILE_H_
#define LOCKSTEP_FORMATS_ATOMIC_FILE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace lockstep {

class AtomicFile {
 public:
  // Creates (truncating) PATH.tmp.<pid>, mode 0644 before the umask.
  // Throws lockstep::Error naming the temporary and the system's reason.
  explicit AtomicFile(const std::string& path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Without commit(): closes and removes the temporary.
  ~AtomicFile();

  // Appends n bytes (retrying short writes and EINTR).
  void write(const void* bytes, size_t n);
  // Writes n bytes at byte `at` of the temporary (for fields filled in
  // last, such as a digest of what follows them).
  void pwrite(const void* bytes, size_t n, uint64_t at);
  // fsync, close, rename over the path, fsync of the directory. Every
  // failure throws lockstep::Error; before the rename it removes the
  // temporary and leaves the old file as it was.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temporary() const { return tmp_; }

 private:
  [[noreturn]] void fail(const char* what, int err);

  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `bytes` to `path` through an AtomicFile.
void write_file_atomic(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_ATOMIC_FILE_H_
