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

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_SHA256_H_
