// --model / --weights, shared by every command that reads a model.
#ifndef LOCKSTEP_CLI_MODEL_ARGS_H_
#define LOCKSTEP_CLI_MODEL_ARGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "lockstep/tiny.h"

namespace lockstep::cli {

struct ModelArgs {
  std::string model = "tiny128";
  std::string weights;
  void add(CLI::App& app);
  // The checkpoint path these options name.
  std::string path() const;
  // A short label for output: the model name or the weights path.
  std::string label() const { return weights.empty() ? model : weights; }
  TinyModel load() const { return load_tiny(path()); }
};

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_MODEL_ARGS_H_
