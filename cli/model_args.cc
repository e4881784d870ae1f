#include "cli/model_args.h"

#include <filesystem>
#include <string>
#include <thread>

#include "formats/checkpoint.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"

namespace lockstep::cli {
namespace {

// The CPU backend's largest team (backends/cpu/cpu_backend.cc).
constexpr int kMaxThreads = 256;

int all_cores() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(n);
}

bool is_tiny_name(const std::string& s) {
  return s == "tiny4" || s == "tiny64" || s == "tiny128";
}

}  // namespace

void ModelArgs::add(CLI::App& app) {
  auto* m =
      app.add_option("--model,-m", model,
                     "tiny4, tiny64, tiny128, a .lockstep checkpoint, or a "
                     "Hugging Face GPT-2 folder (config.json + "
                     "model.safetensors)")
          ->capture_default_str();
  auto* w = app.add_option("--weights,-w", weights, "a checkpoint file")
                ->check(CLI::ExistingFile);
  m->excludes(w);
}

std::string ModelArgs::path() const {
  if (!weights.empty()) return weights;
  if (is_tiny_name(model)) return builtin_model_path(model);
  if (!std::filesystem::exists(model)) {
    throw Error("--model '" + model +
                "' is neither a shipped model (tiny4, tiny64, tiny128) nor "
                "an existing file or folder");
  }
  return model;
}

ModelKind ModelArgs::kind() const {
  const std::string p = path();
  if (std::filesystem::is_directory(p) || p.ends_with(".safetensors")) {
    return ModelKind::kGpt2;
  }
  const std::string k = checkpoint_model_kind(p);
  if (k == "tiny") return ModelKind::kTiny;
  if (k == "gpt2") return ModelKind::kGpt2;
  throw Error("checkpoint '" + p + "' holds an unknown model kind '" + k + "'");
}

CLI::Validator number_in(double lo, double hi, const std::string& message) {
  return CLI::Validator(
      [lo, hi, message](const std::string& v) {
        double x = 0;
        if (!CLI::detail::lexical_cast(v, x) || !(x >= lo && x <= hi)) {
          return message + " (got '" + v + "')";
        }
        return std::string();
      },
      "", "");
}

CLI::Validator unsigned64() {
  return CLI::Validator(
      [](const std::string& v) {
        const bool digits =
            !v.empty() && v.size() <= 20 &&
            v.find_first_not_of("0123456789") == std::string::npos;
        // 20 digits fit when not above 18446744073709551615.
        if (!digits || (v.size() == 20 && v > "18446744073709551615")) {
          return "'" + v +
                 "' is not an integer in [0, 18446744073709551615] (decimal "
                 "digits only)";
        }
        return std::string();
      },
      "", "");
}

void add_backend_options(CLI::App& app, std::string& backend, int& threads) {
  app.add_option("--backend", backend,
                 "cpu, cpu-avx512, cpu-avx2, cpu-generic, reference, cuda "
                 "(GPT-2; cuda: an NVIDIA GPU, in builds with LOCKSTEP_CUDA) "
                 "or wasm (the WebAssembly module in Node.js; GPT-2 and the "
                 "tiny models); all give the same bits. An int8 file runs "
                 "on reference, and on cpu through the same int8 reference "
                 "(no int8 fast path yet; docs/int8.md)")
      ->capture_default_str();
  // 0 (the default) is every core: the session resolves it
  // (Gpt2SessionOptions). The reference and the WebAssembly module run on
  // one thread whatever is asked.
  threads = 0;
  app.add_option("--threads", threads,
                 "GPT-2 on a cpu backend: compute threads, 1 to " +
                     std::to_string(kMaxThreads) +
                     "; 0 or absent: all cores (" +
                     std::to_string(all_cores()) +
                     " here). The logits do not depend on it.")
      ->check(CLI::Range(0, kMaxThreads));
}

}  // namespace lockstep::cli
