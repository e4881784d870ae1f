// Runs tools/sweep32's WebAssembly module (sweep32_wasm.c) over the inputs
// first + i*stride (mod 2^32), i in [0, count), and prints one line per
// chunk of 65536 inputs: the chunk index and four FNV-1a digests (exp SIMD,
// exp scalar, tanh, GELU) in hex. The native sweep compares them with its
// own. Usage: node sweep32_wasm.mjs MODULE FIRST STRIDE COUNT [C0 C1]
// (only chunks [C0, C1)).
import { readFileSync, writeSync } from 'node:fs';

const [modPath, firstS, strideS, countS, c0S, c1S] = process.argv.slice(2);
if (!modPath || countS === undefined) {
  console.error('usage: node sweep32_wasm.mjs MODULE FIRST STRIDE COUNT [C0 C1]');
  process.exit(2);
}
const first = Number(firstS) >>> 0;
const stride = Number(strideS) >>> 0;
const count = Number(countS);
const CHUNK = 65536;
const nChunks = Math.ceil(count / CHUNK);
const c0 = c0S === undefined ? 0 : Number(c0S);
const c1 = c1S === undefined ? nChunks : Math.min(Number(c1S), nChunks);

const module = new WebAssembly.Module(readFileSync(modPath));
const memory = new WebAssembly.Memory({ initial: 32, maximum: 32 });
const x = new WebAssembly.Instance(module, { env: { memory } }).exports;
const out = x.sweep_out();
let lines = [];
for (let c = c0; c < c1; ++c) {
  const n = Math.min(CHUNK, count - c * CHUNK);
  x.sweep_chunk(first, stride, c, n, out);
  const h = new BigUint64Array(memory.buffer, out, 4);
  lines.push(`${c} ${h[0].toString(16)} ${h[1].toString(16)} ` +
             `${h[2].toString(16)} ${h[3].toString(16)}`);
  if (lines.length >= 256) {
    writeSync(1, lines.join('\n') + '\n');
    lines = [];
  }
}
if (lines.length) writeSync(1, lines.join('\n') + '\n');
