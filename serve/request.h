// The requests `lockstep serve` accepts (docs/serve.md): an OpenAI-style
// JSON body parsed and checked into one CompletionRequest, every problem
// named in a RequestError (HTTP 400 or 404) before any session is taken.
#ifndef LOCKSTEP_SERVE_REQUEST_H_
#define LOCKSTEP_SERVE_REQUEST_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/sampling.h"
#include "tokenizer/bpe.h"

namespace lockstep::serve {

// A request the server refuses: the HTTP status, OpenAI's error type and
// code, the parameter at fault (empty: none) and a message naming the
// problem.
struct RequestError : std::runtime_error {
  RequestError(int status, std::string message, std::string param = "",
               std::string type = "invalid_request_error",
               std::string code = "")
      : std::runtime_error(message),
        status(status),
        param(std::move(param)),
        type(std::move(type)),
        code(std::move(code)) {}
  int status;
  std::string param, type, code;
};

// What the server's options fix for every request.
struct RequestLimits {
  std::string model_id;  // the id /v1/models lists
  int n_ctx = 0;
  int n_vocab = 0;
  int max_tokens = 0;  // --max-tokens-limit
};

enum class Endpoint { kCompletions, kChat };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string prompt_text;  // the prompt (chat: the template's text)
  std::vector<int32_t> prompt_tokens;
  int max_tokens = 16;
  // The sampler as lockstep runs it (docs/serve.md "Sampling"): greedy at
  // temperature 0, otherwise top-k (the whole vocabulary unless top_k is
  // given) and top-p with the seed.
  SamplerOptions sampler;
  std::vector<std::string> stops;  // chat: the request's, then "\nUser:"
  // Completions: logprobs = N (top-N alternatives per token; -1 none).
  // Chat: logprobs true gives the chosen token's (top_logprobs N more).
  int top_logprobs = -1;
  bool stream = false;
};

// The chat template for a base model (docs/serve.md "Chat"): each message
// as "Role: content\n" (System, User, Assistant), then "Assistant:".
inline constexpr std::string_view kChatUserStop = "\nUser:";

// Parses and checks a body; throws RequestError.
CompletionRequest parse_request(Endpoint endpoint, std::string_view body,
                                const RequestLimits& limits,
                                const Tokenizer& tok);

// The chat template's text for a messages array (already checked).
std::string chat_prompt(const nlohmann::json& messages);

}  // namespace lockstep::serve

#endif  // LOCKSTEP_SERVE_REQUEST_H_
