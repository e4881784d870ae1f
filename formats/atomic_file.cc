#include "formats/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "lockstep/error.h"

namespace lockstep {

AtomicFile::AtomicFile(const std::string& path)
    : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error("cannot open '" + tmp_ +
                "' for writing: " + std::strerror(errno));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const char* what, int err) {
  throw Error(std::string(what) + " '" + tmp_ +
              "' failed: " + std::strerror(err) + " (disk full?)");
}

void AtomicFile::write(const void* bytes, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(bytes);
  while (n > 0) {
    const ssize_t w = ::write(fd_, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("writing", w < 0 ? errno : EIO);
    b += w;
    n -= size_t(w);
  }
}

void AtomicFile::pwrite(const void* bytes, size_t n, uint64_t at) {
  const uint8_t* b = static_cast<const uint8_t*>(bytes);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, b, n, off_t(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("writing", w < 0 ? errno : EIO);
    b += w;
    n -= size_t(w);
    at += uint64_t(w);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("syncing", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing", errno);
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    throw Error("cannot rename '" + tmp_ + "' to '" + path_ +
                "': " + ec.message());
  }
  committed_ = true;
  // The rename is durable once the directory is synced. Filesystems that
  // cannot sync a directory say EINVAL (nothing more can be done there).
  const std::filesystem::path parent =
      std::filesystem::path(path_).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    throw Error("'" + path_ + "' was written, but its folder '" + dir +
                "' cannot be opened to sync it: " + std::strerror(errno));
  }
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) {
    throw Error("'" + path_ + "' was written, but syncing its folder '" + dir +
                "' failed: " + std::strerror(err));
  }
}

void write_file_atomic(const std::string& path,
                       std::span<const uint8_t> bytes) {
  AtomicFile f(path);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

}  // namespace lockstep
