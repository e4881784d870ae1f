#include "formats/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "lockstep/error.h"

namespace lockstep {

Sha256 sha256(const void* data, size_t n) {
  Sha256 out{};
  unsigned int len = 0;
  if (EVP_Digest(data, n, out.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != out.size()) {
    throw Error("SHA-256: OpenSSL EVP_Digest failed");
  }
  return out;
}

std::string to_hex(const Sha256& digest) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t b : digest) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

Sha256Hasher::Sha256Hasher() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(),
                                 nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
    throw Error("SHA-256: OpenSSL initialisation failed");
  }
}

Sha256Hasher::~Sha256Hasher() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

void Sha256Hasher::update(const void* data, size_t n) {
  if (n > 0 && EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) != 1) {
    throw Error("SHA-256: OpenSSL EVP_DigestUpdate failed");
  }
}

Sha256 Sha256Hasher::finish() {
  auto* ctx = static_cast<EVP_MD_CTX*>(ctx_);
  Sha256 out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, out.data(), &len) != 1 || len != out.size() ||
      EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256: OpenSSL EVP_DigestFinal failed");
  }
  return out;
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open '" + path + "' for reading");
  Sha256Hasher digest;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) digest.update(buf.data(), size_t(in.gcount()));
  }
  return to_hex(digest.finish());
}

}  // namespace lockstep
