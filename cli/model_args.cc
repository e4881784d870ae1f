#include "cli/model_args.h"

#include "lockstep/paths.h"

namespace lockstep::cli {

void ModelArgs::add(CLI::App& app) {
  auto* m = app.add_option("--model,-m", model,
                           "shipped model: tiny4, tiny64 or tiny128")
                ->check(CLI::IsMember({"tiny4", "tiny64", "tiny128"}))
                ->capture_default_str();
  auto* w = app.add_option("--weights,-w", weights,
                           "a checkpoint file instead of a shipped model")
                ->check(CLI::ExistingFile);
  m->excludes(w);
}

std::string ModelArgs::path() const {
  return weights.empty() ? builtin_model_path(model) : weights;
}

}  // namespace lockstep::cli
