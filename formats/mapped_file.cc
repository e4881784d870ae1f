#include "formats/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "lockstep/error.h"

namespace lockstep {

MappedFile MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error("cannot open '" + path + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error("cannot stat '" + path + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    throw Error("'" + path + "' is empty");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file referenced
  if (p == MAP_FAILED) {
    throw Error("mmap of '" + path + "' (" + std::to_string(size) +
                " bytes) failed: " + std::strerror(err));
  }
  MappedFile f;
  f.data_ = static_cast<const uint8_t*>(p);
  f.size_ = size;
  f.path_ = path;
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() noexcept {
  if (data_ != nullptr) {
    ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
  }
}

void MappedFile::advise_sequential(size_t offset, size_t n) const {
  if (data_ == nullptr || offset >= size_) return;
  if (n > size_ - offset) n = size_ - offset;
  // madvise wants a page-aligned start.
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(data_ + offset);
  const uintptr_t aligned = start - start % page;
  void* base = reinterpret_cast<void*>(aligned);
  const size_t len = n + (start - aligned);
  ::madvise(base, len, MADV_SEQUENTIAL);
  ::madvise(base, len, MADV_WILLNEED);
}

}  // namespace lockstep
