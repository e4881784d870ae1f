#include "formats/checkpoint.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "lockstep/error.h"

namespace lockstep {
namespace {

size_t dtype_bytes(const std::string& dtype) {
  if (dtype == "f64") return 8;
  if (dtype == "f32") return 4;
  return 0;
}

uint32_t get_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}

uint64_t get_u64(const uint8_t* p) {
  return uint64_t(get_u32(p)) | uint64_t(get_u32(p + 4)) << 32;
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("checkpoint '" + path + "': " + what);
}

std::vector<TensorInfo> parse_tensors(const std::string& path,
                                      const nlohmann::json& j) {
  if (!j.is_array()) fail(path, "header field 'tensors' is not an array");
  std::vector<TensorInfo> out;
  for (const auto& t : j) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
        !t.contains("shape") || !t["shape"].is_array() ||
        !t.contains("offset") || !t["offset"].is_number_unsigned()) {
      fail(path,
           "a tensor entry lacks a string 'name', an array 'shape' or "
           "an unsigned 'offset'");
    }
    TensorInfo info;
    info.name = t["name"].get<std::string>();
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (1ull << 40)) {
        fail(path, "tensor '" + info.name + "' has a bad dimension");
      }
      info.shape.push_back(d.get<int64_t>());
    }
    info.offset = t["offset"].get<uint64_t>();
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace

uint64_t TensorInfo::words() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (bytes.size() < kCheckpointFixedBytes) {
    fail(path, "file is " + std::to_string(bytes.size()) +
                   " bytes, shorter than the 56-byte fixed header "
                   "(truncated or not a lockstep checkpoint)");
  }
  if (std::memcmp(bytes.data(), kCheckpointMagic, 8) != 0) {
    fail(path,
         "bad magic at offset 0 (expected 'LOCKSTEP'): not a lockstep "
         "checkpoint");
  }
  const uint32_t version = get_u32(&bytes[8]);
  if (version != kCheckpointVersion && version != kCheckpointVersionLayout) {
    fail(path, "format version " + std::to_string(version) +
                   " is not supported (this build reads versions 1 and 2)");
  }
  const uint64_t h = get_u32(&bytes[12]);
  const uint64_t p = get_u64(&bytes[16]);
  if (h > bytes.size() || p > bytes.size() ||
      kCheckpointFixedBytes + h + p != bytes.size()) {
    fail(path, "header length " + std::to_string(h) + " + payload length " +
                   std::to_string(p) + " + 56 != file size " +
                   std::to_string(bytes.size()) + " (truncated or corrupt)");
  }
  if ((kCheckpointFixedBytes + h) % 64 != 0) {
    fail(path, "payload offset " + std::to_string(kCheckpointFixedBytes + h) +
                   " is not a multiple of 64 (header padding is wrong)");
  }
  Checkpoint c;
  std::memcpy(c.payload_sha256.data(), &bytes[24], 32);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + kCheckpointFixedBytes,
                                   bytes.begin() + kCheckpointFixedBytes + h);
  } catch (const nlohmann::json::exception& e) {
    fail(path,
         std::string("header at offset 56 is not valid JSON: ") + e.what());
  }
  for (const char* key : {"model", "dtype", "config", "tensors", "words"}) {
    if (!header.is_object() || !header.contains(key)) {
      fail(path, std::string("header lacks the field '") + key + "'");
    }
  }
  if (!header["model"].is_string() || !header["dtype"].is_string() ||
      !header["config"].is_object() || !header["words"].is_number_unsigned()) {
    fail(path, "header fields have the wrong types");
  }
  c.model = header["model"];
  c.dtype = header["dtype"];
  if (version == kCheckpointVersionLayout) {
    if (c.model != "gpt2") {
      fail(path,
           "format version 2 (a weight layout) is for GPT-2 files, not "
           "model '" +
               c.model + "'");
    }
    if (!header.contains("layout") || !header["layout"].is_string() ||
        !header.contains("plain_sha256") ||
        !header["plain_sha256"].is_string()) {
      fail(path,
           "format version 2 needs the string fields 'layout' and "
           "'plain_sha256'");
    }
    c.layout = header["layout"];
    c.plain_sha256 = header["plain_sha256"];
  } else if (header.contains("layout")) {
    fail(path, "a 'layout' field needs format version 2, the file says 1");
  }
  c.config = header["config"];
  c.meta = header.value("meta", nlohmann::json::object());
  c.words = header["words"];
  const size_t wb = dtype_bytes(c.dtype);
  if (wb == 0) fail(path, "unknown dtype '" + c.dtype + "'");
  if (c.words * wb != p) {
    fail(path, "header says " + std::to_string(c.words) + " words of " +
                   c.dtype + " but the payload is " + std::to_string(p) +
                   " bytes");
  }
  c.tensors = parse_tensors(path, header["tensors"]);
  uint64_t next = 0;
  for (const auto& t : c.tensors) {
    if (t.offset != next) {
      fail(path, "tensor '" + t.name + "' starts at word " +
                     std::to_string(t.offset) + ", expected " +
                     std::to_string(next) + " (tensors must be contiguous)");
    }
    next += t.words();
  }
  if (next != c.words) {
    fail(path, "tensors cover " + std::to_string(next) +
                   " words, header "
                   "says " +
                   std::to_string(c.words));
  }
  const uint8_t* payload = bytes.data() + kCheckpointFixedBytes + h;
  const Sha256 actual = sha256(payload, p);
  if (actual != c.payload_sha256) {
    fail(path, "payload SHA-256 is " + to_hex(actual) +
                   " but the header "
                   "records " +
                   to_hex(c.payload_sha256) + " (the weights are corrupt)");
  }
  c.payload.assign(payload, payload + p);
  c.file_sha256 = to_hex(sha256(bytes.data(), bytes.size()));
  return c;
}

std::string checkpoint_model_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  uint8_t fixed[kCheckpointFixedBytes];
  in.read(reinterpret_cast<char*>(fixed), sizeof fixed);
  if (in.gcount() != std::streamsize(sizeof fixed)) {
    fail(path,
         "shorter than the 56-byte fixed header (truncated or not a "
         "lockstep checkpoint)");
  }
  if (std::memcmp(fixed, kCheckpointMagic, 8) != 0) {
    fail(path,
         "bad magic at offset 0 (expected 'LOCKSTEP'): not a lockstep "
         "checkpoint");
  }
  const uint32_t h = get_u32(&fixed[12]);
  if (h > (64u << 20)) fail(path, "header length is implausible (corrupt)");
  std::string text(h, '\0');
  in.read(text.data(), std::streamsize(h));
  if (in.gcount() != std::streamsize(h)) fail(path, "header is truncated");
  nlohmann::json header = nlohmann::json::parse(text, nullptr, false);
  if (!header.is_object() || !header.contains("model") ||
      !header["model"].is_string()) {
    fail(path, "header is not JSON with a string 'model' field");
  }
  return header["model"].get<std::string>();
}

std::vector<uint8_t> encode_checkpoint(const Checkpoint& c) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : c.tensors) {
    tensors.push_back(
        {{"name", t.name}, {"shape", t.shape}, {"offset", t.offset}});
  }
  nlohmann::json header = {{"model", c.model},   {"dtype", c.dtype},
                           {"config", c.config}, {"tensors", tensors},
                           {"words", c.words},   {"meta", c.meta}};
  if (!c.layout.empty()) {
    header["layout"] = c.layout;
    header["plain_sha256"] = c.plain_sha256;
  }
  std::string text = header.dump();
  while ((kCheckpointFixedBytes + text.size()) % 64 != 0) text.push_back(' ');
  std::vector<uint8_t> out(kCheckpointMagic, kCheckpointMagic + 8);
  put_u32(out,
          c.layout.empty() ? kCheckpointVersion : kCheckpointVersionLayout);
  put_u32(out, uint32_t(text.size()));
  put_u64(out, c.payload.size());
  const Sha256 digest = sha256(c.payload.data(), c.payload.size());
  out.insert(out.end(), digest.begin(), digest.end());
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), c.payload.begin(), c.payload.end());
  return out;
}

void write_file_atomic(const std::string& path,
                       const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot open '" + tmp + "' for writing");
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw Error("writing '" + tmp + "' failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("cannot rename '" + tmp + "' to '" + path +
                "': " + ec.message());
  }
}

}  // namespace lockstep
