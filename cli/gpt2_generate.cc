// lockstep generate on GPT-2: tokenize, prefill the prompt in one batched
// pass, then stream tokens from the KV-cached step (or, with --full, from a
// full-prefix pass per token: the same bits, so the same tokens), until
// --generate tokens, <|endoftext|>, a --stop string or the context limit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "cli/generate_args.h"
#include "cli/gpt2_runner.h"
#include "cli/output.h"
#include "formats/gpt2_checkpoint.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "lockstep/paths.h"
#include "tokenizer/bpe.h"

namespace lockstep::cli {
namespace {

void print_distribution(const GenerateArgs& a, const Tokenizer& tok,
                        std::span<const float> logits) {
  if (a.logits) {
    for (size_t i = 0; i < logits.size(); ++i) {
      std::printf("%5zu %s\n", i, hex_float(logits[i]).c_str());
    }
    return;
  }
  // Probabilities for display only, in binary64.
  const float m = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] - m);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t top = std::min<size_t>(size_t(a.top), order.size());
  std::partial_sort(order.begin(), order.begin() + long(top), order.end(),
                    [&](int32_t x, int32_t y) {
                      return logits[size_t(x)] > logits[size_t(y)] ||
                             (logits[size_t(x)] == logits[size_t(y)] && x < y);
                    });
  std::printf("rank  token   prob      logit            text\n");
  for (size_t r = 0; r < top; ++r) {
    const int32_t id = order[r];
    std::printf("%4zu  %5d   %.5f   %-15s  '%s'\n", r + 1, id,
                p[size_t(id)] / sum, hex_float(logits[size_t(id)]).c_str(),
                escape_bytes(tok.token_bytes(id)).c_str());
  }
}

}  // namespace

int run_gpt2_generate(const GenerateArgs& args) {
  using Clock = std::chrono::steady_clock;
  GenerateArgs a = args;
  if (a.bound_given) {
    throw Error(
        "--bound clips the tiny models' weights; GPT-2 runs its weights as "
        "they are (leave --bound out)");
  }
  const Gpt2Weights w = load_gpt2_any(a.model.path());  // int8 too
  const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
  const ls_gpt2_config& c = w.config;
  if (a.sampler.top_k == kWholeVocabulary) a.sampler.top_k = c.n_vocab;
  std::vector<int32_t> tokens = a.prompt.from_tokens()
                                    ? parse_token_list(a.prompt.tokens)
                                    : tok.encode(a.prompt.text, a.special);
  if (tokens.empty()) {
    throw Error(
        "the prompt is empty: give --text, --tokens, --file or - with at "
        "least one token");
  }
  if (tokens.size() > size_t(c.n_ctx)) {
    throw Error("the prompt has " + std::to_string(tokens.size()) +
                " tokens; the model's context is " + std::to_string(c.n_ctx));
  }
  const size_t n_prompt = tokens.size();
  // --full: every pass is a full prefix (up to n_ctx positions); otherwise
  // the prompt is one batched prefill, then one cached step per token.
  Gpt2Runner session(a.model.path(), w, a.backend, a.threads,
                     a.full ? c.n_ctx : int(n_prompt));
  Sampler sampler(a.sampler, c.n_vocab);

  // Prefill: the prompt's last position's logits.
  const auto t0 = Clock::now();
  std::span<const float> logits =
      a.full ? session.infer(tokens) : session.prefill(tokens);
  const auto t1 = Clock::now();
  if (a.generate == 0) {
    if (a.json) {
      nlohmann::json hexes = nlohmann::json::array();
      for (float v : logits) hexes.push_back(hex_float(v));
      std::printf("%s\n", nlohmann::json({{"model", a.model.label()},
                                          {"payload_sha256", w.payload_sha256},
                                          {"tokens", tokens},
                                          {"logits_hex", hexes}})
                              .dump()
                              .c_str());
    } else {
      print_distribution(a, tok, logits);
    }
    return 0;
  }

  if (!a.json) {
    const std::string shown = tok.decode(tokens);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    flush_stdout();
  }
  StopStream out(a.stops, !a.json);
  GenerationSummary sum;
  sum.prompt_tokens = n_prompt;
  sum.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();
  sum.backend = session.backend_name() + (a.full ? ", --full" : "");
  sum.threads = session.threads();
  std::vector<int32_t> generated;
  for (int i = 0; i < a.generate; ++i) {
    const int32_t next = sampler.next(logits);
    generated.push_back(next);
    tokens.push_back(next);
    // <|endoftext|> ends the text: it is not printed.
    if (a.stop_eot && next == Tokenizer::kEndOfText) {
      sum.stop = StopReason::kEndOfText;
      break;
    }
    if (out.add(tok.token_bytes(next))) {
      sum.stop = StopReason::kStopString;
      break;
    }
    if (i + 1 == a.generate) break;
    if (tokens.size() >= size_t(c.n_ctx)) {
      sum.stop = StopReason::kContext;
      break;
    }
    logits = a.full ? session.infer(tokens) : session.step(next);
  }
  out.finish();
  sum.generated = generated.size();
  sum.generate_seconds =
      std::chrono::duration<double>(Clock::now() - t1).count();
  if (a.json) {
    nlohmann::json j = {
        {"model", a.model.label()},
        {"payload_sha256", w.payload_sha256},
        {"prompt_tokens",
         std::vector<int32_t>(tokens.begin(), tokens.begin() + long(n_prompt))},
        {"tokens", generated},
        {"text", escape_bytes(out.text())}};
    // Only when generation ended early, so that other output stays as it
    // was (and as the Node.js host prints it).
    if (sum.stop == StopReason::kEndOfText) j["stop"] = "eot";
    if (sum.stop == StopReason::kStopString) {
      j["stop"] = "string";
      j["stop_string"] = escape_bytes(out.stopped_by());
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::fputc('\n', stdout);
  }
  flush_stdout();
  if (sum.stop == StopReason::kContext) {
    std::fprintf(stderr,
                 "note: stopped at the context limit of %d positions after "
                 "%zu of %d tokens\n",
                 c.n_ctx, generated.size(), a.generate);
  }
  print_summary(sum, a.quiet);
  return 0;
}

}  // namespace lockstep::cli
