#include "formats/gpt2_q8.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <span>

#include "formats/atomic_file.h"
#include "formats/checkpoint.h"
#include "formats/mapped_file.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "ls_gpt2_layout.h"
#include "ls_gpt2_q8.h"
#include "ls_q8.h"

namespace lockstep {

// Builds Gpt2Weights for an int8 file (the friend named in the header).
struct Gpt2Q8Builder {
  static void set(Gpt2Weights& w, std::unique_ptr<MappedFile> map,
                  size_t offset, size_t bytes) {
    w.q8_map_ = std::move(map);
    w.q8_offset_ = offset;
    w.q8_bytes_ = bytes;
  }
};

namespace {

std::string config_text(const ls_gpt2_config& c) {
  return "n_vocab " + std::to_string(c.n_vocab) + ", n_ctx " +
         std::to_string(c.n_ctx) + ", n_embd " + std::to_string(c.n_embd) +
         ", n_head " + std::to_string(c.n_head) + ", n_layer " +
         std::to_string(c.n_layer);
}

nlohmann::json config_json(const ls_gpt2_config& c) {
  return {{"n_vocab", c.n_vocab},
          {"n_ctx", c.n_ctx},
          {"n_embd", c.n_embd},
          {"n_head", c.n_head},
          {"n_layer", c.n_layer}};
}

bool is_q8_matrix(size_t i_in_block) {
  // In a block's 12 entries: c_attn.w (2), attn.c_proj.w (4), c_fc.w (8),
  // mlp.c_proj.w (10).
  return i_in_block == 2 || i_in_block == 4 || i_in_block == 8 ||
         i_in_block == 10;
}

// The byte offset of entry i of the binary32 table, in the int8 layout.
uint64_t q8_offset(const ls_gpt2_config& c, size_t i) {
  if (i == 0) return 0;
  if (i == 1) return ls_gpt2_q8_wpe_offset(&c);
  const size_t last = 2 + 12 * size_t(c.n_layer);
  if (i >= last) {
    return ls_gpt2_q8_lnf_offset(&c) + (i - last) * 4 * uint64_t(c.n_embd);
  }
  const ls_gpt2_q8_block b = ls_gpt2_q8_block_offsets(&c, int((i - 2) / 12));
  const size_t at[12] = {b.ln1_g,  b.ln1_b,  b.attn_w, b.attn_b,
                         b.proj_w, b.proj_b, b.ln2_g,  b.ln2_b,
                         b.fc_w,   b.fc_b,   b.out_w,  b.out_b};
  return at[(i - 2) % 12];
}

// M's K and N for a quantized entry: wte and wpe as their transposes
// (shape [rows, C] -> K = C, N = rows), block matrices as they are.
std::pair<size_t, size_t> q8_kn(const Gpt2Q8Tensor& t, size_t i) {
  if (i < 2) return {size_t(t.shape[1]), size_t(t.shape[0])};
  return {size_t(t.shape[0]), size_t(t.shape[1])};
}

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

// The header text, padded so that the payload starts on 64 bytes, with
// plain_sha256 given (the payload digest goes to offset 24 last).
std::string q8_header(const ls_gpt2_config& c,
                      const std::vector<Gpt2Q8Tensor>& table,
                      const nlohmann::json& meta, const std::string& plain) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : table) {
    tensors.push_back({{"name", t.name},
                       {"dtype", t.dtype},
                       {"shape", t.shape},
                       {"offset", t.offset},
                       {"bytes", t.bytes}});
  }
  nlohmann::json header = {{"model", "gpt2"},
                           {"dtype", kGpt2Q8Dtype},
                           {"layout", kGpt2Q8Layout},
                           {"plain_sha256", plain},
                           {"config", config_json(c)},
                           {"tensors", tensors},
                           {"words", ls_gpt2_q8_bytes(&c)},
                           {"meta", meta}};
  std::string text = header.dump();
  while ((kCheckpointFixedBytes + text.size()) % 64 != 0) text.push_back(' ');
  return text;
}

bool lower_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
  });
}

// Quantizes table entry i from its plain binary32 words into dst (the
// entry's bytes; padding left as it is).
void quantize_entry(const ls_gpt2_config& c, const Gpt2Q8Tensor& t, size_t i,
                    const float* src, uint8_t* dst) {
  if (t.dtype == "f32") {
    std::memcpy(dst, src, t.bytes);
    return;
  }
  const auto [K, N] = q8_kn(t, i);
  // wte / wpe rows are the columns of the transposes: ld 1, cs K.
  const ls_status s = i < 2 ? ls_q8_pack(src, K, N, 1, K, 0, N, dst)
                            : ls_q8_pack(src, K, N, N, 1, 0, N, dst);
  if (s != LS_OK) {
    throw Error("cannot quantize '" + t.name + "' (" + config_text(c) +
                "): a weight is not finite");
  }
}

}  // namespace

std::vector<Gpt2Q8Tensor> gpt2_q8_tensor_table(const ls_gpt2_config& c) {
  if (!ls_gpt2_q8_config_valid(&c)) {
    throw Error("GPT-2 (" + config_text(c) +
                ") cannot be quantized: int8 needs a usable config with "
                "n_embd a multiple of 64 (docs/arithmetic.md §7.0)");
  }
  const std::vector<TensorInfo> f32 = gpt2_tensor_table(c);
  std::vector<Gpt2Q8Tensor> out;
  for (size_t i = 0; i < f32.size(); ++i) {
    Gpt2Q8Tensor t;
    t.name = f32[i].name;
    t.shape = f32[i].shape;
    t.offset = q8_offset(c, i);
    const bool q =
        i < 2 || (i < 2 + 12 * size_t(c.n_layer) && is_q8_matrix((i - 2) % 12));
    t.dtype = q ? kGpt2Q8Dtype : "f32";
    if (q) {
      const auto [K, N] = q8_kn(t, i);
      t.bytes = ls_q8_matrix_bytes(K, N);
    } else {
      t.bytes = f32[i].words() * 4;
    }
    out.push_back(std::move(t));
  }
  // The entries tile the payload: each starts where the last one's bytes,
  // padded to 64, end.
  uint64_t next = 0;
  for (const auto& t : out) {
    if (t.offset != next) throw Error("internal: int8 table does not tile");
    next = (t.offset + t.bytes + 63) / 64 * 64;
  }
  if (next != ls_gpt2_q8_bytes(&c)) {
    throw Error("internal: int8 table size");
  }
  return out;
}

std::vector<uint8_t> quantize_gpt2_q8(const ls_gpt2_config& c,
                                      const float* plain) {
  const std::vector<Gpt2Q8Tensor> table = gpt2_q8_tensor_table(c);
  const std::vector<TensorInfo> f32 = gpt2_tensor_table(c);
  std::vector<uint8_t> out(ls_gpt2_q8_bytes(&c), 0);
  for (size_t i = 0; i < table.size(); ++i) {
    quantize_entry(c, table[i], i, plain + f32[i].offset,
                   out.data() + table[i].offset);
  }
  return out;
}

bool is_gpt2_q8_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  try {
    const MappedFile map = MappedFile::open(path);
    if (map.size() < kCheckpointFixedBytes ||
        std::memcmp(map.data(), kCheckpointMagic, 8) != 0) {
      return false;
    }
    const CheckpointContainer k =
        parse_checkpoint_container({map.data(), map.size()}, path);
    return k.header["dtype"] == kGpt2Q8Dtype;
  } catch (const Error&) {
    return false;
  }
}

Gpt2Weights load_gpt2_q8(const std::string& path, bool verify_digest) {
  auto fail = [&path](const std::string& what) {
    throw Error("checkpoint '" + path + "': " + what);
  };
  auto map = std::make_unique<MappedFile>(MappedFile::open(path));
  const std::span<const uint8_t> file{map->data(), map->size()};
  const CheckpointContainer k = parse_checkpoint_container(file, path);
  const nlohmann::json& h = k.header;
  if (h["model"] != "gpt2")
    fail("model is " + h["model"].dump() + ", not gpt2");
  if (h["dtype"] != kGpt2Q8Dtype) {
    fail("dtype is " + h["dtype"].dump() + ", not \"q8g64\"");
  }
  if (k.layout != kGpt2Q8Layout) {
    fail("layout is '" + k.layout + "', an int8 file's is 'q8panel64'");
  }
  if (!lower_hex64(k.plain_sha256)) {
    fail("plain_sha256 is not 64 lowercase hex digits");
  }
  const nlohmann::json& cj = h["config"];
  ls_gpt2_config c{};
  const std::pair<const char*, int32_t*> keys[] = {{"n_vocab", &c.n_vocab},
                                                   {"n_ctx", &c.n_ctx},
                                                   {"n_embd", &c.n_embd},
                                                   {"n_head", &c.n_head},
                                                   {"n_layer", &c.n_layer}};
  if (cj.size() != 5) {
    fail("config " + cj.dump() +
         " must have exactly the keys n_vocab, n_ctx, n_embd, n_head, "
         "n_layer");
  }
  for (const auto& [key, dst] : keys) {
    if (!cj.contains(key) || !cj[key].is_number_unsigned() ||
        cj[key].get<uint64_t>() > INT32_MAX) {
      fail(std::string("config lacks a non-negative integer '") + key + "'");
    }
    *dst = int32_t(cj[key].get<uint64_t>());
  }
  if (!ls_gpt2_q8_config_valid(&c)) {
    fail("config (" + config_text(c) +
         ") is not a usable int8 GPT-2 (n_embd must be a multiple of 64)");
  }
  const uint64_t bytes = ls_gpt2_q8_bytes(&c);
  if (h["words"].get<uint64_t>() != bytes || k.payload_bytes != bytes) {
    fail("payload is " + std::to_string(k.payload_bytes) +
         " bytes and the header says " + h["words"].dump() + "; " +
         config_text(c) + " has " + std::to_string(bytes));
  }
  const std::vector<Gpt2Q8Tensor> table = gpt2_q8_tensor_table(c);
  const nlohmann::json& tj = h["tensors"];
  if (tj.size() != table.size()) {
    fail("tensor table has " + std::to_string(tj.size()) + " entries, " +
         config_text(c) + " has " + std::to_string(table.size()));
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const Gpt2Q8Tensor& want = table[i];
    const nlohmann::json& t = tj[i];
    const nlohmann::json expect = {{"name", want.name},
                                   {"dtype", want.dtype},
                                   {"shape", want.shape},
                                   {"offset", want.offset},
                                   {"bytes", want.bytes}};
    if (t != expect) {
      fail("tensor table entry " + std::to_string(i) + " is " + t.dump() +
           ", expected " + expect.dump() + " (docs/int8.md)");
    }
  }
  if (verify_digest) check_payload_digest(k, file, path);
  const uint8_t* p = map->data() + k.payload_offset;
  for (size_t i = 0; i < table.size(); ++i) {
    const Gpt2Q8Tensor& t = table[i];
    const uint8_t* at = p + t.offset;
    const uint64_t end =
        i + 1 < table.size() ? table[i + 1].offset : ls_gpt2_q8_bytes(&c);
    for (uint64_t b = t.offset + t.bytes; b < end; ++b) {
      if (p[b] != 0) fail("padding after '" + t.name + "' is not zero");
    }
    if (t.dtype == "f32") {
      if (!ls_gpt2_weights_finite(reinterpret_cast<const float*>(at),
                                  t.bytes / 4)) {
        fail("tensor '" + t.name + "' has a non-finite value");
      }
    } else {
      const auto [K, N] = q8_kn(t, i);
      if (!ls_q8_matrix_valid(at, K, N)) {
        fail("tensor '" + t.name +
             "' has a level -128 or a scale that is negative or not "
             "finite (corrupt int8 weights)");
      }
    }
  }
  Gpt2Weights w;
  w.config = c;
  w.source = path;
  w.format = "packed";
  w.quant = "int8";
  w.payload_sha256 = to_hex(k.payload_sha256);
  w.plain_sha256 = k.plain_sha256;
  w.meta = h.value("meta", nlohmann::json::object());
  const size_t offset = size_t(k.payload_offset);
  Gpt2Q8Builder::set(w, std::move(map), offset, size_t(bytes));
  return w;
}

Gpt2Weights load_gpt2_any(const std::string& path, bool verify_digest) {
  return is_gpt2_q8_file(path) ? load_gpt2_q8(path, verify_digest)
                               : load_gpt2(path, verify_digest);
}

void write_gpt2_q8(const std::string& out, const ls_gpt2_config& c,
                   const float* plain, const nlohmann::json& meta,
                   const std::string& source_plain_sha256,
                   const Gpt2Progress& progress) {
  const std::vector<Gpt2Q8Tensor> table = gpt2_q8_tensor_table(c);
  const std::vector<TensorInfo> f32 = gpt2_tensor_table(c);
  const size_t words = ls_gpt2_param_count(&c);
  if (!ls_gpt2_weights_finite(plain, words)) {
    throw Error("cannot write '" + out + "': a weight is not finite");
  }
  const std::string plain_hex = source_plain_sha256.empty()
                                    ? to_hex(sha256(plain, words * 4))
                                    : source_plain_sha256;
  const std::string text = q8_header(c, table, meta, plain_hex);
  const uint64_t total = ls_gpt2_q8_bytes(&c);
  uint8_t fixed[kCheckpointFixedBytes] = {};
  std::memcpy(fixed, kCheckpointMagic, 8);
  put_u32(fixed + 8, kCheckpointVersionLayout);
  put_u32(fixed + 12, uint32_t(text.size()));
  put_u64(fixed + 16, total);  // the digest (24..56) below
  // The file is built in memory (0.13 GB for 124M), then written by
  // write_file_atomic (PATH.tmp.<pid>, synced, renamed), so the digest is
  // in place before a byte is written and the file appears only whole.
  std::vector<uint8_t> bytes(sizeof fixed + text.size() + size_t(total), 0);
  uint8_t* payload = bytes.data() + sizeof fixed + text.size();
  if (progress) progress(0, total);
  for (size_t i = 0; i < table.size(); ++i) {
    quantize_entry(c, table[i], i, plain + f32[i].offset,
                   payload + table[i].offset);  // padding stays zero
    if (progress) progress(table[i].offset + table[i].bytes, total);
  }
  const Sha256 digest = sha256(payload, size_t(total));
  std::memcpy(fixed + 24, digest.data(), digest.size());
  std::memcpy(bytes.data(), fixed, sizeof fixed);
  std::memcpy(bytes.data() + sizeof fixed, text.data(), text.size());
  write_file_atomic(out, bytes);
  if (progress) progress(total, total);
}

void convert_gpt2_q8(const std::string& in, const std::string& out,
                     const Gpt2Progress& progress) {
  if (is_gpt2_q8_file(in)) {
    throw Error("convert: '" + in +
                "' is already int8; quantize from the binary32 model (an "
                "HF folder or a packed binary32 file)");
  }
  const Gpt2Weights w = load_gpt2(in);
  if (!ls_gpt2_q8_config_valid(&w.config)) gpt2_q8_tensor_table(w.config);
  std::vector<float> plain;
  const float* src = w.data();
  if (w.layout == LS_GPT2_LAYOUT_PANEL64) {
    plain.resize(w.words());
    ls_gpt2_from_panels(&w.config, w.data(), plain.data());
    src = plain.data();
  }
  nlohmann::json meta = w.meta.is_object() ? w.meta : nlohmann::json::object();
  meta["quantized_from"] = {{"source", w.source},
                            {"format", w.format},
                            {"layout", gpt2_layout_name(w.layout)},
                            {"payload_sha256", w.payload_sha256}};
  write_gpt2_q8(out, w.config, src, meta, w.plain_sha256, progress);
}

}  // namespace lockstep
