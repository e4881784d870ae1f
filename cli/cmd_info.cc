// lockstep info: what a checkpoint holds and how to identify it.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_args.h"
#include "formats/gpt2_checkpoint.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/gpt2.h"
#include "lockstep/tiny.h"

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

nlohmann::json gpt2_info(const std::string& path) {
  const Gpt2Weights w = load_gpt2(path);
  const ls_gpt2_config& c = w.config;
  const Gpt2Memory mem = gpt2_memory_plan(c, 0);
  return {{"path", w.source},
          {"model", "GPT-2"},
          {"dtype", "binary32"},
          {"format", w.format},
          {"config",
           {{"n_vocab", c.n_vocab},
            {"n_ctx", c.n_ctx},
            {"n_embd", c.n_embd},
            {"n_head", c.n_head},
            {"n_layer", c.n_layer}}},
          {"parameters", w.words()},
          {"payload_sha256", w.payload_sha256},
          {"memory_bytes",
           {{"weights", mem.weights},
            {"cache", mem.cache},
            {"scratch", mem.scratch},
            {"logits", mem.logits},
            {"total", mem.total()}}},
          {"meta", w.meta}};
}

}  // namespace

Action add_info(CLI::App& app) {
  auto args = std::make_shared<ModelArgs>();
  auto json = std::make_shared<bool>(false);
  args->add(app);
  app.add_flag("--json", *json, "print one JSON object");
  return [args, json]() {
    nlohmann::json j = args->kind() == ModelKind::kGpt2
                           ? gpt2_info(args->path())
                           : tiny_info(args->path());
    // The WebAssembly module this build made (--backend wasm refuses any
    // other): docs/wasm.md.
    j["wasm"] = {{"module", wasm_module_path()},
                 {"sha256", wasm_module_sha256()},
                 {"scalar_sha256", wasm_scalar_module_sha256()}};
    if (*json) {
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_object()) {
        for (auto jt = it.value().begin(); jt != it.value().end(); ++jt) {
          const std::string key = it.key() + "." + jt.key();
          std::printf("%-22s %s\n", key.c_str(),
                      jt.value().is_string()
                          ? jt.value().get<std::string>().c_str()
                          : jt.value().dump().c_str());
        }
      } else {
        std::printf("%-22s %s\n", it.key().c_str(),
                    it.value().is_string()
                        ? it.value().get<std::string>().c_str()
                        : it.value().dump().c_str());
      }
    }
    return 0;
  };
}

}  // namespace lockstep::cli
