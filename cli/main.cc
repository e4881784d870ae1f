// lockstep: the command-line client of the library. Thin by design: every
// computation lives in the library and the core.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/output.h"
#include "lockstep/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "lockstep: GPT-2 inference with the same bits on every backend.\n"
      "Every floating-point operation follows docs/arithmetic.md."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lockstep 0.1.0");
  std::map<CLI::App*, lockstep::cli::Action> actions;
  const auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    actions[sub] = adder(*sub);
  };
  add("generate", "next-byte distribution, logits, or generated text",
      lockstep::cli::add_generate);
  add("info", "a model's config, parameter count and digests",
      lockstep::cli::add_info);
  add("logits", "GPT-2 logits as binary32 rows, for tools and tests",
      lockstep::cli::add_logits);
  add("tokenize", "GPT-2 BPE: text to ids, or ids to text (--decode)",
      lockstep::cli::add_tokenize);
  add("convert", "a Hugging Face GPT-2 folder to a packed checkpoint",
      lockstep::cli::add_convert);
  add("bench", "GPT-2 decode and prefill speed against this machine's limits",
      lockstep::cli::add_bench);
  add("train", "train a tiny model deterministically on Tiny Shakespeare",
      lockstep::cli::add_train);
  add("verify", "every backend, every logit and cache word, byte for byte",
      lockstep::cli::add_verify);
  add("bisect", "the first layer and operation where verify bundles differ",
      lockstep::cli::add_bisect);
  add("dump", "every layer's intermediate tensors as safetensors",
      lockstep::cli::add_dump);
  add("serve", "an OpenAI-style HTTP server with reproducible completions",
      lockstep::cli::add_serve);
  add("certify", "prove GPT-2 greedy choices are the real model's argmax",
      lockstep::cli::add_certify);
  add("serve-web", "the browser page (WebAssembly and WebGPU) on 127.0.0.1",
      lockstep::cli::add_serve_web);
  add("certify-tiny", "certified bounds on the tiny models' logit errors",
      lockstep::cli::add_certify_tiny);
  // A write to a closed pipe fails with EPIPE instead of killing the
  // process mid-write; cli/output.h ends every command the same way then.
  std::signal(SIGPIPE, SIG_IGN);
  // A first word that is an unknown option, or neither a flag nor a
  // command, gets a plain message naming it (CLI11 would only say that a
  // subcommand is required).
  if (argc > 1 && argv[1][0] == '-' && std::strcmp(argv[1], "-") != 0) {
    const std::string flag = argv[1];
    const std::string name = flag.substr(0, flag.find('='));
    if (name != "--help" && name != "-h" && name != "--version") {
      std::fprintf(stderr,
                   "lockstep: error: unknown option '%s' before the command "
                   "(options go after it: lockstep COMMAND --help)\n",
                   argv[1]);
      return 2;
    }
  }
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (auto& [sub, action] : actions) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr,
                   "lockstep: error: unknown command '%s' (commands: %s)\n",
                   argv[1], names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; every usage error (unknown
    // option, bad or missing value) is status 2 (docs/cli.md).
    if (app.exit(e) != 0) return 2;
    try {
      lockstep::cli::close_stdout();  // --help > /dev/full is an error too
    } catch (const lockstep::cli::OutputError& oe) {
      return lockstep::cli::exit_for_output_error(oe);
    }
    return 0;
  }
  int status = 0;
  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) {
        status = action();
        break;
      }
    }
    lockstep::cli::close_stdout();
  } catch (const lockstep::cli::OutputError& e) {
    return lockstep::cli::exit_for_output_error(e);
  } catch (const lockstep::Error& e) {
    std::fprintf(stderr, "lockstep: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep: internal error: %s\n", e.what());
    return 3;
  }
  return status;
}
