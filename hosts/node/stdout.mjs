// Standard output written synchronously and completely: a pipe may take a
// write in pieces or ask to retry (EAGAIN), and the native CLI reading the
// host (serve.mjs) or comparing its output needs every byte, in order.
import { writeSync } from 'node:fs';

export function writeStdout(s) {
  const buf = Buffer.isBuffer(s) ? s : Buffer.from(s);
  let at = 0;
  while (at < buf.length) {
    try {
      at += writeSync(1, buf, at, buf.length - at);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}
