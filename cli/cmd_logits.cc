// lockstep logits: GPT-2 logits as little-endian binary32 rows, for tools
// and tests. The prompt goes through the batched prefill (or, with --full,
// a full-prefix pass per row); both give the same bits.
#include <algorithm>
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
  PromptArgs prompt;
  std::string out;
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
  const Gpt2Weights w = load_gpt2_any(a.model.path());  // int8 too
  const ls_gpt2_config& c = w.config;
  const std::vector<int32_t> tokens =
      a.prompt.from_tokens() ? parse_token_list(a.prompt.tokens)
                             : Tokenizer::load(data_dir() + "/gpt2")
                                   .encode(a.prompt.text, a.special);
  if (tokens.empty()) {
    throw Error("no tokens: give --tokens, --text, --file or -");
  }
  if (tokens.size() > size_t(c.n_ctx)) {
    throw Error(std::to_string(tokens.size()) +
                " tokens exceed the context "
                "of " +
                std::to_string(c.n_ctx));
  }
  // Without --full the prompt goes through the batched prefill, in chunks
  // of kChunk positions (with --all-positions one call per chunk, so that
  // the progress bar moves; any chunking gives the same bits).
  constexpr size_t kChunk = 128;
  Gpt2Runner session(a.model.path(), w, a.backend, a.threads,
                     a.full ? c.n_ctx : int(std::min(tokens.size(), kChunk)));
  const size_t rows = a.all_positions ? tokens.size() : 1;
  const size_t V = size_t(c.n_vocab);
  std::vector<uint8_t> bytes(rows * V * sizeof(float));
  ProgressBar bar("logits", long(tokens.size()));
  if (a.full) {
    for (size_t t = 0; t < tokens.size(); ++t) {
      if (!a.all_positions && t + 1 < tokens.size()) continue;
      const std::span<const float> logits =
          session.infer({tokens.data(), t + 1});
      std::memcpy(bytes.data() + (a.all_positions ? t : 0) * V * sizeof(float),
                  logits.data(), V * sizeof(float));
      if (tokens.size() > 8) bar.update(long(t + 1));
    }
  } else if (!a.all_positions) {
    // One call: the session chunks the prompt itself and checks only the
    // last position's logits, as --full does (docs/arithmetic.md 1.6); a
    // chunk per call would check each chunk's last position too.
    const std::span<const float> logits = session.prefill(tokens);
    std::memcpy(bytes.data(), logits.data(), V * sizeof(float));
    if (tokens.size() > kChunk) bar.update(long(tokens.size()));
  } else {
    for (size_t done = 0; done < tokens.size();) {
      const size_t n = std::min(kChunk, tokens.size() - done);
      const std::span<const float> logits =
          session.prefill({tokens.data() + done, n}, a.all_positions);
      std::memcpy(bytes.data() + done * V * sizeof(float), logits.data(),
                  n * V * sizeof(float));
      done += n;
      if (tokens.size() > kChunk) bar.update(long(done));
    }
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
  a->prompt.add(app, "text to tokenize first", "token ids, e.g. 15496,995",
                false);
  app.add_option("--out,-o", a->out,
                 "output file: little-endian binary32, rows x vocabulary")
      ->required();
  app.add_flag("--all-positions", a->all_positions,
               "one row per position instead of the last only");
  app.add_flag("--full", a->full,
               "compute each row by a full-prefix pass (same bits)");
  app.add_flag("--special", a->special, "'<|endoftext|>' is token 50256");
  add_backend_options(app, a->backend, a->threads);
  app.footer(
      "Examples:\n"
      "  lockstep logits --model gpt2.lockstep --text 'Hello world' "
      "--all-positions --out l.f32\n"
      "  lockstep logits --model gpt2.lockstep --file prompt.txt --out "
      "l.f32\n"
      "  lockstep logits --model gpt2.lockstep --tokens 15496,995 --out "
      "l.f32");
  return [a]() {
    a->prompt.resolve();
    return run(*a);
  };
}

}  // namespace lockstep::cli
