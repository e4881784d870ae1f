// --model / --weights, shared by every command that reads a model.
#ifndef LOCKSTEP_CLI_MODEL_ARGS_H_
#define LOCKSTEP_CLI_MODEL_ARGS_H_

#include <CLI/CLI.hpp>
#include <string>

namespace lockstep::cli {

enum class ModelKind { kTiny, kGpt2 };

struct ModelArgs {
  std::string model = "tiny128";
  std::string weights;
  // Registers --model (a shipped tiny model's name, a checkpoint file, or a
  // Hugging Face GPT-2 folder) and --weights (a checkpoint file).
  void add(CLI::App& app);
  // The path these options name.
  std::string path() const;
  // Tiny or GPT-2, from the name, the folder, or the checkpoint's header.
  ModelKind kind() const;
  // A short label for output: the model name or the path.
  std::string label() const { return weights.empty() ? model : weights; }
};

// A CLI11 check for a number option: a decimal number with lo <= v <= hi
// (NaN fails, unlike CLI::Range); `message` is the whole error text.
CLI::Validator number_in(double lo, double hi, const std::string& message);
// A CLI11 check for a 64-bit unsigned option (--seed): decimal digits only,
// at most 2^64 - 1 (CLI11 alone would wrap "-1" and saturate "1e23").
CLI::Validator unsigned64();

// --backend and --threads, for the commands that run GPT-2. Sets threads
// to 0 (all cores, resolved by Gpt2Session) as the default.
void add_backend_options(CLI::App& app, std::string& backend, int& threads);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_MODEL_ARGS_H_
