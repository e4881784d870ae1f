// One completion on one session: the prompt's batched prefill, then the
// cached step per token with the sampler, stop strings and <|endoftext|>
// exactly as `lockstep generate` runs them (cli/gpt2_generate.cc; the
// serve test checks the same bytes), plus what the server reports per
// step: the SHA-256 of the logits each token was drawn from and, when
// asked, log-probabilities.
#ifndef LOCKSTEP_SERVE_COMPLETION_H_
#define LOCKSTEP_SERVE_COMPLETION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/gpt2_runner.h"
#include "serve/request.h"
#include "tokenizer/bpe.h"

namespace lockstep::serve {

// Log-probabilities of one step under the model's distribution (the
// logits at temperature 1, whatever the request samples with).
struct TokenLogprobs {
  double chosen = 0;
  std::vector<std::pair<int32_t, double>> top;  // most likely first
};

// What one step produced.
struct StepEvent {
  int index = 0;
  int32_t token = 0;
  // The bytes this step releases: a stream holds back bytes that could
  // begin a stop string and an incomplete UTF-8 sequence until it knows
  // more; the last step releases the rest.
  std::string text;
  std::string logits_sha256;  // hex, of the n_vocab binary32 logits' bytes
  const TokenLogprobs* logprobs = nullptr;  // when asked
};

enum class Finish { kLength, kContext, kEndOfText, kStopString, kCancelled };

// "stop" or "length", as OpenAI reports finish_reason.
const char* openai_finish(Finish f);
// lockstep's own name: length, context, eot, stop_string, cancelled.
const char* lockstep_finish(Finish f);

struct Completion {
  std::vector<int32_t> tokens;             // generated, <|endoftext|> included
  std::string text;                        // their bytes up to any stop string
  std::vector<std::string> logits_sha256;  // per step
  std::string logits_sha256_all;           // of every step's logits, in order
  std::vector<TokenLogprobs> logprobs;     // per step, when asked
  Finish finish = Finish::kLength;
  std::string stop_string;
  double prefill_ms = 0, generate_ms = 0;
};

// Runs `r` from position 0 of `session`. on_step (may be empty) sees each
// step as it is made; returning false ends the completion (kCancelled).
// Throws lockstep::Error when the engine refuses (a non-finite logit).
Completion run_completion(cli::Gpt2Runner& session, const CompletionRequest& r,
                          const Tokenizer& tok, int n_ctx,
                          const std::function<bool(const StepEvent&)>& on_step);

// The length of the longest prefix of `bytes` that does not end inside a
// UTF-8 sequence that more bytes could complete.
size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace lockstep::serve

#endif  // LOCKSTEP_SERVE_COMPLETION_H_
