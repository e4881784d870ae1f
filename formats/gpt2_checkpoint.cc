#include "formats/gpt2_checkpoint.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "formats/bounded_json.h"
#include "formats/safetensors.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "ls_sampler.h"

static_assert(std::endian::native == std::endian::little,
              "lockstep reads little-endian payloads in place");

namespace lockstep {

// Builds Gpt2Weights (the friend named in the header).
struct Gpt2WeightsBuilder {
  static void set_mapped(Gpt2Weights& w, std::unique_ptr<MappedFile> map,
                         size_t payload_offset, size_t words) {
    w.map_ = std::move(map);
    w.payload_offset_ = payload_offset;
    w.words_ = words;
    w.owned_.clear();
  }
  static void set_owned(Gpt2Weights& w, std::vector<float> words) {
    w.map_.reset();
    w.payload_offset_ = 0;
    w.words_ = words.size();
    w.owned_ = std::move(words);
  }
};

const float* Gpt2Weights::data() const {
  if (map_) {
    return reinterpret_cast<const float*>(map_->data() + payload_offset_);
  }
  return owned_.data();
}

namespace {

namespace fs = std::filesystem;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string config_text(const ls_gpt2_config& c) {
  return "n_vocab=" + std::to_string(c.n_vocab) +
         ", n_ctx=" + std::to_string(c.n_ctx) +
         ", n_embd=" + std::to_string(c.n_embd) +
         ", n_head=" + std::to_string(c.n_head) +
         ", n_layer=" + std::to_string(c.n_layer);
}

std::string float_text(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a (bits 0x%08x)", double(v),
                std::bit_cast<uint32_t>(v));
  return buf;
}

nlohmann::json config_json(const ls_gpt2_config& c) {
  return {{"n_vocab", c.n_vocab},
          {"n_ctx", c.n_ctx},
          {"n_embd", c.n_embd},
          {"n_head", c.n_head},
          {"n_layer", c.n_layer}};
}

// Index of the first non-finite of w[0..n), or n.
size_t first_non_finite(const float* w, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(w[i])) return i;
  }
  return n;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ------------------------------------------------------------ layouts

// How the panel64 layout stores a table entry: as the panels of the matrix
// M [K, N] (wte: the head wte^T [C, V]; a block matrix: itself), or
// unchanged (permuted false).
struct PanelShape {
  bool permuted = false;
  bool head = false;  // wte: plain word v*C + k is M's (k, v)
  uint64_t K = 0, N = 0;
};

PanelShape panel_shape(const ls_gpt2_config& c, const TensorInfo& t) {
  PanelShape s;
  if (t.name == "wte") {
    s.permuted = s.head = true;
    s.K = uint64_t(c.n_embd);
    s.N = uint64_t(c.n_vocab);
  } else if (ends_with(t.name, ".w") && t.shape.size() == 2) {
    s.permuted = true;
    s.K = uint64_t(t.shape[0]);
    s.N = uint64_t(t.shape[1]);
  }
  return s;
}

constexpr uint64_t kPanel = LS_GPT2_PANEL;

// M's element (r, col) in the panels: panel col / 64 starts at word
// (col / 64) * 64 * K and holds its rows of pw = min(64, N - 64p) words.
uint64_t panel_word(const PanelShape& s, uint64_t r, uint64_t col) {
  const uint64_t c0 = col / kPanel * kPanel;
  const uint64_t pw = std::min(kPanel, s.N - c0);
  return c0 * s.K + r * pw + (col - c0);
}

// Plain words [start, start + n) of a permuted tensor, gathered from its
// panels `stored` into dst.
void gather_plain(const PanelShape& s, const float* stored, uint64_t start,
                  size_t n, float* dst) {
  uint64_t i = start;
  const uint64_t end = start + n;
  if (s.head) {
    while (i < end) {  // plain wte[v][k] = M(k, v): stride pw in the panel
      const uint64_t v = i / s.K, k = i % s.K;
      const uint64_t c0 = v / kPanel * kPanel;
      const uint64_t pw = std::min(kPanel, s.N - c0);
      const float* src = stored + c0 * s.K + (v - c0);
      const uint64_t stop = std::min(end, (v + 1) * s.K);
      for (uint64_t kk = k; i < stop; ++i, ++kk) *dst++ = src[kk * pw];
    }
    return;
  }
  while (i < end) {  // plain W[r][col]: runs of up to 64 contiguous words
    const uint64_t r = i / s.N, col = i % s.N;
    const uint64_t c0 = col / kPanel * kPanel;
    const uint64_t run =
        std::min(c0 + std::min(kPanel, s.N - c0) - col, end - i);
    std::memcpy(dst, stored + panel_word(s, r, col), run * 4);
    dst += run;
    i += run;
  }
}

// ------------------------------------------------------------ HF config

struct HfConfig {
  ls_gpt2_config c{};
  bool tied = true;  // tie_word_embeddings
};

HfConfig parse_hf_config_bytes(std::span<const uint8_t> text,
                               const std::string& path) {
  auto fail = [&path](const std::string& what) {
    throw Error("config '" + path + "': " + what);
  };
  nlohmann::json j;
  try {
    j = parse_bounded_json(text.begin(), text.end());
  } catch (const JsonTooDeep&) {
    fail(json_too_deep_text());
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail("not a JSON object");
  auto get_int = [&](const char* key) -> int32_t {
    if (!j.contains(key)) fail(std::string("lacks the key '") + key + "'");
    const auto& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 ||
        v.get<int64_t>() > INT32_MAX) {
      fail(std::string("'") + key + "' is " + v.dump() +
           ", not a positive integer");
    }
    return int32_t(v.get<int64_t>());
  };
  if (j.contains("model_type") && j["model_type"] != "gpt2") {
    fail("model_type is " + j["model_type"].dump() + ", not \"gpt2\"");
  }
  HfConfig h;
  h.c.n_vocab = get_int("vocab_size");
  h.c.n_embd = get_int("n_embd");
  h.c.n_head = get_int("n_head");
  h.c.n_layer = get_int("n_layer");
  if (j.contains("n_positions")) {
    h.c.n_ctx = get_int("n_positions");
    if (j.contains("n_ctx") && get_int("n_ctx") != h.c.n_ctx) {
      fail("n_positions " + std::to_string(h.c.n_ctx) + " and n_ctx " +
           j["n_ctx"].dump() + " differ");
    }
  } else if (j.contains("n_ctx")) {
    h.c.n_ctx = get_int("n_ctx");
  } else {
    fail("lacks the key 'n_positions' (or 'n_ctx')");
  }
  if (j.contains("layer_norm_epsilon")) {
    const auto& e = j["layer_norm_epsilon"];
    if (!e.is_number() || e.get<double>() != 1e-5) {
      fail("layer_norm_epsilon is " + e.dump() +
           "; lockstep's LayerNorm (docs/arithmetic.md §2.3) uses 1e-5");
    }
  }
  if (j.contains("activation_function") &&
      j["activation_function"] != "gelu_new") {
    fail("activation_function is " + j["activation_function"].dump() +
         "; lockstep computes GELU in the tanh form (\"gelu_new\", §3.3)");
  }
  if (j.contains("n_inner") && !j["n_inner"].is_null() &&
      j["n_inner"] != 4 * int64_t(h.c.n_embd)) {
    fail("n_inner is " + j["n_inner"].dump() +
         "; lockstep's MLP is 4 * n_embd");
  }
  if (j.contains("scale_attn_weights") && j["scale_attn_weights"] != true) {
    fail("scale_attn_weights must be true (scores are divided by sqrt(D))");
  }
  if (j.contains("scale_attn_by_inverse_layer_idx") &&
      j["scale_attn_by_inverse_layer_idx"] != false) {
    fail("scale_attn_by_inverse_layer_idx must be false");
  }
  if (j.contains("add_cross_attention") && j["add_cross_attention"] != false) {
    fail("add_cross_attention must be false");
  }
  if (j.contains("tie_word_embeddings")) {
    if (!j["tie_word_embeddings"].is_boolean()) {
      fail("tie_word_embeddings is not a boolean");
    }
    h.tied = j["tie_word_embeddings"].get<bool>();
  }
  if (!ls_gpt2_config_valid(&h.c)) {
    fail("the sizes (" + config_text(h.c) +
         ") are not a usable GPT-2 (n_embd must be a multiple of n_head; "
         "see ls_gpt2_config_valid for the limits)");
  }
  return h;
}

HfConfig parse_hf_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("config '" + path + "': cannot open for reading");
  const std::vector<uint8_t> text((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  return parse_hf_config_bytes(text, path);
}

// ------------------------------------------------------------ HF source

struct HfSource {
  HfConfig cfg;
  SafetensorsFile st;
  std::vector<TensorInfo> table;
  std::vector<const SafetensorsTensor*> src;  // per table entry
  const SafetensorsTensor* lm_head = nullptr;
  std::vector<std::string> dtypes;  // distinct source dtypes, sorted

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("safetensors '" + st.path() + "': " + what);
  }

  // Widens words [start, start + n) of table entry i into dst and checks
  // that they are finite.
  void fill(size_t i, uint64_t start, size_t n, float* dst) const {
    const SafetensorsTensor& t = *src[i];
    widen_to_f32(t.dtype, t.data + start * st_dtype_bytes(t.dtype), n, dst);
    const size_t bad = first_non_finite(dst, n);
    if (bad != n) {
      fail("tensor '" + t.name + "' element " + std::to_string(start + bad) +
           " is " + float_text(dst[bad]) +
           " (non-finite weights are rejected)");
    }
  }

  nlohmann::json meta() const {
    return {{"source", "huggingface-safetensors"}, {"source_dtypes", dtypes}};
  }
};

// "h.<digits>.attn.bias" / "h.<digits>.attn.masked_bias": causal-mask
// buffers some exports carry; lockstep's attention needs no mask tensor.
bool is_mask_buffer(const std::string& key) {
  if (key.rfind("h.", 0) != 0) return false;
  size_t i = 2;
  while (i < key.size() && key[i] >= '0' && key[i] <= '9') ++i;
  if (i == 2) return false;
  const std::string rest = key.substr(i);
  return rest == ".attn.bias" || rest == ".attn.masked_bias";
}

std::unique_ptr<HfSource> open_hf(const std::string& path) {
  // (error_code overloads throughout: failures become lockstep::Error.)
  std::error_code ec;
  fs::path dir = path, st_path;
  if (fs::is_directory(dir, ec)) {
    st_path = dir / "model.safetensors";
  } else {
    st_path = dir;
    dir = dir.parent_path();
    if (dir.empty()) dir = ".";
  }
  const fs::path cfg_path = dir / "config.json";
  if (!fs::exists(st_path, ec)) {
    if (fs::exists(dir / "model.safetensors.index.json", ec)) {
      throw Error("HF checkpoint '" + dir.string() +
                  "' is sharded (model.safetensors.index.json); lockstep "
                  "reads a single model.safetensors");
    }
    throw Error("HF checkpoint '" + dir.string() +
                "' has no model.safetensors");
  }
  if (!fs::exists(cfg_path, ec)) {
    throw Error("HF checkpoint '" + dir.string() + "' has no config.json");
  }
  auto h = std::make_unique<HfSource>();
  h->cfg = parse_hf_config(cfg_path.string());
  h->st = SafetensorsFile::open(st_path.string());
  const ls_gpt2_config& c = h->cfg.c;
  h->table = gpt2_tensor_table(c);

  std::map<std::string, size_t> want;  // HF key without prefix -> entry
  for (size_t i = 0; i < h->table.size(); ++i) {
    want.emplace(gpt2_hf_key(h->table[i].name), i);
  }
  h->src.assign(h->table.size(), nullptr);
  const std::string prefix = "transformer.";
  std::set<std::string> dtypes;
  for (const auto& t : h->st.tensors()) {
    if (t.name == "lm_head.weight") {
      h->lm_head = &t;
      continue;
    }
    const std::string key =
        t.name.rfind(prefix, 0) == 0 ? t.name.substr(prefix.size()) : t.name;
    const auto it = want.find(key);
    if (it == want.end()) {
      if (is_mask_buffer(key)) continue;
      h->fail("tensor '" + t.name + "' is not part of a GPT-2 with " +
              config_text(c) + " (wrong config, or not a GPT-2 checkpoint)");
    }
    const SafetensorsTensor*& slot = h->src[it->second];
    if (slot != nullptr) {
      h->fail("tensors '" + slot->name + "' and '" + t.name +
              "' are both present (one key, two spellings)");
    }
    slot = &t;
  }
  for (size_t i = 0; i < h->table.size(); ++i) {
    const TensorInfo& ti = h->table[i];
    const SafetensorsTensor* t = h->src[i];
    const std::string key = gpt2_hf_key(ti.name);
    if (t == nullptr) {
      h->fail("missing tensor '" + key + "' (or '" + prefix + key +
              "'), needed for a GPT-2 with " + config_text(c));
    }
    std::vector<int64_t> shape(t->shape.begin(), t->shape.end());
    if (shape != ti.shape) {
      h->fail("tensor '" + t->name + "' has shape " + shape_text(shape) +
              ", expected " + shape_text(ti.shape) + " for " + config_text(c) +
              " (Conv1D weights are [in, out])");
    }
    if (t->dtype != StDtype::kF32 && t->dtype != StDtype::kF16 &&
        t->dtype != StDtype::kBF16) {
      h->fail("tensor '" + t->name + "' has dtype " + st_dtype_name(t->dtype) +
              "; lockstep reads F32, F16, BF16");
    }
    dtypes.insert(st_dtype_name(t->dtype));
  }
  h->dtypes.assign(dtypes.begin(), dtypes.end());

  // The output head is wte (docs/arithmetic.md §6): a stored lm_head must be
  // the same numbers, bit for bit after widening.
  const SafetensorsTensor* wte = h->src[0];
  if (h->lm_head == nullptr) {
    if (!h->cfg.tied) {
      h->fail(
          "config.json says tie_word_embeddings is false but there is no "
          "lm_head.weight");
    }
  } else {
    const SafetensorsTensor& lm = *h->lm_head;
    if (lm.shape != wte->shape) {
      h->fail("tensor 'lm_head.weight' has shape " +
              shape_text({lm.shape.begin(), lm.shape.end()}) + ", not wte's");
    }
    if (lm.dtype != StDtype::kF32 && lm.dtype != StDtype::kF16 &&
        lm.dtype != StDtype::kBF16) {
      h->fail("tensor 'lm_head.weight' has dtype " +
              std::string(st_dtype_name(lm.dtype)));
    }
    constexpr size_t kChunk = 1 << 16;
    std::vector<float> a(kChunk), b(kChunk);
    const uint64_t n = wte->elements();
    for (uint64_t s = 0; s < n; s += kChunk) {
      const size_t k = size_t(std::min<uint64_t>(kChunk, n - s));
      widen_to_f32(wte->dtype, wte->data + s * st_dtype_bytes(wte->dtype), k,
                   a.data());
      widen_to_f32(lm.dtype, lm.data + s * st_dtype_bytes(lm.dtype), k,
                   b.data());
      if (std::memcmp(a.data(), b.data(), k * 4) != 0) {
        size_t i = 0;
        while (std::memcmp(&a[i], &b[i], 4) == 0) ++i;
        h->fail("tensor 'lm_head.weight' differs from '" + wte->name +
                "' at element " + std::to_string(s + i) + ": " +
                float_text(b[i]) + " vs " + float_text(a[i]) +
                " (lockstep's output head is tied to wte)");
      }
    }
  }
  return h;
}

// ------------------------------------------------------------ packed writer

using FillFn =
    std::function<void(size_t index, uint64_t start, size_t n, float* dst)>;

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

constexpr char kPlainPlaceholder[] =
    "0000000000000000000000000000000000000000000000000000000000000000";

// The JSON header text, padded, exactly as encode_checkpoint writes it. A
// panel64 header carries "layout" and "plain_sha256" (written as 64 zeros
// here; the writer fills it in last, at *plain_at bytes into the text).
std::string packed_header(const ls_gpt2_config& c,
                          const std::vector<TensorInfo>& table, uint64_t words,
                          const nlohmann::json& meta, ls_gpt2_layout layout,
                          size_t* plain_at) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : table) {
    tensors.push_back(
        {{"name", t.name}, {"shape", t.shape}, {"offset", t.offset}});
  }
  nlohmann::json header = {{"model", "gpt2"},          {"dtype", "f32"},
                           {"config", config_json(c)}, {"tensors", tensors},
                           {"words", words},           {"meta", meta}};
  if (layout != LS_GPT2_LAYOUT_PLAIN) {
    header["layout"] = gpt2_layout_name(layout);
    header["plain_sha256"] = kPlainPlaceholder;
  }
  std::string text = header.dump();
  if (layout != LS_GPT2_LAYOUT_PLAIN) {
    const std::string key = std::string("\"plain_sha256\":\"");
    const size_t at = text.find(key + kPlainPlaceholder);
    if (at == std::string::npos) throw Error("internal: plain_sha256 slot");
    *plain_at = at + key.size();
  }
  while ((kCheckpointFixedBytes + text.size()) % 64 != 0) text.push_back(' ');
  return text;
}

struct EvpSha256 {
  EvpSha256() : ctx(EVP_MD_CTX_new()) {
    if (ctx == nullptr || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
      throw Error("SHA-256 initialisation failed");
    }
  }
  ~EvpSha256() { EVP_MD_CTX_free(ctx); }
  void update(const void* p, size_t n) {
    if (EVP_DigestUpdate(ctx, p, n) != 1) throw Error("SHA-256 failed");
  }
  Sha256 final() {
    Sha256 d{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx, d.data(), &len) != 1 || len != 32) {
      throw Error("SHA-256 failed");
    }
    return d;
  }
  EVP_MD_CTX* ctx;
};

// Writes a packed file in `layout` from `fill`, which gives the plain words
// of each table entry (any range). A permuted matrix is filled whole (or,
// wte, 64 vocabulary rows at a time) and panelized; everything else goes
// through in chunks. `expect_plain` (hex, or empty): the plain payload's
// digest must come out as this, or nothing is written.
void write_packed_stream(const std::string& out, const ls_gpt2_config& c,
                         const std::vector<TensorInfo>& table,
                         const nlohmann::json& meta, const FillFn& fill,
                         const Gpt2Progress& progress,
                         ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN,
                         const std::string& expect_plain = "") {
  const uint64_t words = ls_gpt2_param_count(&c);
  size_t plain_at = 0;
  const std::string text =
      packed_header(c, table, words, meta, layout, &plain_at);
  uint8_t fixed[kCheckpointFixedBytes] = {};
  std::memcpy(fixed, kCheckpointMagic, 8);
  put_u32(fixed + 8, layout == LS_GPT2_LAYOUT_PLAIN ? kCheckpointVersion
                                                    : kCheckpointVersionLayout);
  put_u32(fixed + 12, uint32_t(text.size()));
  put_u64(fixed + 16, words * 4);  // the digest (24..56) is written last

  AtomicFile file(out);
  file.write(fixed, sizeof fixed);
  file.write(text.data(), text.size());
  EvpSha256 hash, plain_hash;
  constexpr size_t kChunk = 1 << 20;  // words per write: 4 MiB
  std::vector<float> buf(kChunk);
  size_t pos = 0;
  uint64_t done = 0;
  auto flush = [&] {
    hash.update(buf.data(), pos * 4);
    file.write(buf.data(), pos * 4);
    done += pos;
    pos = 0;
    if (progress) progress(done, words);
  };
  if (progress) progress(0, words);
  if (layout == LS_GPT2_LAYOUT_PLAIN) {
    for (size_t i = 0; i < table.size(); ++i) {
      const uint64_t n = table[i].words();
      for (uint64_t s = 0; s < n;) {
        const size_t k = size_t(std::min<uint64_t>(n - s, kChunk - pos));
        fill(i, s, k, buf.data() + pos);
        pos += k;
        s += k;
        if (pos == kChunk) flush();
      }
    }
  } else {
    // Appends stored words to the output.
    auto emit = [&](const float* p, size_t n) {
      while (n > 0) {
        const size_t k = std::min(n, kChunk - pos);
        std::memcpy(buf.data() + pos, p, k * 4);
        pos += k;
        p += k;
        n -= k;
        if (pos == kChunk) flush();
      }
    };
    uint64_t biggest = kChunk;
    for (const auto& t : table) {
      const PanelShape ps = panel_shape(c, t);
      if (ps.permuted && !ps.head) biggest = std::max(biggest, t.words());
    }
    std::vector<float> plain(biggest), panels(biggest);
    for (size_t i = 0; i < table.size(); ++i) {
      const PanelShape ps = panel_shape(c, table[i]);
      const uint64_t n = table[i].words();
      if (ps.head) {  // 64 vocabulary rows of wte = one panel of wte^T
        for (uint64_t v0 = 0; v0 < ps.N; v0 += kPanel) {
          const size_t pw = size_t(std::min(kPanel, ps.N - v0));
          fill(i, v0 * ps.K, pw * ps.K, plain.data());
          plain_hash.update(plain.data(), pw * ps.K * 4);
          ls_panelize(plain.data(), ps.K, pw, 1, ps.K, panels.data());
          emit(panels.data(), pw * ps.K);
        }
      } else if (ps.permuted) {
        fill(i, 0, n, plain.data());
        plain_hash.update(plain.data(), n * 4);
        ls_panelize(plain.data(), ps.K, ps.N, ps.N, 1, panels.data());
        emit(panels.data(), n);
      } else {
        for (uint64_t s = 0; s < n;) {
          const size_t k = size_t(std::min<uint64_t>(n - s, kChunk));
          fill(i, s, k, plain.data());
          plain_hash.update(plain.data(), k * 4);
          emit(plain.data(), k);
          s += k;
        }
      }
    }
  }
  if (pos > 0) flush();
  if (done != words) throw Error("internal: packed layout does not add up");
  const Sha256 digest = hash.final();
  const std::string plain_hex = layout == LS_GPT2_LAYOUT_PLAIN
                                    ? to_hex(digest)
                                    : to_hex(plain_hash.final());
  if (!expect_plain.empty() && plain_hex != expect_plain) {
    throw Error("cannot write '" + out + "': the weights' plain-layout " +
                "SHA-256 came out as " + plain_hex + ", the source says " +
                expect_plain + " (the source is corrupt)");
  }
  file.pwrite(digest.data(), digest.size(), 24);
  if (layout != LS_GPT2_LAYOUT_PLAIN) {
    file.pwrite(plain_hex.data(), plain_hex.size(),
                kCheckpointFixedBytes + plain_at);
  }
  file.commit();
}

// ------------------------------------------------------------ packed reader

Gpt2Weights read_packed(std::unique_ptr<MappedFile> map, bool verify) {
  const std::string path = map->path();
  Gpt2PackedView v =
      parse_gpt2_packed({map->data(), map->size()}, path, verify);
  Gpt2Weights out;
  out.config = v.config;
  out.source = path;
  out.format = "packed";
  out.payload_sha256 = std::move(v.payload_sha256);
  out.plain_sha256 = std::move(v.plain_sha256);
  out.layout = v.layout;
  out.meta = std::move(v.meta);
  Gpt2WeightsBuilder::set_mapped(out, std::move(map), v.payload_offset,
                                 v.words);
  return out;
}

Gpt2Weights load_hf(const std::string& path) {
  const auto h = open_hf(path);
  std::vector<float> w(ls_gpt2_param_count(&h->cfg.c));
  for (size_t i = 0; i < h->table.size(); ++i) {
    h->fill(i, 0, h->table[i].words(), w.data() + h->table[i].offset);
  }
  Gpt2Weights out;
  out.config = h->cfg.c;
  out.source = path;
  out.format = "hf";
  out.payload_sha256 = to_hex(sha256(w.data(), w.size() * 4));
  out.plain_sha256 = out.payload_sha256;
  out.meta = h->meta();
  Gpt2WeightsBuilder::set_owned(out, std::move(w));
  return out;
}

// ------------------------------------------------------------ random

uint64_t fnv1a64(const std::string& s) {
  uint64_t x = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) {
    x ^= ch;
    x *= 0x100000001b3ull;
  }
  return x;
}

}  // namespace

std::vector<TensorInfo> gpt2_tensor_table(const ls_gpt2_config& c) {
  if (!ls_gpt2_config_valid(&c)) {
    throw Error("GPT-2 config (" + config_text(c) + ") is not usable");
  }
  const int64_t C = c.n_embd;
  std::vector<TensorInfo> t;
  auto add = [&t](std::string name, std::vector<int64_t> shape, size_t at) {
    TensorInfo i;
    i.name = std::move(name);
    i.shape = std::move(shape);
    i.offset = at;
    t.push_back(std::move(i));
  };
  add("wte", {c.n_vocab, C}, 0);
  add("wpe", {c.n_ctx, C}, ls_gpt2_wpe_offset(&c));
  for (int l = 0; l < c.n_layer; ++l) {
    const ls_gpt2_block b = ls_gpt2_block_offsets(&c, l);
    std::string h = "h";  // (not "h" + ...: GCC 12 -Wrestrict false alarm)
    h += std::to_string(l);
    h += '.';
    add(h + "ln_1.g", {C}, b.ln1_g);
    add(h + "ln_1.b", {C}, b.ln1_b);
    add(h + "attn.c_attn.w", {C, 3 * C}, b.attn_w);
    add(h + "attn.c_attn.b", {3 * C}, b.attn_b);
    add(h + "attn.c_proj.w", {C, C}, b.proj_w);
    add(h + "attn.c_proj.b", {C}, b.proj_b);
    add(h + "ln_2.g", {C}, b.ln2_g);
    add(h + "ln_2.b", {C}, b.ln2_b);
    add(h + "mlp.c_fc.w", {C, 4 * C}, b.fc_w);
    add(h + "mlp.c_fc.b", {4 * C}, b.fc_b);
    add(h + "mlp.c_proj.w", {4 * C, C}, b.out_w);
    add(h + "mlp.c_proj.b", {C}, b.out_b);
  }
  const size_t f = ls_gpt2_lnf_offset(&c);
  add("ln_f.g", {C}, f);
  add("ln_f.b", {C}, f + size_t(C));
  // One source of truth, checked: core's offsets must tile the payload.
  uint64_t next = 0;
  for (const auto& i : t) {
    if (i.offset != next) {
      throw Error("internal: core/ls_gpt2 offset of '" + i.name + "' is " +
                  std::to_string(i.offset) + ", expected " +
                  std::to_string(next));
    }
    next += i.words();
  }
  if (next != ls_gpt2_param_count(&c)) {
    throw Error("internal: core/ls_gpt2 tensors cover " + std::to_string(next) +
                " words, ls_gpt2_param_count says " +
                std::to_string(ls_gpt2_param_count(&c)));
  }
  return t;
}

std::string gpt2_hf_key(const std::string& name) {
  std::string base = name;
  if (name.size() > 1 && name[0] == 'h' && name[1] >= '0' && name[1] <= '9') {
    base = "h." + name.substr(1);
  }
  if (ends_with(base, ".g") || ends_with(base, ".w")) {
    return base.substr(0, base.size() - 2) + ".weight";
  }
  if (ends_with(base, ".b")) return base.substr(0, base.size() - 2) + ".bias";
  return base + ".weight";  // wte, wpe
}

ls_gpt2_config read_hf_gpt2_config(const std::string& config_json_path) {
  return parse_hf_config(config_json_path).c;
}

ls_gpt2_config parse_hf_gpt2_config(std::span<const uint8_t> config_json,
                                    const std::string& name) {
  return parse_hf_config_bytes(config_json, name).c;
}

Gpt2PackedView parse_gpt2_packed(std::span<const uint8_t> file,
                                 const std::string& path, bool verify) {
  auto fail = [&path](const std::string& what) {
    throw Error("checkpoint '" + path + "': " + what);
  };
  if (reinterpret_cast<uintptr_t>(file.data()) % alignof(float) != 0) {
    throw Error("checkpoint '" + path +
                "': internal: the bytes are not aligned for binary32 reads");
  }
  const CheckpointContainer k = parse_checkpoint_container(file, path);
  const nlohmann::json& header = k.header;
  const uint64_t p = k.payload_bytes;
  if (header["model"] != "gpt2") {
    fail("model is " + header["model"].dump() + ", not \"gpt2\"");
  }
  if (header["dtype"] != "f32") {
    fail("dtype is " + header["dtype"].dump() +
         ", not \"f32\" (GPT-2 weights are binary32)");
  }
  // The weight layout (the container checked version 1 has none and
  // version 2 names one, with a string plain_sha256).
  ls_gpt2_layout layout = LS_GPT2_LAYOUT_PLAIN;
  std::string plain_hex;
  if (k.version == kCheckpointVersionLayout) {
    const std::string& name = k.layout;
    if (name == "plain") {
      layout = LS_GPT2_LAYOUT_PLAIN;
    } else if (name == "panel64") {
      layout = LS_GPT2_LAYOUT_PANEL64;
    } else {
      fail("unknown weight layout '" + name +
           "' (this build reads plain and panel64; a newer lockstep may "
           "have written it)");
    }
    bool hex = k.plain_sha256.size() == 64;
    for (char ch : k.plain_sha256) {
      hex = hex && ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'));
    }
    if (!hex) {
      fail("format version 2 needs 'plain_sha256', 64 lowercase hex digits");
    }
    plain_hex = k.plain_sha256;
  }
  const nlohmann::json& cj = header["config"];
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
  if (!ls_gpt2_config_valid(&c)) {
    fail("config (" + config_text(c) + ") is not a usable GPT-2");
  }
  const uint64_t words = ls_gpt2_param_count(&c);
  if (header["words"].get<uint64_t>() != words) {
    fail("header says " + header["words"].dump() + " words but " +
         config_text(c) + " has " + std::to_string(words));
  }
  if (p != words * 4) {
    fail("payload is " + std::to_string(p) + " bytes, expected " +
         std::to_string(words * 4) + " (" + std::to_string(words) +
         " binary32 words)");
  }
  const std::vector<TensorInfo> table = gpt2_tensor_table(c);
  const nlohmann::json& tj = header["tensors"];
  if (tj.size() != table.size()) {
    fail("tensor table has " + std::to_string(tj.size()) + " entries, " +
         config_text(c) + " has " + std::to_string(table.size()));
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const nlohmann::json& t = tj[i];
    const TensorInfo& want = table[i];
    bool ok = t.is_object() && t.contains("name") && t["name"].is_string() &&
              t["name"] == want.name && t.contains("shape") &&
              t["shape"].is_array() && t.contains("offset") &&
              t["offset"].is_number_unsigned() &&
              t["offset"].get<uint64_t>() == want.offset &&
              t["shape"].size() == want.shape.size();
    for (size_t d = 0; ok && d < want.shape.size(); ++d) {
      ok = t["shape"][d].is_number_unsigned() &&
           t["shape"][d].get<uint64_t>() == uint64_t(want.shape[d]);
    }
    if (!ok) {
      fail("tensor table entry " + std::to_string(i) + " is " + t.dump() +
           ", expected '" + want.name + "' " + shape_text(want.shape) +
           " at word " + std::to_string(want.offset) +
           " (docs/gpt2-format.md)");
    }
  }
  const size_t payload_offset = size_t(k.payload_offset);
  const uint8_t* payload = file.data() + payload_offset;
  const Sha256& stored = k.payload_sha256;
  if (verify) check_payload_digest(k, file, path);
  if (layout == LS_GPT2_LAYOUT_PLAIN && !plain_hex.empty() &&
      plain_hex != to_hex(stored)) {
    fail("plain_sha256 " + plain_hex + " differs from the payload's " +
         to_hex(stored) + " in a plain-layout file");
  }
  // Finiteness does not depend on the order of the words.
  const float* w = reinterpret_cast<const float*>(payload);
  if (!ls_gpt2_weights_finite(w, words)) {
    const size_t bad = first_non_finite(w, words);
    size_t t = table.size() - 1;
    while (table[t].offset > bad) --t;
    const uint64_t at = bad - table[t].offset;
    std::string where = "element " + std::to_string(at);
    if (layout == LS_GPT2_LAYOUT_PANEL64 && panel_shape(c, table[t]).permuted) {
      where = "stored word " + std::to_string(at) + ", plain element " +
              std::to_string(gpt2_panel64_plain_index(c, table[t], at));
    }
    fail("weight " + std::to_string(bad) + " (tensor '" + table[t].name + "' " +
         where + ") is " + float_text(w[bad]) +
         " (non-finite weights are rejected)");
  }
  Gpt2PackedView v;
  v.config = c;
  v.layout = layout;
  v.payload_offset = payload_offset;
  v.words = words;
  v.payload_sha256 = to_hex(stored);
  v.plain_sha256 = plain_hex.empty() ? v.payload_sha256 : plain_hex;
  v.meta = header.value("meta", nlohmann::json::object());
  return v;
}

Gpt2Weights load_gpt2(const std::string& path, bool verify_digest) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return load_hf(path);
  if (ends_with(path, ".safetensors")) return load_hf(path);
  auto map = std::make_unique<MappedFile>(MappedFile::open(path));
  if (map->size() < 8 || std::memcmp(map->data(), kCheckpointMagic, 8) != 0) {
    throw Error("checkpoint '" + path +
                "': bad magic at offset 0 (expected 'LOCKSTEP'): neither a "
                "lockstep checkpoint nor a Hugging Face folder (config.json + "
                "model.safetensors)");
  }
  return read_packed(std::move(map), verify_digest);
}

const char* gpt2_layout_name(ls_gpt2_layout layout) {
  switch (layout) {
    case LS_GPT2_LAYOUT_PLAIN:
      return "plain";
    case LS_GPT2_LAYOUT_PANEL64:
      return "panel64";
  }
  throw Error("unknown GPT-2 weight layout " + std::to_string(int(layout)));
}

ls_gpt2_layout gpt2_layout_from_name(const std::string& name) {
  if (name == "plain") return LS_GPT2_LAYOUT_PLAIN;
  if (name == "panel64") return LS_GPT2_LAYOUT_PANEL64;
  throw Error("unknown GPT-2 weight layout '" + name + "' (plain or panel64)");
}

uint64_t gpt2_panel64_index(const ls_gpt2_config& c, const TensorInfo& t,
                            uint64_t i) {
  const PanelShape s = panel_shape(c, t);
  if (!s.permuted) return i;
  return s.head ? panel_word(s, i % s.K, i / s.K)
                : panel_word(s, i / s.N, i % s.N);
}

uint64_t gpt2_panel64_plain_index(const ls_gpt2_config& c, const TensorInfo& t,
                                  uint64_t stored) {
  const PanelShape s = panel_shape(c, t);
  if (!s.permuted) return stored;
  const uint64_t c0 = stored / (kPanel * s.K) * kPanel;
  const uint64_t in = stored - c0 * s.K;
  const uint64_t pw = std::min(kPanel, s.N - c0);
  const uint64_t r = in / pw, col = c0 + in % pw;
  return s.head ? col * s.K + r : r * s.N + col;
}

std::string gpt2_plain_sha256(const Gpt2Weights& w) {
  if (w.layout == LS_GPT2_LAYOUT_PLAIN) {
    return to_hex(sha256(w.data(), w.words() * 4));
  }
  EvpSha256 hash;
  std::vector<float> buf(1 << 20);
  for (const TensorInfo& t : gpt2_tensor_table(w.config)) {
    const PanelShape ps = panel_shape(w.config, t);
    const float* src = w.data() + t.offset;
    for (uint64_t s = 0; s < t.words();) {
      const size_t k = size_t(std::min<uint64_t>(t.words() - s, buf.size()));
      if (ps.permuted) {
        gather_plain(ps, src, s, k, buf.data());
        hash.update(buf.data(), k * 4);
      } else {
        hash.update(src + s, k * 4);
      }
      s += k;
    }
  }
  return to_hex(hash.final());
}

void convert_hf_to_packed(const std::string& hf_dir, const std::string& out,
                          const Gpt2Progress& progress, ls_gpt2_layout layout) {
  const auto h = open_hf(hf_dir);
  h->st.file().advise_sequential(h->st.data_offset(), h->st.data_bytes());
  write_packed_stream(
      out, h->cfg.c, h->table, h->meta(),
      [&h](size_t i, uint64_t s, size_t n, float* dst) {
        h->fill(i, s, n, dst);
      },
      progress, layout);
}

void convert_gpt2(const std::string& in, const std::string& out,
                  ls_gpt2_layout layout, const Gpt2Progress& progress) {
  gpt2_layout_name(layout);  // throws for an unknown one
  std::error_code ec;
  if (fs::is_directory(in, ec) || ends_with(in, ".safetensors")) {
    convert_hf_to_packed(in, out, progress, layout);
    return;
  }
  const Gpt2Weights w = load_gpt2(in);
  const std::vector<TensorInfo> table = gpt2_tensor_table(w.config);
  const float* base = w.data();
  std::vector<PanelShape> shapes;
  for (const auto& t : table) {
    shapes.push_back(w.layout == LS_GPT2_LAYOUT_PANEL64
                         ? panel_shape(w.config, t)
                         : PanelShape{});
  }
  write_packed_stream(
      out, w.config, table, w.meta,
      [&](size_t i, uint64_t s, size_t n, float* dst) {
        const float* src = base + table[i].offset;
        if (shapes[i].permuted) {
          gather_plain(shapes[i], src, s, n, dst);
        } else {
          std::memcpy(dst, src + s, n * 4);
        }
      },
      progress, layout, w.plain_sha256);
}

void write_gpt2_packed(const std::string& out, const ls_gpt2_config& c,
                       const float* words, size_t n_words,
                       const nlohmann::json& meta, ls_gpt2_layout layout) {
  const std::vector<TensorInfo> table = gpt2_tensor_table(c);
  if (n_words != ls_gpt2_param_count(&c)) {
    throw Error("cannot write '" + out + "': " + std::to_string(n_words) +
                " words given, " + config_text(c) + " has " +
                std::to_string(ls_gpt2_param_count(&c)));
  }
  write_packed_stream(
      out, c, table, meta,
      [&](size_t i, uint64_t s, size_t n, float* dst) {
        const float* src = words + table[i].offset + s;
        const size_t bad = first_non_finite(src, n);
        if (bad != n) {
          throw Error("cannot write '" + out + "': tensor '" + table[i].name +
                      "' element " + std::to_string(s + bad) + " is " +
                      float_text(src[bad]) + " (not finite)");
        }
        std::memcpy(dst, src, n * 4);
      },
      {}, layout);
}

namespace {

// Elements [start, start + n) of tensor t of the seeded random checkpoint
// (docs/gpt2-format.md "Random checkpoints"): matrices and embeddings
// small, LayerNorm gains near 1, biases small and nonzero, so every
// parameter changes the logits. Each tensor has its own SplitMix64 stream,
// so a value depends only on the seed, the tensor and its index.
void fill_random(const TensorInfo& t, uint64_t seed, uint64_t start, size_t n,
                 float* dst) {
  double center = 0.0, scale = 0.04;
  if (t.name == "wte") {
    scale = 0.1;
  } else if (t.name == "wpe") {
    scale = 0.02;
  } else if (ends_with(t.name, ".g")) {
    center = 1.0, scale = 0.1;
  } else if (ends_with(t.name, ".b")) {
    scale = 0.02;
  }
  // SplitMix64 advances its state by a constant per draw, so a stream can
  // start at any index.
  uint64_t state =
      (seed ^ fnv1a64(gpt2_hf_key(t.name))) + start * 0x9e3779b97f4a7c15ull;
  for (size_t j = 0; j < n; ++j) {
    const double u = ls_uniform64(&state);
    dst[j] = float(center + scale * (2.0 * u - 1.0));
  }
}

}  // namespace

void random_gpt2_weights(const ls_gpt2_config& c, uint64_t seed, float* dst) {
  for (const TensorInfo& t : gpt2_tensor_table(c)) {
    fill_random(t, seed, 0, t.words(), dst + t.offset);
  }
}

std::vector<float> random_gpt2_weights(const ls_gpt2_config& c, uint64_t seed) {
  std::vector<float> w(ls_gpt2_param_count(&c));
  random_gpt2_weights(c, seed, w.data());
  return w;
}

void write_random_gpt2_safetensors(const std::string& dir,
                                   const ls_gpt2_config& c, uint64_t seed,
                                   const std::string& dtype,
                                   bool prefixed_keys) {
  const auto st_dtype = st_dtype_from_name(dtype);
  if (!st_dtype || (*st_dtype != StDtype::kF32 && *st_dtype != StDtype::kF16 &&
                    *st_dtype != StDtype::kBF16)) {
    throw Error("random GPT-2: dtype '" + dtype +
                "' is not one of F32, F16, BF16");
  }
  const std::vector<TensorInfo> table = gpt2_tensor_table(c);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error("cannot create the folder '" + dir + "': " + ec.message());
  }

  const nlohmann::json cfg = {
      {"activation_function", "gelu_new"},
      {"architectures", {"GPT2LMHeadModel"}},
      {"layer_norm_epsilon", 1e-5},
      {"model_type", "gpt2"},
      {"n_ctx", c.n_ctx},
      {"n_embd", c.n_embd},
      {"n_head", c.n_head},
      {"n_layer", c.n_layer},
      {"n_positions", c.n_ctx},
      {"tie_word_embeddings", true},
      {"vocab_size", c.n_vocab},
      {"lockstep_random_seed", seed},
  };
  const std::string text = cfg.dump(2) + "\n";
  write_file_atomic((fs::path(dir) / "config.json").string(),
                    std::vector<uint8_t>(text.begin(), text.end()));

  // HF files list tensors sorted by name; so does this one (so that a
  // reader must reorder them into the packed layout).
  const std::string prefix = prefixed_keys ? "transformer." : "";
  std::vector<std::pair<std::string, size_t>> order;  // HF key, table index
  for (size_t i = 0; i < table.size(); ++i) {
    order.emplace_back(gpt2_hf_key(table[i].name), i);
  }
  std::sort(order.begin(), order.end());
  std::vector<SafetensorsSpec> specs;
  for (const auto& [key, i] : order) {
    std::vector<uint64_t> shape(table[i].shape.begin(), table[i].shape.end());
    specs.push_back({prefix + key, *st_dtype, shape});
  }
  SafetensorsWriter w((fs::path(dir) / "model.safetensors").string(),
                      std::move(specs),
                      {{"format", "pt"}, {"lockstep", "random GPT-2"}});
  std::vector<float> buf(1 << 16);
  for (const auto& [key, i] : order) {
    const uint64_t n = table[i].words();
    for (uint64_t s = 0; s < n;) {
      const size_t k = size_t(std::min<uint64_t>(n - s, buf.size()));
      fill_random(table[i], seed, s, k, buf.data());
      w.write_floats(buf.data(), k);
      s += k;
    }
  }
  w.finish();
}

}  // namespace lockstep
