// SHA-256 digests (OpenSSL's EVP interface) as lowercase hex strings.
#ifndef LOCKSTEP_FORMATS_SHA256_H_
#define LOCKSTEP_FORMATS_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep {

using Sha256 = std::array<uint8_t, 32>;

// The digest of n bytes at data.
Sha256 sha256(const void* data, size_t n);
// Lowercase hex of a digest.
std::string to_hex(const Sha256& digest);
// The hex digest of a whole file; throws lockstep::Error if unreadable.
std::string sha256_file_hex(const std::string& path);

// An incremental digest: update() any number of times, then finish().
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(Sha256Hasher&& o) noexcept : ctx_(o.ctx_) { o.ctx_ = nullptr; }
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  void update(const void* data, size_t n);
  // The digest of everything given; the stream starts over afterwards.
  Sha256 finish();

 private:
  void* ctx_;  // EVP_MD_CTX
};

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_SHA256_H_
