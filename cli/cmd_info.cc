// lockstep info: what a checkpoint holds and how to identify it.
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_args.h"

namespace lockstep::cli {

Action add_info(CLI::App& app) {
  auto args = std::make_shared<ModelArgs>();
  auto json = std::make_shared<bool>(false);
  args->add(app);
  app.add_flag("--json", *json, "print one JSON object");
  return [args, json]() {
    const TinyModel m = args->load();
    nlohmann::json j = {
        {"path", m.path},
        {"model", "tiny"},
        {"dtype", "binary64"},
        {"config",
         {{"vocab", 256}, {"n_ctx", m.n_ctx}, {"n_embd", 4}, {"n_head", 2},
          {"n_layer", 1}, {"n_ff", 8}}},
        {"parameters", m.weights.size()},
        {"payload_sha256", m.payload_sha256},
        {"file_sha256", m.file_sha256},
        {"meta", m.meta}};
    if (*json) {
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("path            %s\n", m.path.c_str());
    std::printf("model           tiny byte-level GPT-2, binary64\n");
    std::printf(
        "config          vocab 256, n_ctx %d, n_embd 4, n_head 2, n_layer 1, "
        "n_ff 8\n",
        m.n_ctx);
    std::printf("parameters      %zu\n", m.weights.size());
    std::printf("payload sha256  %s\n", m.payload_sha256.c_str());
    std::printf("file sha256     %s\n", m.file_sha256.c_str());
    for (auto it = m.meta.begin(); it != m.meta.end(); ++it) {
      std::printf("meta.%-10s %s\n", it.key().c_str(),
                  it.value().is_string()
                      ? it.value().get<std::string>().c_str()
                      : it.value().dump().c_str());
    }
    return 0;
  };
}

}  // namespace lockstep::cli
