// lockstep convert: a Hugging Face GPT-2 folder to a packed checkpoint.
#include <cstdio>

#include "cli/commands.h"
#include "cli/progress.h"
#include "formats/gpt2_checkpoint.h"

namespace lockstep::cli {

Action add_convert(CLI::App& app) {
  struct Args {
    std::string in, out;
  };
  auto a = std::make_shared<Args>();
  app.add_option("HF_DIR", a->in,
                 "folder with config.json and model.safetensors")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("OUT", a->out, "packed checkpoint to write (atomically)")
      ->required();
  return [a]() {
    ProgressBar bar("convert", 1000);
    convert_hf_to_packed(a->in, a->out, [&](uint64_t done, uint64_t total) {
      bar.update(long(total ? done * 1000 / total : 1000));
    });
    bar.finish();
    const Gpt2Weights w = load_gpt2(a->out);
    std::printf("wrote %s: %zu words, payload sha256 %s\n", a->out.c_str(),
                w.words(), w.payload_sha256.c_str());
    return 0;
  };
}

}  // namespace lockstep::cli
