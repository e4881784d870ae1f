// Standard output written synchronously and completely: a pipe may take a
// write in pieces or ask to retry (EAGAIN), and the native CLI reading the
// host (serve.mjs) or comparing its output needs every byte, in order.
import { writeSync } from 'node:fs';

//
// A failed write throws OutputError; lockstep.mjs ends as the native CLI
// does (cli/output.h, docs/cli.md "Output"): quietly with status 141 for a
// closed pipe (EPIPE; Node ignores SIGPIPE, so the status is set, not a
// signal), a message and status 1 otherwise (ENOSPC: a full disk).
export class OutputError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export function writeStdout(s) {
  const buf = Buffer.isBuffer(s) ? s : Buffer.from(s);
  let at = 0;
  while (at < buf.length) {
    try {
      at += writeSync(1, buf, at, buf.length - at);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      throw new OutputError(e.code, `cannot write standard output: ` +
                            `${e.code === 'ENOSPC' ? 'No space left on device'
                                                   : e.message}`);
    }
  }
}
