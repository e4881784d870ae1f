// lockstep train: the deterministic trainer behind the shipped checkpoints.
#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "cli/model_args.h"
#include "cli/progress.h"
#include "lockstep/tiny.h"
#include "train/trainer.h"

namespace lockstep::cli {
namespace {

struct TrainArgs {
  int context = 0;
  std::string out;
  std::string data;
  uint64_t seed = 1;
  int steps = -1;
  int batch = -1;
  double lr = -1;
  bool no_eval = false;
};

int run(const TrainArgs& a) {
  train::TrainOptions o = train::default_options(a.context);
  o.seed = a.seed;
  if (a.steps >= 0) o.steps = a.steps;
  if (a.batch > 0) o.batch = a.batch;
  if (a.lr > 0) o.learning_rate = a.lr;
  o.evaluate = !a.no_eval;
  const std::string out =
      a.out.empty() ? "tiny" + std::to_string(a.context) + ".lockstep" : a.out;
  const train::Dataset data =
      a.data.empty() ? train::load_dataset() : train::load_dataset(a.data);
  std::fprintf(stderr,
               "training tiny%d: %d steps x %d sequences of %d bytes, seed "
               "%llu, data %s (sha256 %.12s...)\n",
               a.context, o.steps, o.batch, a.context + 1,
               (unsigned long long)o.seed, data.path.c_str(),
               data.sha256.c_str());
  ProgressBar bar("train", o.steps);
  double ema = NAN;
  o.progress = [&](int step, int, double bits) {
    ema = std::isnan(ema) ? bits : 0.98 * ema + 0.02 * bits;
    char status[64];
    std::snprintf(status, sizeof status, "loss %.3f bits/byte", ema);
    bar.update(step, status);
  };
  const train::TrainResult r = train::train_tiny(data, o);
  bar.finish();
  nlohmann::json meta = {
      {"trainer", "lockstep train 0.1.0"},
      {"dataset", "tinyshakespeare.txt"},
      {"dataset_sha256", data.sha256},
      {"seed", o.seed},
      {"steps", o.steps},
      {"batch", o.batch},
      {"learning_rate", o.learning_rate},
      {"tokens_seen", r.tokens_seen},
  };
  if (o.evaluate) {
    meta["validation_bits_per_byte"] = r.validation_bits_per_byte;
    meta["validation_bytes"] = r.validation_bytes;
    meta["unigram_bits_per_byte"] = r.unigram_bits_per_byte;
  }
  save_tiny(out, a.context, r.weights, meta);
  if (o.evaluate) {
    std::printf(
        "validation %.4f bits/byte over %llu bytes (unigram baseline %.4f)\n",
        r.validation_bits_per_byte, (unsigned long long)r.validation_bytes,
        r.unigram_bits_per_byte);
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace

Action add_train(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  app.add_option("--context,-c", a->context, "context length: 4, 64 or 128")
      ->required()
      ->check(CLI::IsMember({4, 64, 128}));
  app.add_option("--out,-o", a->out,
                 "checkpoint to write (default tiny<context>.lockstep)");
  app.add_option("--data", a->data,
                 "Tiny Shakespeare text (checked against its SHA-256)")
      ->check(CLI::ExistingFile);
  app.add_option("--seed,-s", a->seed,
                 "initialisation and batch-order seed, 0 to 2^64-1")
      ->check(unsigned64())
      ->capture_default_str();
  app.add_option("--steps", a->steps, "optimiser steps (default per context)")
      ->check(CLI::Range(0, 10000000));
  app.add_option("--batch", a->batch,
                 "sequences per step (default per context)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--lr", a->lr, "peak learning rate (default per context)")
      ->check(number_in(1e-9, 10.0,
                        "--lr must be a number in [1e-9, 10] (NaN is not)"));
  app.add_flag("--no-eval", a->no_eval, "skip the validation pass");
  app.footer(
      "The same binary, options and seed write a byte-identical checkpoint.\n"
      "Example: lockstep train --context 128 --out models/tiny128.lockstep");
  return [a]() { return run(*a); };
}

}  // namespace lockstep::cli
