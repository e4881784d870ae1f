// The options of `lockstep generate`, shared by the tiny and GPT-2 paths.
#ifndef LOCKSTEP_CLI_GENERATE_ARGS_H_
#define LOCKSTEP_CLI_GENERATE_ARGS_H_

#include <string>
#include <vector>

#include "cli/model_args.h"
#include "lockstep/sampling.h"

namespace lockstep::cli {

// top_k value meaning "every token" (set when only --temperature is given).
inline constexpr int kWholeVocabulary = -1;

struct GenerateArgs {
  ModelArgs model;
  std::string text;
  std::string tokens;
  int generate = 0;
  int top = 10;
  bool logits = false;
  bool json = false;
  bool full = false;     // GPT-2: recompute the full prefix for every token
  bool special = false;  // GPT-2: "<|endoftext|>" in --text is token 50256
  double bound = 10.0;
  std::string backend = "cpu";  // GPT-2: see backends/backend.h
  int threads = 2;
  SamplerOptions sampler;
};

// Parses "1,2,3"; throws lockstep::Error naming the bad item.
std::vector<int32_t> parse_token_list(const std::string& list);
// A byte string as it would appear in a C string literal.
std::string escape_bytes(const std::string& bytes);
// %a of a value.
std::string hex_float(double v);

int run_tiny_generate(const GenerateArgs& a);
int run_gpt2_generate(const GenerateArgs& a);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_GENERATE_ARGS_H_
