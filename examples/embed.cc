// Embedding lockstep: load GPT-2, tokenize, prefill the prompt, generate
// greedily. Build: see examples/CMakeLists.txt. Run: embed MODEL_PATH "prompt"
#include <cstdio>
#include <exception>

#include "formats/gpt2_checkpoint.h"
#include "lockstep/gpt2.h"
#include "lockstep/paths.h"
#include "lockstep/sampling.h"
#include "tokenizer/bpe.h"

int main(int argc, char** argv) try {
  if (argc != 3) return std::fprintf(stderr, "usage: embed MODEL TEXT\n"), 2;
  const lockstep::Gpt2Weights w = lockstep::load_gpt2(argv[1]);
  const auto tok = lockstep::Tokenizer::load(lockstep::data_dir() + "/gpt2");
  lockstep::Gpt2Session session({w.config, w.data(), w.words(), w.layout});
  lockstep::Sampler greedy({}, w.config.n_vocab);
  const std::vector<int32_t> prompt = tok.encode(argv[2]);
  if (prompt.empty()) return std::fprintf(stderr, "embed: empty prompt\n"), 2;
  // The whole prompt in one batched prefill: the same logits and cache,
  // bit for bit, as stepping it one token at a time.
  std::span<const float> logits = session.prefill(prompt);
  for (int i = 0; i < 8; ++i) {
    const int32_t next = greedy.next(logits);
    std::printf("%d%c", next, i < 7 ? ',' : '\n');
    logits = session.step(next);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "embed: error: %s\n", e.what());
  return 1;
}
