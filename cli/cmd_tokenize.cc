// lockstep tokenize: GPT-2 byte-level BPE ids of text, or text of ids.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/generate_args.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#include "tokenizer/bpe.h"

namespace lockstep::cli {

Action add_tokenize(CLI::App& app) {
  struct Args {
    PromptArgs prompt;
    bool decode = false, json = false, special = false;
  };
  auto a = std::make_shared<Args>();
  a->prompt.add(app, "text to encode", "ids to decode (--decode)");
  app.add_flag("--decode,-d", a->decode,
               "decode ids to text: --tokens, or --file / - holding ids "
               "separated by commas or white space");
  app.add_flag("--json", a->json, "print JSON");
  app.add_flag("--special", a->special, "'<|endoftext|>' is token 50256");
  app.footer(
      "Examples:\n"
      "  lockstep tokenize --text 'Hello world'\n"
      "  lockstep tokenize --file prompt.txt --json\n"
      "  printf 'Hello' | lockstep tokenize -\n"
      "  lockstep tokenize --decode --tokens 15496,995");
  return [a]() {
    a->prompt.resolve();
    const Tokenizer tok = Tokenizer::load(data_dir() + "/gpt2");
    if (a->decode) {
      if (!a->prompt.from_tokens() && !a->prompt.from_file() &&
          !a->prompt.text.empty()) {
        throw Error(
            "--decode reads ids from --tokens, --file or -, not --text");
      }
      const std::string s = tok.decode(
          a->prompt.from_file() ? parse_token_text(a->prompt.text)
                                : parse_token_list(a->prompt.tokens));
      if (a->json) {
        std::printf("%s\n", nlohmann::json(escape_bytes(s)).dump().c_str());
      } else {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fputc('\n', stdout);
      }
      return 0;
    }
    if (a->prompt.from_tokens()) {
      throw Error(
          "--tokens is for --decode; text to encode goes in --text, "
          "--file or -");
    }
    const auto ids = tok.encode(a->prompt.text, a->special);
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
