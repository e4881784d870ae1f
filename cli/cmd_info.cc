// lockstep info: what a checkpoint holds and how to identify it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "cli/commands.h"
#include "cli/model_args.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "lockstep/tiny.h"
#include "ls_gpt2_q8.h"

namespace lockstep::cli {
namespace {

nlohmann::json tiny_info(const std::string& path) {
  const TinyModel m = load_tiny(path);
  return {{"path", m.path},
          {"model", "tiny byte-level GPT-2"},
          {"dtype", "binary64"},
          {"config",
           {{"vocab", 256},
            {"n_ctx", m.n_ctx},
            {"n_embd", 4},
            {"n_head", 2},
            {"n_layer", 1},
            {"n_ff", 8}}},
          {"parameters", m.weights.size()},
          {"payload_sha256", m.payload_sha256},
          {"file_sha256", m.file_sha256},
          {"meta", m.meta}};
}

// One field of /proc/self/status in bytes ("VmRSS:  123 kB"), or 0.
size_t proc_status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string k = std::string(key) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(k, 0) == 0) {
      return size_t(std::strtoull(line.c_str() + k.size(), nullptr, 10)) * 1024;
    }
  }
  return 0;
}

nlohmann::json resident_now() {
  return {{"rss", proc_status_bytes("VmRSS")},
          {"rss_file", proc_status_bytes("RssFile")},
          {"rss_anon", proc_status_bytes("RssAnon")},
          {"peak", proc_status_bytes("VmHWM")}};
}

// The ISA the "cpu" backend picks: $LOCKSTEP_ISA, or the best this CPU runs.
std::string cpu_isa() {
  if (const char* e = std::getenv("LOCKSTEP_ISA"); e && *e) return e;
  for (const std::string& b : backends::available_gpt2_backends()) {
    if (b.rfind("cpu-", 0) == 0) return b.substr(4);
  }
  return "generic";
}

// The memory of a session on the default backend ("cpu", 2 threads, a full
// pass of n_ctx positions) over these weights: the weights counted once
// (mapped or owned by the loader), the backend's repacked copy of them when
// their layout is not its own, the KV cache at full context, the backend's
// working buffers and the logits. Equal to Gpt2Session::memory() (tested).
nlohmann::json memory_plan(const Gpt2Weights& w, int threads) {
  const ls_gpt2_config& c = w.config;
  const std::string isa = cpu_isa();
  const Gpt2Memory mem = gpt2_memory_plan(c, c.n_ctx);
  const size_t extra =
      backends::cpu_backend_memory_bytes(c, isa, threads, c.n_ctx, w.layout);
  const size_t in_place = backends::cpu_backend_memory_bytes(
      c, isa, threads, c.n_ctx, LS_GPT2_LAYOUT_PANEL64);
  const size_t repacked = extra - in_place;
  return {{"backend", "cpu-" + isa + " x" + std::to_string(threads)},
          {"weights", mem.weights},
          {"weights_mapped", w.mapped()},
          {"weights_in_place", repacked == 0},
          {"repacked_weights", repacked},
          {"cache", mem.cache},
          {"scratch", in_place},
          {"logits", mem.logits},
          {"total", mem.weights + extra + mem.cache + mem.logits}};
}

// Measured, not planned: a session on the default backend ("cpu", 2
// threads) over the view, a prefill of every position (the KV cache full),
// then this process's resident set after each step. The same run for
// binary32 and int8 weights, so the two can be set side by side.
nlohmann::json measure_resident(const Gpt2View& view) {
  const ls_gpt2_config& c = view.config;
  nlohmann::json r;
  r["after_load"] = resident_now();
  Gpt2Session s(view, Gpt2SessionOptions{"cpu", 2, c.n_ctx});
  r["after_session"] = resident_now();
  std::vector<int32_t> tokens(size_t(c.n_ctx));
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = int32_t((i * 7919 + 13) % size_t(c.n_vocab));
  }
  s.prefill(tokens);
  r["after_full_context_prefill"] = resident_now();
  r["session_plan_total"] = s.memory().total();
  r["backend"] = s.backend_name();
  return r;
}

// An int8 file (docs/int8.md): what is quantized and how, its size against
// the binary32 payload of the same model, its digest and the binary32
// digest it was quantized from, and the memory plan of a session on the
// default backend (cpu with its int8 kernels, 2 threads, full context), as
// that session counts it (Gpt2Session::memory()).
nlohmann::json q8_info(const std::string& path, bool resident) {
  const Gpt2Weights w = load_gpt2_q8(path);
  const ls_gpt2_config& c = w.config;
  const Gpt2View view{c,           nullptr,     0, LS_GPT2_LAYOUT_PLAIN,
                      w.q8_data(), w.q8_bytes()};
  // Measured first, so that the plan's session below does not raise the
  // peak it reports.
  nlohmann::json measured;
  if (resident) measured = measure_resident(view);
  nlohmann::json plan;
  {
    const Gpt2Session s(view, Gpt2SessionOptions{"cpu", 2, c.n_ctx});
    const Gpt2Memory& mem = s.memory();
    plan = {{"backend", s.backend_name()}, {"weights", mem.weights},
            {"weights_mapped", true},      {"weights_in_place", true},
            {"cache", mem.cache},          {"scratch", mem.scratch},
            {"logits", mem.logits},        {"total", mem.total()}};
  }
  const size_t f32 = ls_gpt2_param_count(&c) * sizeof(float);
  nlohmann::json j = {
      {"path", w.source},
      {"model", "GPT-2"},
      {"dtype", "int8"},
      {"quantization",
       {{"kind", "q8g64 (docs/int8.md, docs/arithmetic.md section 7)"},
        {"weights",
         "int8 in [-127, 127], one bfloat16 scale per output "
         "and group of 64 inputs"},
        {"activations",
         "int8 per position and group of 64, binary32 "
         "scales, at run time"},
        {"quantized",
         "c_attn, attn.c_proj, c_fc, mlp.c_proj of every "
         "block; wte (embedding and head); wpe"},
        {"binary32", "LayerNorm, biases, attention, KV cache, logits"}}},
      {"format", w.format},
      {"layout", kGpt2Q8Layout},
      {"config",
       {{"n_vocab", c.n_vocab},
        {"n_ctx", c.n_ctx},
        {"n_embd", c.n_embd},
        {"n_head", c.n_head},
        {"n_layer", c.n_layer}}},
      {"parameters", ls_gpt2_param_count(&c)},
      {"payload_bytes", w.q8_bytes()},
      {"binary32_payload_bytes", f32},
      {"payload_vs_binary32", double(w.q8_bytes()) / double(f32)},
      {"payload_sha256", w.payload_sha256},
      {"binary32_plain_sha256", w.plain_sha256},
      {"memory_bytes", plan},
      {"meta", w.meta}};
  if (resident) j["resident_bytes"] = measured;
  return j;
}

nlohmann::json gpt2_info(const std::string& path, bool resident) {
  if (is_gpt2_q8_file(path)) return q8_info(path, resident);
  const Gpt2Weights w = load_gpt2(path);
  const ls_gpt2_config& c = w.config;
  nlohmann::json j = {{"path", w.source},
                      {"model", "GPT-2"},
                      {"dtype", "binary32"},
                      {"format", w.format},
                      {"layout", gpt2_layout_name(w.layout)},
                      {"config",
                       {{"n_vocab", c.n_vocab},
                        {"n_ctx", c.n_ctx},
                        {"n_embd", c.n_embd},
                        {"n_head", c.n_head},
                        {"n_layer", c.n_layer}}},
                      {"parameters", w.words()},
                      {"payload_sha256", w.payload_sha256},
                      {"plain_sha256", w.plain_sha256},
                      {"memory_bytes", memory_plan(w, 2)},
                      {"meta", w.meta}};
  if (w.layout != LS_GPT2_LAYOUT_PLAIN) {
    // The header's claim, checked: the weights in the plain order.
    const std::string plain = gpt2_plain_sha256(w);
    if (plain != w.plain_sha256) {
      throw Error("checkpoint '" + path + "': its weights in the plain " +
                  "layout hash to " + plain + ", but the header's " +
                  "plain_sha256 says " + w.plain_sha256 + " (corrupt header)");
    }
  }
  if (resident) {
    j["resident_bytes"] = measure_resident({c, w.data(), w.words(), w.layout});
  }
  return j;
}

}  // namespace

Action add_info(CLI::App& app) {
  auto args = std::make_shared<ModelArgs>();
  auto json = std::make_shared<bool>(false);
  auto resident = std::make_shared<bool>(false);
  args->add(app);
  app.add_flag("--json", *json,
               "print one JSON object (bytes of the path that are not UTF-8 "
               "are printed as U+FFFD there)");
  app.add_flag("--resident", *resident,
               "GPT-2 (binary32 or int8): also run a session (cpu, 2 "
               "threads) over the whole context and report this process's "
               "resident memory");
  return [args, json, resident]() {
    nlohmann::json j = args->kind() == ModelKind::kGpt2
                           ? gpt2_info(args->path(), *resident)
                           : tiny_info(args->path());
    // The WebAssembly module this build made (--backend wasm refuses any
    // other): docs/wasm.md.
    j["wasm"] = {{"module", wasm_module_path()},
                 {"sha256", wasm_module_sha256()},
                 {"scalar_sha256", wasm_scalar_module_sha256()}};
    // A file name need not be UTF-8, JSON text must be: invalid bytes
    // become U+FFFD (the library's replace handler) instead of a
    // type_error from dump().
    constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
    if (*json) {
      std::printf("%s\n", j.dump(2, ' ', false, kReplace).c_str());
      return 0;
    }
    // Nested objects as dotted keys ("memory_bytes.total").
    std::function<void(const std::string&, const nlohmann::json&)> print =
        [&print](const std::string& prefix, const nlohmann::json& v) {
          if (v.is_object() && !v.empty()) {
            for (auto it = v.begin(); it != v.end(); ++it) {
              print(prefix.empty() ? it.key() : prefix + "." + it.key(),
                    it.value());
            }
            return;
          }
          std::printf("%-30s %s\n", prefix.c_str(),
                      v.is_string() ? v.get<std::string>().c_str()
                                    : v.dump(-1, ' ', false, kReplace).c_str());
        };
    print("", j);
    return 0;
  };
}

}  // namespace lockstep::cli
