// Standard output that can fail: a full disk (ENOSPC, e.g. > /dev/full) or
// a reader that has gone (EPIPE, e.g. | head -c1). main() ignores SIGPIPE,
// so a write to a closed pipe fails with EPIPE instead of killing the
// process at some arbitrary write (the WebAssembly host needs SIGPIPE
// ignored anyway, hosts/native/wasm_host.cc), and every path then ends the
// same way (docs/cli.md "Output"):
// - EPIPE: quietly, by SIGPIPE (status 141 in a shell), as coreutils do;
// - any other error: "lockstep: error: cannot write standard output: ..."
//   and status 1.
// Streamed output checks after each flush (so generation stops at once);
// main() checks the final flush and close of every command.
#ifndef LOCKSTEP_CLI_OUTPUT_H_
#define LOCKSTEP_CLI_OUTPUT_H_

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

namespace lockstep::cli {

// Thrown when standard output cannot be written; main() turns it into the
// exit described above.
struct OutputError {
  int err;  // errno of the failed write (0 when unknown)
};

// Flushes standard output; throws OutputError when the flush fails or an
// earlier write did. errno is not cleared first: when a printf's own flush
// failed earlier (its buffer then dropped, so this fflush succeeds), errno
// still holds that write's error (ENOSPC, EPIPE).
inline void flush_stdout() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    throw OutputError{errno};
  }
}

// The end of a command that failed to write standard output: SIGPIPE for a
// closed pipe, a message and status 1 otherwise. Returns the status (when
// the signal does not end the process).
inline int exit_for_output_error(const OutputError& e) {
  if (e.err == EPIPE) {
    std::signal(SIGPIPE, SIG_DFL);
    std::raise(SIGPIPE);
    return 128 + SIGPIPE;
  }
  std::fprintf(stderr, "lockstep: error: cannot write standard output: %s\n",
               e.err ? std::strerror(e.err) : "write error");
  return 1;
}

// main()'s last step: flush and close standard output, so that a full disk
// is seen even when every write went into the stdio buffer. Throws
// OutputError.
inline void close_stdout() {
  flush_stdout();
  errno = 0;
  if (std::fclose(stdout) != 0) throw OutputError{errno};
}

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_OUTPUT_H_
