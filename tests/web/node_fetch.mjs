// A fetch for file paths in Node.js (Node 20's fetch has no file: URLs), for
// the tests that run web/lockstep-web.mjs outside a browser.
import { readFile } from 'node:fs/promises';

export async function fileFetch(path) {
  try {
    const b = await readFile(path);
    return { ok: true, status: 200,
             arrayBuffer: async () =>
               b.buffer.slice(b.byteOffset, b.byteOffset + b.length),
             text: async () => b.toString('utf8') };
  } catch {
    return { ok: false, status: 404 };
  }
}
