// Deterministic training of the tiny models on Tiny Shakespeare: seeded
// initialisation, seeded batches, single-threaded gradient accumulation in a
// fixed order and AdamW with a libm-free schedule. The same options give the
// same weight bits on every IEEE-754 machine built without FMA contraction.
#ifndef LOCKSTEP_TRAIN_TRAINER_H_
#define LOCKSTEP_TRAIN_TRAINER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "train/dataset.h"

namespace lockstep::train {

// The member defaults are default_options(64)'s.
struct TrainOptions {
  int n_ctx = 64;     // context length of the model, in [1, 1024]
  uint64_t seed = 1;  // initialisation and batch order (SplitMix64)
  int steps = 50000;  // optimiser steps (0 = initialise only)
  int batch = 4;      // sequences of n_ctx + 1 bytes per step
  // AdamW. The learning rate rises linearly from learning_rate / warmup_steps
  // to learning_rate over the first warmup_steps steps, then falls linearly
  // to learning_rate * final_lr_fraction at the last step.
  double learning_rate = 3e-3;
  double final_lr_fraction = 0.1;
  int warmup_steps = 200;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double adam_eps = 1e-8;
  // Decoupled weight decay (times the learning rate) on the embeddings and
  // the weight matrices; LayerNorm gains and all biases are not decayed.
  double weight_decay = 0.0;
  // Initial weights are uniform in [-init_scale, init_scale] (SplitMix64
  // from seed); LayerNorm gains start at 1 and biases at 0. Position t's
  // embedding then gets r_t = position_ramp * (2t / (n_ctx - 1) - 1) added to
  // its word 0 and subtracted from its word 1: a direction that grows with
  // the position lets attention learn to prefer recent bytes.
  double init_scale = 0.1;
  double position_ramp = 1.0;
  // The batch gradient is scaled down to this global L2 norm when larger
  // (0 disables clipping).
  double grad_clip = 1.0;
  // After every step each weight is clipped to [-weight_bound, weight_bound];
  // inference clips to B <= 10, so 10 leaves the shipped models unchanged.
  double weight_bound = 10.0;
  // Validation: off, or over at most eval_max_windows windows (0 = the whole
  // validation split).
  bool evaluate = true;
  size_t eval_max_windows = 0;
  // Called after every step with the 1-based step, the total and that
  // step's mean training loss in bits per byte. May be empty.
  std::function<void(int step, int total, double train_loss_bits)> progress;
};

struct TrainResult {
  int n_ctx = 0;
  std::vector<double> weights;  // ls_tiny_layout_for(n_ctx).total words
  // Mean validation cross-entropy in bits per byte (NaN if not evaluated)
  // and the number of validation bytes it was measured on.
  double validation_bits_per_byte = 0.0;
  uint64_t validation_bytes = 0;
  double unigram_bits_per_byte = 0.0;     // unigram_bits_per_byte(data)
  double last_train_bits_per_byte = 0.0;  // the last step's batch loss
  int steps = 0;
  uint64_t tokens_seen = 0;  // steps * batch * n_ctx predicted bytes
};

// The settings of the shipped models of context 4, 64 and 128 (each trains
// in about 70-75 s of CPU time on one core). Other contexts get those of the
// next larger of 4, 64, 128 (n_ctx > 128: the 128 settings) with their own
// n_ctx.
TrainOptions default_options(int n_ctx);

// The seeded initial weights of train_tiny (before any step), from n_ctx,
// seed, init_scale and position_ramp. Throws lockstep::Error for n_ctx
// outside [1, 1024].
std::vector<double> init_weights(const TrainOptions& options);

// Trains a tiny model. Throws lockstep::Error on invalid options (n_ctx
// outside [1, 1024], a train split shorter than n_ctx + 1 bytes, steps < 0,
// batch < 1, a learning rate that is not finite and positive, ...).
TrainResult train_tiny(const Dataset& data, const TrainOptions& options);

// Mean cross-entropy in bits per byte of bytes[1..] under the model: windows
// start every n_ctx bytes, and each predicts the n_ctx bytes after its start
// from the bytes before them (the last window may be shorter), so every byte
// but the first is predicted exactly once, from up to n_ctx bytes of
// context that begin at a window start. With max_windows > 0 only the first
// max_windows windows count. *n_predicted (if not null) receives the number
// of bytes predicted. Throws lockstep::Error if fewer than 2 bytes.
double evaluate_bits_per_byte(const std::vector<double>& weights, int n_ctx,
                              const std::vector<uint8_t>& bytes,
                              size_t max_windows = 0,
                              uint64_t* n_predicted = nullptr);

}  // namespace lockstep::train

#endif  // LOCKSTEP_TRAIN_TRAINER_H_
