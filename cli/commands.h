// The lockstep subcommands. Each registers its options on the CLI11 app and
// returns the action to run after parsing; actions throw lockstep::Error for
// bad input and main() turns that into a message and exit code 1.
#ifndef LOCKSTEP_CLI_COMMANDS_H_
#define LOCKSTEP_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace lockstep::cli {

using Action = std::function<int()>;

Action add_generate(CLI::App& app);
Action add_info(CLI::App& app);
Action add_train(CLI::App& app);
Action add_logits(CLI::App& app);
Action add_tokenize(CLI::App& app);
Action add_convert(CLI::App& app);
Action add_bench(CLI::App& app);
Action add_verify(CLI::App& app);
Action add_bisect(CLI::App& app);
Action add_dump(CLI::App& app);
Action add_serve(CLI::App& app);
Action add_certify(CLI::App& app);
Action add_serve_web(CLI::App& app);
Action add_certify_tiny(CLI::App& app);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_COMMANDS_H_
