// lockstep tokenize: GPT-2 byte-level BPE ids of text, or text of ids.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "lockstep/paths.h"
#include "tokenizer/bpe.h"

namespace lockstep::cli {

Action add_tokenize(CLI::App& app) {
  struct Args {
    std::string text, tokens;
    bool decode = false, json = false, special = false;
  };
  auto a = std::make_shared<Args>();
  auto* t = app.add_option("--text,-t", a->text, "text to encode");
  auto* k = app.add_option("--tokens", a->tokens, "ids to decode (--decode)");
  t->excludes(k);
  app.add_flag("--decode,-d", a->decode, "decode --tokens to text");
  app.add_flag("--json", a->json, "print JSON");
  app.add_flag("--special", a->special, "'<|endoftext|>' is token 50256");
  return [a]() {
    const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
    if (a->decode) {
      const std::string s = tok.decode(parse_token_list(a->tokens));
      if (a->json) {
        std::printf("%s\n", nlohmann::json(escape_bytes(s)).dump().c_str());
      } else {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fputc('\n', stdout);
      }
      return 0;
    }
    const auto ids = tok.encode(a->text, a->special);
    if (a->json) {
      std::printf("%s\n", nlohmann::json(ids).dump().c_str());
      return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      std::printf(i ? ",%d" : "%d", ids[i]);
    }
    std::printf("\n");
    return 0;
  };
}

}  // namespace lockstep::cli
