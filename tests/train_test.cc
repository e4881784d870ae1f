// The trainer (train/): the whole-sequence forward is bit-identical to the
// reference forward of core/ls_tiny.c, the hand-written gradient matches
// central finite differences, training is bit-reproducible, and the dataset
// is the pinned Tiny Shakespeare split 90% / 10%.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lockstep/error.h"
#include "ls_sampler.h"
#include "ls_tiny.h"
#include "train/dataset.h"
#include "train/tiny_grad.h"
#include "train/trainer.h"

namespace lockstep::train {
namespace {

constexpr int kVocab = LS_TINY_VOCAB;
const std::string kDataPath =
    std::string(LOCKSTEP_SOURCE_DIR) + "/data/tinyshakespeare.txt";

std::string hex(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// Byte equality of n doubles; on failure names the first differing index
// and both values in hex.
::testing::AssertionResult SameBits(const double* expected,
                                    const double* actual, size_t n) {
  if (std::memcmp(expected, actual, n * sizeof(double)) == 0) {
    return ::testing::AssertionSuccess();
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(double)) != 0) {
      return ::testing::AssertionFailure()
             << "first difference at index " << i << ": expected "
             << hex(expected[i]) << ", got " << hex(actual[i]);
    }
  }
  return ::testing::AssertionFailure() << "memcmp differs (padding?)";
}

// Weights uniform in [-scale, scale] from a SplitMix64 stream.
std::vector<double> RandomWeights(int n_ctx, uint64_t seed, double scale) {
  std::vector<double> w(ls_tiny_layout_for(n_ctx).total);
  uint64_t state = seed;
  for (double& v : w) v = scale * (2.0 * ls_uniform64(&state) - 1.0);
  return w;
}

std::vector<int32_t> RandomTokens(int n, uint64_t seed) {
  std::vector<int32_t> t(n);
  uint64_t state = seed;
  for (int32_t& v : t) {
    v = static_cast<int32_t>(ls_splitmix64_next(&state) % kVocab);
  }
  return t;
}

// (a) Every row of tiny_forward_all equals ls_tiny_forward on that prefix.
TEST(TinyGrad, ForwardAllBitIdenticalToCoreForwardOnEveryPrefix) {
  for (int n_ctx : {4, 64, 128}) {
    SCOPED_TRACE("n_ctx " + std::to_string(n_ctx));
    const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
    const std::vector<double> w = RandomWeights(n_ctx, 1000 + n_ctx, 1.0);
    const std::vector<int32_t> tokens = RandomTokens(n_ctx, 2000 + n_ctx);
    Workspace ws(n_ctx);
    std::vector<double> all(static_cast<size_t>(n_ctx) * kVocab);
    tiny_forward_all(w.data(), n_ctx, tokens.data(), n_ctx, all.data(), ws);
    std::vector<double> scratch(ls_tiny_scratch_words(n_ctx) - L.total);
    std::vector<double> ref(kVocab);
    for (int t = 0; t < n_ctx; ++t) {
      ls_tiny_forward(w.data(), n_ctx, tokens.data(), t + 1, scratch.data(),
                      ref.data());
      ASSERT_TRUE(
          SameBits(ref.data(), &all[static_cast<size_t>(t) * kVocab], kVocab))
          << "position " << t;
    }
    // A shorter sequence gives the same rows (the workspace is reused).
    const int n = n_ctx / 2 + 1;
    std::vector<double> part(static_cast<size_t>(n) * kVocab);
    tiny_forward_all(w.data(), n_ctx, tokens.data(), n, part.data(), ws);
    EXPECT_TRUE(SameBits(all.data(), part.data(), part.size()));
    // The logits are not degenerate.
    EXPECT_NE(all[0], all[1]);
    EXPECT_TRUE(std::isfinite(all[5]));
  }
}

// Mean loss over the n positions, as the gradient defines it.
double MeanLoss(const std::vector<double>& w, int n_ctx,
                const std::vector<int32_t>& tokens,
                const std::vector<int32_t>& targets, int n, Workspace& ws) {
  return tiny_loss(w.data(), n_ctx, tokens.data(), n, targets.data(), ws) / n;
}

// Compares the analytic gradient with central differences on the listed
// parameters; returns the largest scaled error seen.
void CheckGradient(int n_ctx, int n, uint64_t seed,
                   const std::vector<size_t>& params) {
  std::vector<double> w = RandomWeights(n_ctx, seed, 1.0);
  const std::vector<int32_t> tokens = RandomTokens(n, seed + 1);
  const std::vector<int32_t> targets = RandomTokens(n, seed + 2);
  Workspace ws(n_ctx);
  std::vector<double> grad(w.size(), 0.0);
  const double sum = tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n,
                                        targets.data(), grad.data(), ws);
  ASSERT_GT(sum, 0.0);
  ASSERT_EQ(sum,
            tiny_loss(w.data(), n_ctx, tokens.data(), n, targets.data(), ws));
  int nonzero = 0;
  double worst = 0.0;
  for (size_t i : params) {
    const double w0 = w[i];
    const double h = 1e-5 * std::max(1.0, std::fabs(w0));
    w[i] = w0 + h;
    const double up = MeanLoss(w, n_ctx, tokens, targets, n, ws);
    w[i] = w0 - h;
    const double down = MeanLoss(w, n_ctx, tokens, targets, n, ws);
    w[i] = w0;
    const double fd = (up - down) / (2.0 * h);
    const double err = std::fabs(grad[i] - fd);
    const double scale = std::max(std::fabs(grad[i]), std::fabs(fd));
    // Relative 1e-5, with an absolute floor for the rounding of the loss
    // difference (|loss| ~ 5, h ~ 1e-5: about 1e-10).
    EXPECT_LE(err, 1e-5 * scale + 1e-9)
        << "parameter " << i << ": analytic " << grad[i] << " (" << hex(grad[i])
        << "), finite difference " << fd;
    if (grad[i] != 0.0) ++nonzero;
    if (scale > 1e-3) worst = std::max(worst, err / scale);
  }
  // Most listed parameters influence the loss (a real check, not 0 == 0),
  // and where the gradient is large the rounding floor is negligible.
  EXPECT_GT(nonzero, static_cast<int>(params.size()) / 2);
  EXPECT_LT(worst, 1e-6);
}

// (b) Every parameter of the n_ctx 4 model, full and partial sequences.
TEST(TinyGrad, GradientMatchesFiniteDifferencesOnEveryParameterCtx4) {
  const size_t total = ls_tiny_layout_for(4).total;
  std::vector<size_t> all(total);
  for (size_t i = 0; i < total; ++i) all[i] = i;
  {
    SCOPED_TRACE("n = 4");
    CheckGradient(4, 4, 11, all);
  }
  {
    SCOPED_TRACE("n = 3");
    CheckGradient(4, 3, 12, all);
  }
}

// (b) A random subset of the n_ctx 64 model covering every tensor: all of
// the block's parameters, and random entries of wpe, wte, head.w and head.b.
TEST(TinyGrad, GradientMatchesFiniteDifferencesOnSubsetCtx64) {
  const int n_ctx = 64;
  const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
  std::vector<size_t> params;
  for (size_t i = L.ln1_g; i < L.head_w; ++i) params.push_back(i);
  uint64_t state = 77;
  const auto pick = [&](size_t begin, size_t count, int k) {
    for (int j = 0; j < k; ++j) {
      params.push_back(begin + ls_splitmix64_next(&state) % count);
    }
  };
  pick(L.wpe, L.ln1_g - L.wpe, 48);
  pick(L.head_w, L.head_b - L.head_w, 48);
  pick(L.head_b, L.total - L.head_b, 16);
  // wte rows of tokens that occur (others have a zero gradient).
  const std::vector<int32_t> tokens = RandomTokens(n_ctx, 31 + 1);
  for (int j = 0; j < 8; ++j) {
    for (int k = 0; k < LS_TINY_EMBD; ++k) {
      params.push_back(L.wte + static_cast<size_t>(tokens[j * 7]) * 4 + k);
    }
  }
  ASSERT_GE(params.size(), 200u);
  {
    SCOPED_TRACE("n = 64");
    CheckGradient(n_ctx, n_ctx, 31, params);
  }
  {
    SCOPED_TRACE("n = 37");
    CheckGradient(n_ctx, 37, 31, params);
  }
}

// The gradient is added to what grad holds: two calls give twice one call,
// and a call on a non-zero buffer adds the same per-sequence gradient.
TEST(TinyGrad, GradientAccumulates) {
  const int n_ctx = 16;
  const std::vector<double> w = RandomWeights(n_ctx, 5, 1.0);
  const std::vector<int32_t> tokens = RandomTokens(n_ctx, 6);
  const std::vector<int32_t> targets = RandomTokens(n_ctx, 7);
  Workspace ws(n_ctx);
  std::vector<double> once(w.size(), 0.0), twice(w.size(), 0.0);
  tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n_ctx, targets.data(),
                     once.data(), ws);
  for (int r = 0; r < 2; ++r) {
    tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n_ctx, targets.data(),
                       twice.data(), ws);
  }
  std::vector<double> doubled = once;
  for (double& g : doubled) g = g + g;
  EXPECT_TRUE(SameBits(doubled.data(), twice.data(), once.size()));
  std::vector<double> base = RandomWeights(n_ctx, 8, 1.0);
  std::vector<double> expected = base;
  for (size_t i = 0; i < base.size(); ++i) expected[i] += once[i];
  tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n_ctx, targets.data(),
                     base.data(), ws);
  EXPECT_TRUE(SameBits(expected.data(), base.data(), base.size()));
}

// (c) Finite gradients, also at the weight bound.
TEST(TinyGrad, GradientsAreFinite) {
  for (double scale : {1.0, 10.0}) {
    for (int n_ctx : {4, 64, 128}) {
      SCOPED_TRACE("n_ctx " + std::to_string(n_ctx) + " scale " +
                   std::to_string(scale));
      const std::vector<double> w = RandomWeights(n_ctx, 40 + n_ctx, scale);
      const std::vector<int32_t> tokens = RandomTokens(n_ctx, 41 + n_ctx);
      const std::vector<int32_t> targets = RandomTokens(n_ctx, 42 + n_ctx);
      Workspace ws(n_ctx);
      std::vector<double> grad(w.size(), 0.0);
      const double loss =
          tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n_ctx,
                             targets.data(), grad.data(), ws);
      EXPECT_TRUE(std::isfinite(loss));
      EXPECT_GT(loss, 0.0);
      size_t nonzero = 0;
      for (size_t i = 0; i < grad.size(); ++i) {
        ASSERT_TRUE(std::isfinite(grad[i])) << "parameter " << i;
        if (grad[i] != 0.0) ++nonzero;
      }
      EXPECT_GT(nonzero, grad.size() / 2);
    }
  }
}

// (d) Causality: changing the tokens after t leaves rows 0..t unchanged.
TEST(TinyGrad, LogitsDependOnlyOnThePrefix) {
  const int n_ctx = 64;
  const std::vector<double> w = RandomWeights(n_ctx, 50, 1.0);
  std::vector<int32_t> tokens = RandomTokens(n_ctx, 51);
  Workspace ws(n_ctx);
  std::vector<double> before(static_cast<size_t>(n_ctx) * kVocab);
  std::vector<double> after(before.size());
  tiny_forward_all(w.data(), n_ctx, tokens.data(), n_ctx, before.data(), ws);
  for (int t : {0, 1, 20, 62}) {
    SCOPED_TRACE("t " + std::to_string(t));
    std::vector<int32_t> changed = tokens;
    for (int j = t + 1; j < n_ctx; ++j) changed[j] = (changed[j] + 1 + j) % 256;
    tiny_forward_all(w.data(), n_ctx, changed.data(), n_ctx, after.data(), ws);
    const size_t kept = static_cast<size_t>(t + 1) * kVocab;
    EXPECT_TRUE(SameBits(before.data(), after.data(), kept));
    EXPECT_NE(0, std::memcmp(&before[kept], &after[kept],
                             (before.size() - kept) * sizeof(double)));
  }
}

// (f) Lengths, tokens, targets and workspace sizes are validated.
TEST(TinyGrad, RejectsBadInput) {
  const int n_ctx = 8;
  const std::vector<double> w = RandomWeights(n_ctx, 60, 1.0);
  const std::vector<int32_t> tokens = RandomTokens(n_ctx + 1, 61);
  const std::vector<int32_t> targets = RandomTokens(n_ctx + 1, 62);
  std::vector<double> logits(static_cast<size_t>(n_ctx + 1) * kVocab);
  std::vector<double> grad(w.size(), 0.0);
  Workspace ws(n_ctx);
  for (int n : {0, -1, n_ctx + 1}) {
    SCOPED_TRACE("n " + std::to_string(n));
    EXPECT_THROW(
        tiny_forward_all(w.data(), n_ctx, tokens.data(), n, logits.data(), ws),
        Error);
    EXPECT_THROW(tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n,
                                    targets.data(), grad.data(), ws),
                 Error);
    EXPECT_THROW(
        tiny_loss(w.data(), n_ctx, tokens.data(), n, targets.data(), ws),
        Error);
  }
  std::vector<int32_t> bad = tokens;
  bad[3] = 256;
  EXPECT_THROW(
      tiny_forward_all(w.data(), n_ctx, bad.data(), n_ctx, logits.data(), ws),
      Error);
  bad[3] = -1;
  EXPECT_THROW(tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n_ctx,
                                  bad.data(), grad.data(), ws),
               Error);
  Workspace other(n_ctx + 1);
  EXPECT_THROW(tiny_forward_all(w.data(), n_ctx, tokens.data(), n_ctx,
                                logits.data(), other),
               Error);
  EXPECT_THROW(Workspace(0), Error);
  EXPECT_THROW(Workspace(1025), Error);
  // Nothing was accumulated by the rejected calls.
  for (double g : grad) ASSERT_EQ(g, 0.0);
  // A valid call still works.
  EXPECT_GT(tiny_loss_and_grad(w.data(), n_ctx, tokens.data(), n_ctx,
                               targets.data(), grad.data(), ws),
            0.0);
}

// Validation windows: every byte but the first predicted once, from the
// bytes since its window's start, with the inference forward.
TEST(Trainer, EvaluationCoversEveryByteWithInferenceSemantics) {
  for (int n_ctx : {4, 64}) {
    SCOPED_TRACE("n_ctx " + std::to_string(n_ctx));
    const ls_tiny_layout L = ls_tiny_layout_for(n_ctx);
    const std::vector<double> w = RandomWeights(n_ctx, 70, 1.0);
    const std::vector<int32_t> t32 = RandomTokens(301, 71);
    const std::vector<uint8_t> bytes(t32.begin(), t32.end());
    uint64_t predicted = 0;
    const double bits = evaluate_bits_per_byte(w, n_ctx, bytes, 0, &predicted);
    EXPECT_EQ(predicted, 300u);
    std::vector<double> scratch(ls_tiny_scratch_words(n_ctx) - L.total);
    std::vector<double> logits(kVocab);
    double nats = 0.0;
    for (size_t i = 1; i < bytes.size(); ++i) {
      const size_t start = (i - 1) / n_ctx * n_ctx;
      const std::vector<int32_t> ctx(bytes.begin() + start, bytes.begin() + i);
      ls_tiny_forward(w.data(), n_ctx, ctx.data(), static_cast<int>(ctx.size()),
                      scratch.data(), logits.data());
      double m = logits[0];
      for (double v : logits) m = std::max(m, v);
      double sum = 0.0;
      for (double v : logits) sum += std::exp(v - m);
      nats += std::log(sum) - (logits[bytes[i]] - m);
    }
    const double expected = nats / 300.0 / std::log(2.0);
    EXPECT_NEAR(bits, expected, 1e-12 * expected);
    EXPECT_GT(bits, 1.0);
  }
}

Dataset& Shakespeare() {
  static Dataset d = load_dataset(kDataPath);
  return d;
}

// (e) The same options give the same bits; another seed does not.
TEST(Trainer, TrainingIsBitReproducible) {
  Dataset& data = Shakespeare();
  for (int n_ctx : {4, 64}) {
    SCOPED_TRACE("n_ctx " + std::to_string(n_ctx));
    TrainOptions o = default_options(n_ctx);
    o.steps = 20;
    o.batch = 4;
    o.warmup_steps = 5;
    o.seed = 12345;
    o.eval_max_windows = 8;
    int calls = 0;
    double last_bits = 0.0;
    o.progress = [&](int step, int total, double bits) {
      EXPECT_EQ(step, calls % 20 + 1);
      ++calls;
      EXPECT_EQ(total, 20);
      last_bits = bits;
    };
    const TrainResult a = train_tiny(data, o);
    const TrainResult b = train_tiny(data, o);
    o.seed = 12346;
    const TrainResult c = train_tiny(data, o);
    ASSERT_EQ(a.weights.size(), ls_tiny_layout_for(n_ctx).total);
    ASSERT_EQ(b.weights.size(), a.weights.size());
    EXPECT_TRUE(SameBits(a.weights.data(), b.weights.data(), a.weights.size()));
    EXPECT_EQ(0, std::memcmp(&a.validation_bits_per_byte,
                             &b.validation_bits_per_byte, sizeof(double)));
    EXPECT_NE(0, std::memcmp(a.weights.data(), c.weights.data(),
                             a.weights.size() * sizeof(double)));
    EXPECT_EQ(calls, 60);
    EXPECT_EQ(last_bits, c.last_train_bits_per_byte);
    EXPECT_EQ(a.steps, 20);
    EXPECT_EQ(a.tokens_seen, 20u * 4u * static_cast<uint64_t>(n_ctx));
    EXPECT_EQ(a.validation_bytes, 8u * static_cast<uint64_t>(n_ctx));
    EXPECT_TRUE(std::isfinite(a.validation_bits_per_byte));
    // Training moved the weights away from the seeded initialisation and
    // kept them inside the bound.
    o.seed = 12345;
    const std::vector<double> init = init_weights(o);
    EXPECT_NE(0, std::memcmp(init.data(), a.weights.data(),
                             init.size() * sizeof(double)));
    for (double v : a.weights) {
      ASSERT_TRUE(v >= -10.0 && v <= 10.0) << hex(v);
    }
  }
}

// A short run learns: the validation loss falls well below the unigram
// baseline (a sign error or a wrong gradient anywhere would not).
TEST(Trainer, ShortRunBeatsUnigramBaseline) {
  TrainOptions o = default_options(4);
  o.steps = 1500;
  o.batch = 16;
  o.eval_max_windows = 2000;
  double first = 0.0;
  o.progress = [&](int step, int, double bits) {
    if (step == 1) first = bits;
  };
  const TrainResult r = train_tiny(Shakespeare(), o);
  EXPECT_EQ(r.validation_bytes, 8000u);
  EXPECT_GT(first, 7.5);  // near log2(256) = 8 at the start
  EXPECT_LT(r.validation_bits_per_byte, r.unigram_bits_per_byte - 0.5);
  EXPECT_GT(r.validation_bits_per_byte, 3.0);
}

TEST(Trainer, RejectsBadOptions) {
  Dataset& data = Shakespeare();
  TrainOptions o = default_options(4);
  o.steps = 1;
  o.n_ctx = 0;
  EXPECT_THROW(train_tiny(data, o), Error);
  o.n_ctx = 1025;
  EXPECT_THROW(train_tiny(data, o), Error);
  o = default_options(4);
  o.batch = 0;
  EXPECT_THROW(train_tiny(data, o), Error);
  o = default_options(4);
  o.learning_rate = std::nan("");
  EXPECT_THROW(train_tiny(data, o), Error);
  o = default_options(4);
  o.weight_bound = 11.0;
  EXPECT_THROW(train_tiny(data, o), Error);
  o = default_options(4);
  o.position_ramp = -1.0;
  EXPECT_THROW(train_tiny(data, o), Error);
  Dataset small = split_dataset(std::vector<uint8_t>(40, 'a'));
  o = default_options(64);
  EXPECT_THROW(train_tiny(small, o), Error);
}

// The documented initialisation: SplitMix64 uniforms, unit LayerNorm gains,
// zero biases, and the position ramp on words 0 and 1 of wpe.
TEST(Trainer, InitialisationIsAsDocumented) {
  TrainOptions o = default_options(64);
  o.seed = 99;
  o.init_scale = 0.25;
  o.position_ramp = 0.5;
  const std::vector<double> w = init_weights(o);
  const ls_tiny_layout L = ls_tiny_layout_for(64);
  ASSERT_EQ(w.size(), L.total);
  uint64_t state = 99;
  std::vector<double> u(L.total);
  for (double& v : u) v = 0.25 * (2.0 * ls_uniform64(&state) - 1.0);
  EXPECT_TRUE(SameBits(u.data(), w.data(), L.wpe));  // wte
  for (int t = 0; t < 64; ++t) {
    const double r = 0.5 * (2.0 * t / 63.0 - 1.0);
    const size_t i = L.wpe + 4 * static_cast<size_t>(t);
    EXPECT_EQ(w[i], u[i] + r) << t;
    EXPECT_EQ(w[i + 1], u[i + 1] - r) << t;
    EXPECT_EQ(w[i + 2], u[i + 2]) << t;
    EXPECT_EQ(w[i + 3], u[i + 3]) << t;
  }
  EXPECT_EQ(w[L.wpe], u[L.wpe] - 0.5);
  EXPECT_EQ(w[L.wpe + 4 * 63], u[L.wpe + 4 * 63] + 0.5);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(w[L.ln1_g + k], 1.0);
    EXPECT_EQ(w[L.ln2_g + k], 1.0);
    EXPECT_EQ(w[L.lnf_g + k], 1.0);
    EXPECT_EQ(w[L.ln1_b + k], 0.0);
    EXPECT_EQ(w[L.proj_b + k], 0.0);
    EXPECT_EQ(w[L.out_b + k], 0.0);
  }
  EXPECT_EQ(w[L.fc_b + 7], 0.0);
  EXPECT_EQ(w[L.head_b + 255], 0.0);
  EXPECT_TRUE(SameBits(&u[L.qkv_w], &w[L.qkv_w], L.proj_b - L.qkv_w));
  EXPECT_TRUE(SameBits(&u[L.head_w], &w[L.head_w], L.head_b - L.head_w));
  // n_ctx 1 has no ramp (a single position).
  o.n_ctx = 1;
  const std::vector<double> w1 = init_weights(o);
  state = 99;
  std::vector<double> u1(ls_tiny_layout_for(1).total);
  for (double& v : u1) v = 0.25 * (2.0 * ls_uniform64(&state) - 1.0);
  EXPECT_TRUE(SameBits(&u1[1024], &w1[1024], 4));
}

TEST(Trainer, DefaultOptionsAreSane) {
  for (int n_ctx : {4, 64, 128}) {
    const TrainOptions o = default_options(n_ctx);
    EXPECT_EQ(o.n_ctx, n_ctx);
    EXPECT_GT(o.steps, 0);
    EXPECT_GE(o.batch, 1);
    EXPECT_GT(o.learning_rate, 0.0);
    EXPECT_EQ(o.weight_bound, 10.0);
    EXPECT_TRUE(o.evaluate);
    EXPECT_EQ(o.eval_max_windows, 0u);
  }
}

// (g) The pinned file, split exactly at floor(size * 9 / 10).
TEST(Dataset, SplitsTinyShakespeareExactly) {
  const Dataset& d = Shakespeare();
  EXPECT_EQ(d.train.size(), 1003854u);
  EXPECT_EQ(d.validation.size(), 111540u);
  EXPECT_EQ(d.sha256, kTinyShakespeareSha256);
  EXPECT_EQ(d.path, kDataPath);
  std::ifstream in(kDataPath, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  ASSERT_EQ(file.size(), 1115394u);
  EXPECT_EQ(0, std::memcmp(file.data(), d.train.data(), d.train.size()));
  EXPECT_EQ(0, std::memcmp(file.data() + d.train.size(), d.validation.data(),
                           d.validation.size()));
  // "First Citizen:" opens the play.
  EXPECT_EQ(std::string(d.train.begin(), d.train.begin() + 14),
            "First Citizen:");
}

TEST(Dataset, UnigramBaseline) {
  const Dataset& d = Shakespeare();
  const double bits = unigram_bits_per_byte(d);
  // Recomputed per byte (a different summation order).
  std::vector<double> count(256, 0.0);
  for (uint8_t b : d.train) count[b] += 1.0;
  double nats = 0.0;
  for (uint8_t b : d.validation) {
    nats -= std::log((count[b] + 1.0) / (d.train.size() + 256.0));
  }
  const double expected = nats / d.validation.size() / std::log(2.0);
  EXPECT_NEAR(bits, expected, 1e-9);
  EXPECT_GT(bits, 4.7);
  EXPECT_LT(bits, 4.9);
  // A tiny split by hand: train "aab" (9 bytes of data: 'a' 2, 'b' 1), so
  // p(a) = 3 / 259; validation "a".
  Dataset tiny;
  tiny.train = {'a', 'a', 'b'};
  tiny.validation = {'a'};
  EXPECT_NEAR(unigram_bits_per_byte(tiny), std::log2(259.0 / 3.0), 1e-12);
  tiny.validation.clear();
  EXPECT_THROW(unigram_bits_per_byte(tiny), Error);
}

TEST(Dataset, RejectsWrongDigestAndMissingFile) {
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() /
      ("lockstep_train_test_" + std::to_string(::getpid()) + ".txt");
  {
    // The real text with one byte changed.
    std::ifstream in(kDataPath, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    text[1000] ^= 1;
    std::ofstream out(tmp, std::ios::binary);
    out << text;
  }
  try {
    load_dataset(tmp.string());
    ADD_FAILURE() << "a wrong digest was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(tmp.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(kTinyShakespeareSha256), std::string::npos) << msg;
    EXPECT_NE(msg.find("SHA-256"), std::string::npos) << msg;
    // The actual digest is printed too: 64 hex digits besides the expected.
    const size_t at = msg.find("SHA-256 ");
    ASSERT_NE(at, std::string::npos);
    const std::string actual = msg.substr(at + 8, 64);
    EXPECT_EQ(actual.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_NE(actual, kTinyShakespeareSha256);
  }
  std::filesystem::remove(tmp);
  EXPECT_THROW(load_dataset(tmp.string()), Error);
  // split_dataset on arbitrary sizes: floor(size * 9 / 10).
  EXPECT_EQ(split_dataset(std::vector<uint8_t>(19)).train.size(), 17u);
  EXPECT_EQ(split_dataset(std::vector<uint8_t>(19)).validation.size(), 2u);
  EXPECT_EQ(split_dataset(std::vector<uint8_t>(10)).train.size(), 9u);
}

}  // namespace
}  // namespace lockstep::train
