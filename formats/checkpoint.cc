#include "formats/checkpoint.h"

#include <cstring>
#include <fstream>

#include "formats/bounded_json.h"
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
    uint64_t words = 1;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (1ull << 40)) {
        fail(path, "tensor '" + info.name + "' has a bad dimension");
      }
      info.shape.push_back(d.get<int64_t>());
      // Checked where the product is formed: [2^40, 2^40, 2^40] must not
      // wrap to 0 words.
      if (__builtin_mul_overflow(words, d.get<uint64_t>(), &words)) {
        fail(path, "tensor '" + info.name + "' has a shape whose product " +
                       "of dimensions overflows 64 bits");
      }
    }
    info.offset = t["offset"].get<uint64_t>();
    out.push_back(std::move(info));
  }
  return out;
}

// The fixed part's lengths, checked against the size of the file.
struct Fixed {
  uint32_t version = 0;
  uint64_t h = 0, p = 0;
};

Fixed parse_fixed(const uint8_t* fixed, uint64_t size,
                  const std::string& path) {
  if (size < kCheckpointFixedBytes) {
    fail(path, "file is " + std::to_string(size) +
                   " bytes, shorter than the 56-byte fixed header "
                   "(truncated or not a lockstep checkpoint)");
  }
  if (std::memcmp(fixed, kCheckpointMagic, 8) != 0) {
    fail(path,
         "bad magic at offset 0 (expected 'LOCKSTEP'): not a lockstep "
         "checkpoint");
  }
  Fixed f;
  f.version = get_u32(fixed + 8);
  if (f.version != kCheckpointVersion &&
      f.version != kCheckpointVersionLayout) {
    fail(path, "format version " + std::to_string(f.version) +
                   " is not supported (this build reads versions 1 and 2)");
  }
  f.h = get_u32(fixed + 12);
  f.p = get_u64(fixed + 16);
  if (f.h > size || f.p > size || kCheckpointFixedBytes + f.h + f.p != size) {
    fail(path, "header length " + std::to_string(f.h) + " + payload length " +
                   std::to_string(f.p) + " + 56 != file size " +
                   std::to_string(size) + " (truncated or corrupt)");
  }
  if ((kCheckpointFixedBytes + f.h) % 64 != 0) {
    fail(path, "payload offset " + std::to_string(kCheckpointFixedBytes + f.h) +
                   " is not a multiple of 64 (header padding is wrong)");
  }
  return f;
}

// The JSON header of h bytes at text, and the fields every checkpoint has.
void parse_header(CheckpointContainer& c, const uint8_t* text, uint64_t h,
                  const std::string& path) {
  try {
    c.header = parse_bounded_json(text, text + h);
  } catch (const JsonTooDeep&) {
    fail(path, "header at offset 56 is " + json_too_deep_text());
  } catch (const nlohmann::json::exception& e) {
    fail(path,
         std::string("header at offset 56 is not valid JSON: ") + e.what());
  }
  const nlohmann::json& j = c.header;
  for (const char* key : {"model", "dtype", "config", "tensors", "words"}) {
    if (!j.is_object() || !j.contains(key)) {
      fail(path, std::string("header lacks the field '") + key + "'");
    }
  }
  if (!j["model"].is_string() || !j["dtype"].is_string() ||
      !j["config"].is_object() || !j["tensors"].is_array() ||
      !j["words"].is_number_unsigned()) {
    fail(path, "header fields have the wrong types");
  }
  // Version 2 (a weight layout) is GPT-2's; version 1 is the plain order
  // and must not carry the fields a version-1 reader would ignore.
  if (c.version == kCheckpointVersion) {
    if (j.contains("layout") || j.contains("plain_sha256")) {
      fail(path,
           "format version 1 is the plain layout, but the header has a "
           "'layout' or 'plain_sha256' field (those need version 2)");
    }
    return;
  }
  if (j["model"] != "gpt2") {
    fail(path,
         "format version 2 (a weight layout) is for GPT-2 files, not "
         "model '" +
             j["model"].get<std::string>() + "'");
  }
  if (!j.contains("layout") || !j["layout"].is_string()) {
    fail(path,
         "format version 2 needs a string field 'layout' (plain, panel64)");
  }
  if (!j.contains("plain_sha256") || !j["plain_sha256"].is_string()) {
    fail(path,
         "format version 2 needs 'plain_sha256', 64 lowercase hex digits");
  }
  c.layout = j["layout"].get<std::string>();
  c.plain_sha256 = j["plain_sha256"].get<std::string>();
}

}  // namespace

uint64_t TensorInfo::words() const {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n)) {
      throw Error("tensor '" + name + "': its shape's size overflows 64 bits");
    }
  }
  return n;
}

CheckpointContainer parse_checkpoint_container(std::span<const uint8_t> file,
                                               const std::string& path) {
  const Fixed f = parse_fixed(file.data(), file.size(), path);
  CheckpointContainer c;
  c.version = f.version;
  c.header_bytes = f.h;
  c.payload_offset = kCheckpointFixedBytes + f.h;
  c.payload_bytes = f.p;
  std::memcpy(c.payload_sha256.data(), file.data() + 24, 32);
  parse_header(c, file.data() + kCheckpointFixedBytes, f.h, path);
  return c;
}

void check_payload_digest(const CheckpointContainer& c,
                          std::span<const uint8_t> file,
                          const std::string& path) {
  const Sha256 actual =
      sha256(file.data() + c.payload_offset, size_t(c.payload_bytes));
  if (actual != c.payload_sha256) {
    fail(path, "payload SHA-256 is " + to_hex(actual) +
                   " but the header records " + to_hex(c.payload_sha256) +
                   " (the weights are corrupt)");
  }
}

Checkpoint parse_checkpoint(std::span<const uint8_t> bytes,
                            const std::string& path) {
  CheckpointContainer k = parse_checkpoint_container(bytes, path);
  nlohmann::json& header = k.header;
  Checkpoint c;
  c.payload_sha256 = k.payload_sha256;
  c.model = header["model"];
  c.dtype = header["dtype"];
  c.layout = k.layout;
  c.plain_sha256 = k.plain_sha256;
  c.config = std::move(header["config"]);
  c.meta = header.value("meta", nlohmann::json::object());
  c.words = header["words"];
  const size_t wb = dtype_bytes(c.dtype);
  if (wb == 0) fail(path, "unknown dtype '" + c.dtype + "'");
  uint64_t need = 0;
  if (__builtin_mul_overflow(c.words, uint64_t(wb), &need) ||
      need != k.payload_bytes) {
    fail(path, "header says " + std::to_string(c.words) + " words of " +
                   c.dtype + " but the payload is " +
                   std::to_string(k.payload_bytes) + " bytes");
  }
  c.tensors = parse_tensors(path, header["tensors"]);
  uint64_t next = 0;
  for (const auto& t : c.tensors) {
    if (t.offset != next) {
      fail(path, "tensor '" + t.name + "' starts at word " +
                     std::to_string(t.offset) + ", expected " +
                     std::to_string(next) + " (tensors must be contiguous)");
    }
    // parse_tensors checked the product; the running sum can still wrap.
    if (__builtin_add_overflow(next, t.words(), &next)) {
      fail(path, "tensors cover more than 2^64 words");
    }
  }
  if (next != c.words) {
    fail(path, "tensors cover " + std::to_string(next) +
                   " words, header "
                   "says " +
                   std::to_string(c.words));
  }
  check_payload_digest(k, bytes, path);
  const uint8_t* payload = bytes.data() + k.payload_offset;
  c.payload.assign(payload, payload + k.payload_bytes);
  c.file_sha256 = to_hex(sha256(bytes.data(), bytes.size()));
  return c;
}

Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  return parse_checkpoint(bytes, path);
}

std::string checkpoint_model_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open for reading");
  const std::streamoff size = in.tellg();
  if (size < 0) fail(path, "cannot tell its size");
  in.seekg(0);
  uint8_t fixed[kCheckpointFixedBytes] = {};
  in.read(reinterpret_cast<char*>(fixed), sizeof fixed);
  const Fixed f = parse_fixed(fixed, uint64_t(size), path);
  std::vector<uint8_t> text(f.h);
  in.read(reinterpret_cast<char*>(text.data()), std::streamsize(f.h));
  if (in.gcount() != std::streamsize(f.h)) fail(path, "header is truncated");
  CheckpointContainer c;
  c.version = f.version;
  parse_header(c, text.data(), f.h, path);
  return c.header["model"].get<std::string>();
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

}  // namespace lockstep
