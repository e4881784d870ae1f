// lockstep convert: a GPT-2 checkpoint (a Hugging Face folder or a packed
// file in either layout) to a packed checkpoint in the chosen weight layout
// (docs/gpt2-format.md "Weight layouts"), or with --quant int8 to a grouped
// int8 file (docs/int8.md).
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/progress.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/gpt2_q8.h"
#include "lockstep/error.h"
#include "ls_gpt2_q8.h"

namespace lockstep::cli {

Action add_convert(CLI::App& app) {
  struct Args {
    std::string in, out, layout = "panel64", quant = "none";
  };
  auto a = std::make_shared<Args>();
  app.add_option("IN", a->in,
                 "a Hugging Face folder (config.json + model.safetensors), "
                 "its model.safetensors, or a packed .lockstep file in "
                 "either layout")
      ->required()
      ->check(CLI::ExistingPath);
  app.add_option("OUT", a->out, "packed checkpoint to write (atomically)")
      ->required();
  app.add_option("--layout", a->layout,
                 "weight layout of OUT: panel64 (the CPU backend's panels, "
                 "read in place with no repacked copy) or plain (core order, "
                 "what older lockstep builds read)")
      ->check(CLI::IsMember({"panel64", "plain"}))
      ->capture_default_str();
  app.add_option("--quant", a->quant,
                 "none (binary32) or int8: int8 weights with a "
                 "bfloat16 scale per output and group of 64 inputs, "
                 "about 26% of the binary32 file (docs/int8.md); its "
                 "layout is always the int8 panels (q8panel64)")
      ->check(CLI::IsMember({"none", "int8"}))
      ->capture_default_str();
  auto* layout_opt = app.get_option("--layout");
  return [a, layout_opt]() {
    std::error_code ec;
    if (std::filesystem::equivalent(a->in, a->out, ec)) {
      throw Error("convert: IN and OUT are the same file '" + a->out +
                  "'; write to another path");
    }
    if (a->quant == "int8") {
      if (layout_opt->count() > 0) {
        throw Error(
            "convert: --layout is for binary32 files; an int8 file has one "
            "layout (q8panel64, docs/int8.md)");
      }
      ProgressBar bar("convert", 1000);
      convert_gpt2_q8(a->in, a->out, [&](uint64_t done, uint64_t total) {
        bar.update(long(total ? done * 1000 / total : 1000));
      });
      bar.finish();
      const Gpt2Weights w = load_gpt2_q8(a->out);
      std::printf(
          "wrote %s: int8 (q8g64, layout q8panel64), %zu payload bytes "
          "(%.2f%% of the binary32 payload), payload sha256 %s, quantized "
          "from binary32 plain-layout sha256 %s\n",
          a->out.c_str(), w.q8_bytes(),
          100.0 * double(w.q8_bytes()) /
              (4.0 * double(ls_gpt2_param_count(&w.config))),
          w.payload_sha256.c_str(), w.plain_sha256.c_str());
      return 0;
    }
    const ls_gpt2_layout layout = gpt2_layout_from_name(a->layout);
    ProgressBar bar("convert", 1000);
    convert_gpt2(a->in, a->out, layout, [&](uint64_t done, uint64_t total) {
      bar.update(long(total ? done * 1000 / total : 1000));
    });
    bar.finish();
    const Gpt2Weights w = load_gpt2(a->out);
    std::printf(
        "wrote %s: %zu words, layout %s, payload sha256 %s, plain-layout "
        "sha256 %s\n",
        a->out.c_str(), w.words(), gpt2_layout_name(w.layout),
        w.payload_sha256.c_str(), w.plain_sha256.c_str());
    return 0;
  };
}

}  // namespace lockstep::cli
