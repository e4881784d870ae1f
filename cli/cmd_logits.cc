// lockstep logits: GPT-2 logits as little-endian binary32 rows, for tools
// and tests.
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "cli/gpt2_runner.h"
#include "cli/progress.h"
#include "formats/checkpoint.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "lockstep/paths.h"
#include "tokenizer/bpe.h"

namespace lockstep::cli {
namespace {

struct LogitsArgs {
  ModelArgs model;
  std::string tokens, text, out;
  bool all_positions = false;
  bool full = false;
  bool special = false;
  std::string backend = "cpu";
  int threads = 2;
};

int run(const LogitsArgs& a) {
  if (a.model.kind() != ModelKind::kGpt2) {
    throw Error(
        "lockstep logits is for GPT-2 models; for a tiny model use "
        "`lockstep generate --logits --json`");
  }
  const Gpt2Weights w = load_gpt2(a.model.path());
  const ls_gpt2_config& c = w.config;
  std::vector<int32_t> tokens;
  if (!a.text.empty()) {
    tokens = Tokenizer::load(data_dir() + "/gpt2").encode(a.text, a.special);
  } else {
    tokens = parse_token_list(a.tokens);
  }
  if (tokens.empty()) throw Error("no tokens: give --tokens or --text");
  if (tokens.size() > size_t(c.n_ctx)) {
    throw Error(std::to_string(tokens.size()) +
                " tokens exceed the context "
                "of " +
                std::to_string(c.n_ctx));
  }
  Gpt2Runner session(a.model.path(), w, a.backend, a.threads,
                     a.full ? c.n_ctx : 1);
  const size_t rows = a.all_positions ? tokens.size() : 1;
  const size_t V = size_t(c.n_vocab);
  std::vector<uint8_t> bytes(rows * V * sizeof(float));
  ProgressBar bar("logits", long(tokens.size()));
  for (size_t t = 0; t < tokens.size(); ++t) {
    std::span<const float> logits;
    if (a.full) {
      if (!a.all_positions && t + 1 < tokens.size()) continue;
      logits = session.infer({tokens.data(), t + 1});
    } else {
      logits = session.step(tokens[t]);
    }
    if (a.all_positions || t + 1 == tokens.size()) {
      const size_t row = a.all_positions ? t : 0;
      std::memcpy(bytes.data() + row * V * sizeof(float), logits.data(),
                  V * sizeof(float));
    }
    if (tokens.size() > 8) bar.update(long(t + 1));
  }
  write_file_atomic(a.out, bytes);
  std::fprintf(stderr, "wrote %zu x %zu binary32 logits to %s\n", rows, V,
               a.out.c_str());
  return 0;
}

}  // namespace

Action add_logits(CLI::App& app) {
  auto a = std::make_shared<LogitsArgs>();
  a->model.add(app);
  auto* t = app.add_option("--tokens", a->tokens, "token ids, e.g. 15496,995");
  auto* x = app.add_option("--text", a->text, "text to tokenize first");
  t->excludes(x);
  app.add_option("--out,-o", a->out,
                 "output file: little-endian binary32, rows x vocabulary")
      ->required();
  app.add_flag("--all-positions", a->all_positions,
               "one row per position instead of the last only");
  app.add_flag("--full", a->full,
               "compute each row by a full-prefix pass (same bits)");
  app.add_flag("--special", a->special, "'<|endoftext|>' is token 50256");
  add_backend_options(app, a->backend, a->threads);
  return [a]() { return run(*a); };
}

}  // namespace lockstep::cli
