#include "formats/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "formats/bounded_json.h"
#include "lockstep/error.h"

static_assert(std::endian::native == std::endian::little,
              "lockstep reads little-endian files in place");

namespace lockstep {
namespace {

struct DtypeInfo {
  StDtype dtype;
  const char* name;
  size_t bytes;
};

constexpr DtypeInfo kDtypes[] = {
    {StDtype::kBool, "BOOL", 1},      {StDtype::kU8, "U8", 1},
    {StDtype::kI8, "I8", 1},          {StDtype::kF8E5M2, "F8_E5M2", 1},
    {StDtype::kF8E4M3, "F8_E4M3", 1}, {StDtype::kF8E8M0, "F8_E8M0", 1},
    {StDtype::kI16, "I16", 2},        {StDtype::kU16, "U16", 2},
    {StDtype::kF16, "F16", 2},        {StDtype::kBF16, "BF16", 2},
    {StDtype::kI32, "I32", 4},        {StDtype::kU32, "U32", 4},
    {StDtype::kF32, "F32", 4},        {StDtype::kF64, "F64", 8},
    {StDtype::kI64, "I64", 8},        {StDtype::kU64, "U64", 8},
    {StDtype::kC64, "C64", 8},
};

const DtypeInfo& info(StDtype d) {
  for (const auto& i : kDtypes) {
    if (i.dtype == d) return i;
  }
  throw Error("unknown safetensors dtype enumerator");
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// A library message made safe to print: bytes outside printable ASCII (an
// invalid UTF-8 byte quoted by the JSON parser) become '?'.
std::string printable(const char* what) {
  std::string s = what;
  for (char& ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20 ||
        static_cast<unsigned char>(ch) > 0x7e) {
      ch = '?';
    }
  }
  return s;
}

[[noreturn]] void st_fail(const std::string& path, const std::string& what) {
  throw Error("safetensors '" + path + "': " + what);
}

uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// Rejects duplicate keys in every object of the header (the format
// disallows them; a JSON library would silently keep one).
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(std::string* duplicate) : duplicate_(duplicate) {}
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event,
                  nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      keys_.emplace_back();
    } else if (event == E::object_end) {
      if (!keys_.empty()) keys_.pop_back();
    } else if (event == E::key && !keys_.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!keys_.back().insert(key).second && duplicate_->empty()) {
        *duplicate_ = key;
      }
    }
    return true;
  }

 private:
  std::string* duplicate_;
  std::vector<std::set<std::string>> keys_;
};

}  // namespace

const char* st_dtype_name(StDtype d) { return info(d).name; }
size_t st_dtype_bytes(StDtype d) { return info(d).bytes; }

std::optional<StDtype> st_dtype_from_name(std::string_view name) {
  for (const auto& i : kDtypes) {
    if (name == i.name) return i.dtype;
  }
  return std::nullopt;
}

float widen_f16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {  // infinity or NaN (payload kept)
    bits = sign | 0x7f800000u | mant << 13;
  } else if (exp != 0) {  // normal: rebias 15 -> 127
    bits = sign | (exp + 112) << 23 | mant << 13;
  } else if (mant == 0) {  // signed zero
    bits = sign;
  } else {             // subnormal: mant * 2^-24, normal in binary32
    uint32_t e = 113;  // exponent field of 2^-14
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | e << 23 | (mant & 0x3ffu) << 13;
  }
  return std::bit_cast<float>(bits);
}

float widen_bf16(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

uint16_t narrow_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) {  // NaN: keep the top payload bits, stay quiet
    return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520: inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal or zero in binary16
    // |f| * 2^24 is exact in binary32 (< 2^10); round to nearest even.
    const float scaled = std::fabs(f) * 16777216.0f;
    return uint16_t(sign | uint16_t(std::nearbyint(scaled)));
  }
  uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3ffu);
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carries into exp
  return uint16_t(sign | h);
}

uint16_t narrow_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void widen_to_f32(StDtype dtype, const uint8_t* src, size_t n, float* dst) {
  switch (dtype) {
    case StDtype::kF32:
      // memcpy with a null pointer is undefined even for 0 bytes (an empty
      // tensor's data, an empty vector's): found by fuzz_safetensors.
      if (n > 0) std::memcpy(dst, src, n * 4);
      return;
    case StDtype::kF16:
      for (size_t i = 0; i < n; ++i) {
        dst[i] = widen_f16(uint16_t(src[2 * i] | src[2 * i + 1] << 8));
      }
      return;
    case StDtype::kBF16:
      for (size_t i = 0; i < n; ++i) {
        dst[i] = widen_bf16(uint16_t(src[2 * i] | src[2 * i + 1] << 8));
      }
      return;
    default:
      throw Error(std::string("dtype ") + st_dtype_name(dtype) +
                  " cannot be widened exactly to binary32 (F32, F16 or BF16 "
                  "expected)");
  }
}

uint64_t SafetensorsTensor::elements() const {
  // A parsed tensor's product was checked when it was read.
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      throw Error("tensor '" + name + "': shape " + shape_text(shape) +
                  " overflows 64 bits");
    }
  }
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  MappedFile map;
  try {
    map = MappedFile::open(path);
  } catch (const Error& e) {
    st_fail(path, e.what());
  }
  SafetensorsFile f = parse({map.data(), map.size()}, path);
  f.file_ = std::move(map);  // the tensors' pointers stay valid: same pages
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::span<const uint8_t> bytes,
                                       const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  f.size_ = bytes.size();
  const uint8_t* base = bytes.data();
  const uint64_t size = bytes.size();
  if (size < 8) {
    st_fail(
        path,
        "file is " + std::to_string(size) +
            " bytes, shorter than the 8-byte header length (truncated or not a "
            "safetensors file)");
  }
  const uint64_t n = get_u64(base);
  if (n > kSafetensorsMaxHeader) {
    st_fail(path, "header length " + std::to_string(n) +
                      " exceeds the limit of " +
                      std::to_string(kSafetensorsMaxHeader) +
                      " bytes (corrupt or not a safetensors file)");
  }
  if (n > size - 8) {
    st_fail(path, "header length " + std::to_string(n) +
                      " runs past the end of the file (" +
                      std::to_string(size) +
                      " bytes; truncated or not a safetensors file)");
  }
  if (n < 2 || base[8] != '{') {
    st_fail(path,
            "the header does not start with '{' (not a safetensors file)");
  }
  f.header_length_ = n;
  const uint64_t data_size = size - 8 - n;
  const uint8_t* data = base + 8 + n;

  nlohmann::json header;
  std::string duplicate;
  try {
    header = parse_bounded_json(base + 8, base + 8 + n,
                                DuplicateKeyCheck(&duplicate));
  } catch (const JsonTooDeep&) {
    st_fail(path, "the header is " + json_too_deep_text());
  } catch (const nlohmann::json::exception& e) {
    st_fail(path, "the header is not valid JSON: " + printable(e.what()));
  }
  if (!duplicate.empty()) {
    st_fail(path, "the header has the key '" + duplicate +
                      "' twice (duplicate keys are not allowed)");
  }
  if (!header.is_object()) st_fail(path, "the header is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) st_fail(path, "'__metadata__' is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          st_fail(path,
                  "'__metadata__' value of '" + m.key() +
                      "' is not a string (the metadata must map strings to "
                      "strings)");
        }
        f.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string tw = "tensor '" + name + "': ";
    if (!v.is_object()) st_fail(path, tw + "entry is not an object");
    for (auto k = v.begin(); k != v.end(); ++k) {
      if (k.key() != "dtype" && k.key() != "shape" &&
          k.key() != "data_offsets") {
        st_fail(path, tw + "unknown field '" + k.key() +
                          "' (expected dtype, shape, data_offsets)");
      }
    }
    if (!v.contains("dtype") || !v["dtype"].is_string()) {
      st_fail(path, tw + "lacks a string 'dtype'");
    }
    if (!v.contains("shape") || !v["shape"].is_array()) {
      st_fail(path, tw + "lacks an array 'shape'");
    }
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2 ||
        !v["data_offsets"][0].is_number_unsigned() ||
        !v["data_offsets"][1].is_number_unsigned()) {
      st_fail(path, tw + "lacks 'data_offsets' as two non-negative integers");
    }
    SafetensorsTensor t;
    t.name = name;
    const std::string dname = v["dtype"].get<std::string>();
    const auto dtype = st_dtype_from_name(dname);
    if (!dtype) st_fail(path, tw + "unknown dtype '" + dname + "'");
    t.dtype = *dtype;
    uint64_t elements = 1;
    bool overflow = false;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) {
        st_fail(path, tw + "shape " + v["shape"].dump() +
                          " is not a list of non-negative integers");
      }
      t.shape.push_back(d.get<uint64_t>());
      overflow |= __builtin_mul_overflow(elements, t.shape.back(), &elements);
    }
    uint64_t need = 0;
    overflow |=
        __builtin_mul_overflow(elements, st_dtype_bytes(t.dtype), &need);
    if (overflow) {
      st_fail(path, tw + "shape " + shape_text(t.shape) + " overflows 64 bits");
    }
    t.begin = v["data_offsets"][0].get<uint64_t>();
    t.end = v["data_offsets"][1].get<uint64_t>();
    const std::string range =
        "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
    if (t.end < t.begin)
      st_fail(path, tw + "data_offsets " + range + " end before they begin");
    if (t.end - t.begin != need) {
      st_fail(path, tw + "data_offsets " + range + " hold " +
                        std::to_string(t.end - t.begin) + " bytes but dtype " +
                        dname + " and shape " + shape_text(t.shape) + " need " +
                        std::to_string(need));
    }
    if (t.end > data_size) {
      st_fail(path, tw + "data_offsets " + range +
                        " run outside the data section, which is " +
                        std::to_string(data_size) + " bytes (truncated file?)");
    }
    t.data = data + t.begin;
    f.tensors_.push_back(std::move(t));
  }

  std::sort(f.tensors_.begin(), f.tensors_.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t covered = 0;
  const SafetensorsTensor* prev = nullptr;
  for (const auto& t : f.tensors_) {
    if (t.begin < covered) {
      st_fail(path, "tensor '" + t.name + "' (bytes " +
                        std::to_string(t.begin) + ".." + std::to_string(t.end) +
                        ") overlaps tensor '" + prev->name + "' (bytes " +
                        std::to_string(prev->begin) + ".." +
                        std::to_string(prev->end) + ")");
    }
    if (t.begin > covered) {
      st_fail(path, "bytes " + std::to_string(covered) + ".." +
                        std::to_string(t.begin) +
                        " of the data section, before tensor '" + t.name +
                        "', belong to no tensor (gaps are not allowed)");
    }
    covered = t.end;
    prev = &t;
  }
  if (covered != data_size) {
    st_fail(path, "the data section is " + std::to_string(data_size) +
                      " bytes but the tensors cover " +
                      std::to_string(covered) +
                      " (trailing bytes are not allowed)");
  }
  for (size_t i = 0; i < f.tensors_.size(); ++i) {
    f.index_.emplace(f.tensors_[i].name, i);
  }
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

// ---------------------------------------------------------------- writer

SafetensorsWriter::SafetensorsWriter(
    const std::string& path, std::vector<SafetensorsSpec> tensors,
    const std::map<std::string, std::string>& metadata)
    : path_(path), specs_(std::move(tensors)) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  for (const auto& s : specs_) {
    if (s.name == "__metadata__" || !names.insert(s.name).second) {
      throw Error("safetensors '" + path + "': cannot write tensor name '" +
                  s.name + "' (reserved or repeated)");
    }
    uint64_t bytes = st_dtype_bytes(s.dtype);
    bool overflow = false;
    for (uint64_t d : s.shape) {
      overflow |= __builtin_mul_overflow(bytes, d, &bytes);
    }
    uint64_t end = 0;
    overflow |= __builtin_add_overflow(total_, bytes, &end);
    if (overflow) {
      throw Error("safetensors '" + path + "': cannot write tensor '" + s.name +
                  "': shape " + shape_text(s.shape) +
                  " (with the tensors before it) overflows 64 bits");
    }
    header[s.name] = {{"dtype", st_dtype_name(s.dtype)},
                      {"shape", s.shape},
                      {"data_offsets", {total_, total_ + bytes}}};
    total_ += bytes;
    ends_.push_back(total_);
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  file_.emplace(path);
  buffer_.reserve(1 << 22);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  buffer_.insert(buffer_.end(), len, len + 8);
  buffer_.insert(buffer_.end(), text.begin(), text.end());
}

// The AtomicFile removes the temporary unless finish() committed it.
SafetensorsWriter::~SafetensorsWriter() = default;

void SafetensorsWriter::flush_buffer() {
  file_->write(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void SafetensorsWriter::put(const void* bytes, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(bytes);
  while (n > 0) {
    const size_t room = buffer_.capacity() - buffer_.size();
    const size_t k = std::min(room, n);
    buffer_.insert(buffer_.end(), p, p + k);
    p += k;
    n -= k;
    if (buffer_.size() == buffer_.capacity()) flush_buffer();
  }
}

void SafetensorsWriter::write_bytes(const void* bytes, size_t n) {
  if (finished_ || n > total_ - written_) {
    throw Error("safetensors '" + path_ + "': writing " + std::to_string(n) +
                " bytes past the end of the data section (" +
                std::to_string(total_) + " bytes)");
  }
  put(bytes, n);
  written_ += n;
  while (current_ < ends_.size() && written_ >= ends_[current_]) ++current_;
}

void SafetensorsWriter::write_floats(const float* values, size_t n) {
  constexpr size_t kBatch = 1 << 14;
  uint8_t out[kBatch * 4];
  while (n > 0) {
    while (current_ < ends_.size() && written_ >= ends_[current_]) ++current_;
    if (current_ >= specs_.size()) {
      throw Error("safetensors '" + path_ +
                  "': writing past the end of the data section");
    }
    const SafetensorsSpec& s = specs_[current_];
    if (s.dtype != StDtype::kF32 && s.dtype != StDtype::kF16 &&
        s.dtype != StDtype::kBF16) {
      throw Error("safetensors '" + path_ + "': tensor '" + s.name +
                  "' has dtype " + st_dtype_name(s.dtype) +
                  ", which write_floats cannot produce");
    }
    const size_t esize = st_dtype_bytes(s.dtype);
    const uint64_t left = ends_[current_] - written_;
    if (left % esize != 0) {
      throw Error("safetensors '" + path_ + "': tensor '" + s.name +
                  "' was partly written with write_bytes; write_floats "
                  "must start on an element");
    }
    const size_t k = size_t(std::min<uint64_t>({n, left / esize, kBatch}));
    if (s.dtype == StDtype::kF32) {
      std::memcpy(out, values, k * 4);
    } else {
      for (size_t i = 0; i < k; ++i) {
        const uint16_t h = s.dtype == StDtype::kF16 ? narrow_f16(values[i])
                                                    : narrow_bf16(values[i]);
        out[2 * i] = uint8_t(h);
        out[2 * i + 1] = uint8_t(h >> 8);
      }
    }
    put(out, k * esize);
    written_ += k * esize;
    values += k;
    n -= k;
  }
}

void SafetensorsWriter::finish() {
  if (finished_) return;
  if (written_ != total_) {
    throw Error("safetensors '" + path_ + "': only " +
                std::to_string(written_) + " of " + std::to_string(total_) +
                " data bytes were written");
  }
  flush_buffer();
  file_->commit();
  finished_ = true;
}

void write_safetensors(const std::string& path,
                       const std::vector<SafetensorsTensorData>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsSpec> specs;
  for (const auto& t : tensors) specs.push_back({t.name, t.dtype, t.shape});
  SafetensorsWriter w(path, std::move(specs), metadata);
  for (const auto& t : tensors) w.write_bytes(t.bytes.data(), t.bytes.size());
  w.finish();
}

}  // namespace lockstep
