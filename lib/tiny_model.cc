#include <bit>
#include <cstring>

#include "lockstep/error.h"
#include "lockstep/tiny.h"

extern "C" {
#include "ls_sampler.h"
#include "ls_tiny.h"
}

static_assert(std::endian::native == std::endian::little,
              "checkpoints are little-endian and read in place");

namespace lockstep {

size_t tiny_param_count(int n_ctx) {
  const size_t n = ls_tiny_layout_for(n_ctx).total;
  if (n == 0) {
    throw Error("tiny model context " + std::to_string(n_ctx) +
                " is outside [1, 1024]");
  }
  return n;
}

std::vector<TensorInfo> tiny_tensors(int n_ctx) {
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  if (L.total == 0) tiny_param_count(n_ctx);  // throws
  const int64_t T = n_ctx;
  return {
      {"wte", {256, 4}, L.wte},
      {"wpe", {T, 4}, L.wpe},
      {"h0.ln_1.g", {4}, L.ln1_g},
      {"h0.ln_1.b", {4}, L.ln1_b},
      {"h0.attn.c_attn.w", {4, 12}, L.qkv_w},
      {"h0.attn.c_proj.w", {4, 4}, L.proj_w},
      {"h0.attn.c_proj.b", {4}, L.proj_b},
      {"h0.ln_2.g", {4}, L.ln2_g},
      {"h0.ln_2.b", {4}, L.ln2_b},
      {"h0.mlp.c_fc.w", {4, 8}, L.fc_w},
      {"h0.mlp.c_fc.b", {8}, L.fc_b},
      {"h0.mlp.c_proj.w", {8, 4}, L.out_w},
      {"h0.mlp.c_proj.b", {4}, L.out_b},
      {"ln_f.g", {4}, L.lnf_g},
      {"ln_f.b", {4}, L.lnf_b},
      {"head.w", {4, 256}, L.head_w},
      {"head.b", {256}, L.head_b},
  };
}

namespace {

nlohmann::json tiny_config(int n_ctx) {
  return {{"vocab", 256}, {"n_ctx", n_ctx}, {"n_embd", 4},
          {"n_head", 2},  {"n_layer", 1},   {"n_ff", 8}};
}

}  // namespace

TinyModel load_tiny(const std::string& path) {
  Checkpoint c = read_checkpoint(path);
  auto bad = [&](const std::string& what) {
    throw Error("checkpoint '" + path + "': " + what);
  };
  if (c.model != "tiny") bad("model is '" + c.model + "', expected 'tiny'");
  if (c.dtype != "f64") bad("dtype is '" + c.dtype + "', expected 'f64'");
  if (!c.config.contains("n_ctx") || !c.config["n_ctx"].is_number_integer()) {
    bad("config lacks an integer n_ctx");
  }
  const int n_ctx = c.config["n_ctx"].get<int>();
  if (ls_tiny_layout_for(n_ctx).total == 0) {
    bad("config n_ctx " + std::to_string(n_ctx) + " is outside [1, 1024]");
  }
  if (c.config != tiny_config(n_ctx)) {
    bad("config " + c.config.dump() + " is not the tiny architecture " +
        tiny_config(n_ctx).dump());
  }
  const auto want = tiny_tensors(n_ctx);
  if (c.tensors.size() != want.size()) bad("tensor table has the wrong size");
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& a = c.tensors[i];
    const auto& b = want[i];
    if (a.name != b.name || a.shape != b.shape || a.offset != b.offset) {
      bad("tensor #" + std::to_string(i) + " is '" + a.name + "', expected '" +
          b.name +
          "' with the shape and offset of "
          "docs/models.md");
    }
  }
  TinyModel m;
  m.n_ctx = n_ctx;
  m.weights.resize(c.words);
  std::memcpy(m.weights.data(), c.payload.data(), c.payload.size());
  m.path = path;
  m.payload_sha256 = to_hex(c.payload_sha256);
  m.file_sha256 = c.file_sha256;
  m.meta = c.meta;
  return m;
}

void save_tiny(const std::string& path, int n_ctx,
               const std::vector<double>& weights, const nlohmann::json& meta) {
  if (weights.size() != tiny_param_count(n_ctx)) {
    throw Error("save_tiny: " + std::to_string(weights.size()) +
                " weights, expected " +
                std::to_string(tiny_param_count(n_ctx)));
  }
  Checkpoint c;
  c.model = "tiny";
  c.dtype = "f64";
  c.config = tiny_config(n_ctx);
  c.meta = meta;
  c.tensors = tiny_tensors(n_ctx);
  c.words = weights.size();
  c.payload.resize(weights.size() * sizeof(double));
  std::memcpy(c.payload.data(), weights.data(), c.payload.size());
  write_file_atomic(path, encode_checkpoint(c));
}

TinyLogits tiny_logits(int n_ctx, std::span<const double> weights,
                       std::span<const int32_t> tokens, double bound) {
  TinyLogits out{};
  const size_t scratch_words = ls_tiny_scratch_words(n_ctx);
  std::vector<double> scratch(scratch_words == 0 ? 1 : scratch_words);
  const ls_status s = ls_tiny_logits_checked(
      n_ctx, weights.data(), weights.size(), tokens.data(), tokens.size(),
      bound, scratch.data(), scratch.size(), out.data());
  if (s != LS_OK) {
    std::string detail;
    if (s == LS_ERR_WEIGHT_COUNT) {
      detail = " (got " + std::to_string(weights.size()) + ", expected " +
               std::to_string(ls_tiny_layout_for(n_ctx).total) + ")";
    } else if (s == LS_ERR_SEQUENCE_TOO_LONG) {
      detail = " (" + std::to_string(tokens.size()) + " tokens, context " +
               std::to_string(n_ctx) + ")";
    } else if (s == LS_ERR_BOUND) {
      detail = " (got " + std::to_string(bound) + ")";
    }
    throw Error(std::string(ls_status_message(s)) + detail);
  }
  return out;
}

std::vector<int32_t> tiny_generate(const TinyModel& m,
                                   std::span<const int32_t> prompt, int n_new,
                                   double bound, const SamplerOptions& sampler,
                                   const std::function<void(int32_t)>& on) {
  if (prompt.empty()) throw Error("generation needs at least one prompt byte");
  if (n_new < 0) throw Error("the number of bytes to generate is negative");
  Sampler choose(sampler, 256);
  std::vector<int32_t> text(prompt.begin(), prompt.end());
  std::vector<int32_t> out;
  for (int i = 0; i < n_new; ++i) {
    const size_t n = std::min(text.size(), size_t(m.n_ctx));
    std::span<const int32_t> window(text.data() + text.size() - n, n);
    const TinyLogits logits = tiny_logits(m, window, bound);
    const int32_t next = choose.next(std::span<const double>(logits));
    text.push_back(next);
    out.push_back(next);
    if (on) on(next);
  }
  return out;
}

}  // namespace lockstep
