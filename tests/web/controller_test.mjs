// lockstep-web.wasm's controller (wasm/lsw_web.c) against lockstep.wasm's
// own cached step and prefill, in Node.js, through web/lockstep-web.mjs:
// every logit of the prompt's last position and of every generated step,
// compared bit for bit, with the module's own (core) products; plus the
// page's checkpoint readers: Hugging Face safetensors and the packed file
// `lockstep convert` wrote of the same weights give the same payload. The
// same for grouped int8 (INT8_FILE, `lockstep convert --quant int8` of the
// same weights): the controller's int8 pass against lockstep.wasm's int8
// entries, and hosts/node/q8_quantize.mjs's bytes against the converter's.
//   node controller_test.mjs WASM_DIR HF_DIR PACKED_FILE INT8_FILE
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  WasmSession, WebSession, loadModule, readCheckpoint, readSafetensors,
  bytesSource, firstDifference, bitsHex, LockstepError,
} from '../../web/lockstep-web.mjs';
import { quantizeQ8 } from '../../hosts/node/q8_quantize.mjs';
import { q8TensorTable } from '../../web/checkpoint_q8.mjs';
import { fileFetch } from './node_fetch.mjs';

const [wasmDir, hfDir, packedPath, int8Path] = process.argv.slice(2);
let failures = 0;
const fail = (m) => { console.log('FAIL ' + m); ++failures; };

function compare(what, a, b) {
  const i = firstDifference(a, b);
  if (i >= 0) {
    fail(`${what}: logit ${i} differs: ${bitsHex(a[i])} vs ${bitsHex(b[i])}`);
    return false;
  }
  return true;
}

const simd = await loadModule(join(wasmDir, 'lockstep.wasm'), fileFetch);
const web = await loadModule(join(wasmDir, 'lockstep-web.wasm'), fileFetch);
const hf = await readSafetensors(
    bytesSource('model.safetensors',
                await readFile(join(hfDir, 'model.safetensors'))),
    await readFile(join(hfDir, 'config.json'), 'utf8'));
const packed = await readCheckpoint(
    bytesSource(packedPath, await readFile(packedPath)));
if (firstDifference(new Float32Array(hf.payload.buffer),
                    new Float32Array(packed.payload.buffer.slice(
                        packed.payload.byteOffset,
                        packed.payload.byteOffset + packed.payload.length))) >= 0 ||
    hf.payload.length !== packed.payload.length) {
  fail('the safetensors reader and the packed reader give different payloads');
}

// Seeded random prompts (SplitMix-like LCG), lengths 1..20, 12 steps each.
let state = 0x5eed1234;
const rnd = (n) => {
  state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
  return state % n;
};
let compared = 0;
for (let round = 0; round < 6; ++round) {
  const V = hf.config.n_vocab;
  const prompt = Array.from({ length: 1 + rnd(20) }, () => rnd(V));
  const a = WasmSession.open(simd, hf);
  const b = WebSession.open(web, hf, 1 + rnd(8));  // prefill in chunks
  let la = a.prefill(prompt), lb = await b.prefill(prompt);
  if (!compare(`round ${round} prompt`, la, lb)) continue;
  ++compared;
  for (let step = 0; step < 12; ++step) {
    const ta = a.sample(0, 1), tb = b.sample(0, 1);
    if (ta !== tb) fail(`round ${round} step ${step}: token ${ta} vs ${tb}`);
    la = a.step(ta);
    lb = await b.step(tb);
    if (!compare(`round ${round} step ${step}`, la, lb)) break;
    ++compared;
  }
}
// A context filled to its end: 125 prompt tokens (chunks of 32), then
// steps to position n_ctx - 1; one more step is an error.
{
  const T = hf.config.n_ctx;
  const prompt = Array.from({ length: T - 3 }, () => rnd(hf.config.n_vocab));
  const a = WasmSession.open(simd, hf);
  const b = WebSession.open(web, hf, 32);
  let ok = compare('long prompt', a.prefill(prompt), await b.prefill(prompt));
  if (ok) ++compared;
  for (let i = 0; ok && a.position < T; ++i) {
    const t = a.sample(0, 1);
    ok = compare(`long prompt step ${i}`, a.step(t), await b.step(t));
    if (ok) ++compared;
  }
  try {
    await b.step(0);
    fail('a step past the context was accepted');
  } catch (e) {
    if (!(e instanceof LockstepError)) fail(`step past the context: ${e}`);
  }
}
// Grouped int8: the controller (the core's int8 products, web_project_cpu)
// against lockstep.wasm's int8 prefill and cached step; three seeded
// prompts prefilled in chunks, 12 greedy steps each.
{
  const q8 = await readCheckpoint(bytesSource(int8Path, await readFile(int8Path)));
  if (q8.kind !== 'gpt2q8') fail(`${int8Path} read as ${q8.kind}`);
  const js = quantizeQ8(hf.config, new Float32Array(hf.payload.buffer));
  const d = js.findIndex((v, i) => v !== q8.payload[i]);
  if (js.length !== q8.payload.length || d >= 0) {
    fail(`q8_quantize.mjs differs from lockstep convert --quant int8 at byte ` +
         `${d} (${js[d]} vs ${q8.payload[d]}) of ${q8.payload.length}`);
  } else {
    console.log(`ok   q8_quantize.mjs gives lockstep convert's ` +
                `${js.length} int8 payload bytes`);
  }
  let q8compared = 0;
  for (let round = 0; round < 3; ++round) {
    const prompt = Array.from({ length: 1 + rnd(20) },
                              () => rnd(q8.config.n_vocab));
    const a = WasmSession.open(simd, q8);
    const b = WebSession.open(web, q8, 1 + rnd(8));
    if (!compare(`int8 round ${round} prompt`, a.prefill(prompt),
                 await b.prefill(prompt))) continue;
    ++q8compared;
    for (let step = 0; step < 12; ++step) {
      const ta = a.sample(0, 1), tb = b.sample(0, 1);
      if (ta !== tb) fail(`int8 round ${round} step ${step}: token ${ta} vs ${tb}`);
      if (!compare(`int8 round ${round} step ${step}`, a.step(ta),
                   await b.step(tb))) break;
      ++q8compared;
    }
  }
  console.log(`ok   int8: ${q8compared} logit vectors of the controller ` +
              'equal lockstep.wasm\'s');
  compared += q8compared;
  // A projection input that is not finite (§7.2 step 1): h0.ln_1.g set to
  // 3e38 (finite weights) makes ln_1's output overflow; both modules must
  // report the non-finite logits (status 10), the controller through its
  // NaN rows, in one prefill and in chunks of 4.
  const badW = { ...q8, payload: new Uint8Array(q8.payload) };  // a copy
  const ln = q8TensorTable(q8.config).tensors.find((t) => t.name === 'h0.ln_1.g');
  new Float32Array(badW.payload.buffer, ln.offset, q8.config.n_embd).fill(3e38);
  const errorOf = async (f) => {
    try {
      await f();
      return 'no error';
    } catch (e) {
      return e instanceof LockstepError ? e.message : `not a LockstepError: ${e}`;
    }
  };
  const want = await errorOf(() => WasmSession.open(simd, badW).prefill([1, 2, 3, 4, 5, 6]));
  const got1 = await errorOf(() => WebSession.open(web, badW).prefill([1, 2, 3, 4, 5, 6]));
  const got4 = await errorOf(() => WebSession.open(web, badW, 4).prefill([1, 2, 3, 4, 5, 6]));
  if (!/non-finite/.test(want) || got1 !== want ||
      got4 !== want.replace('position 0', 'position 4')) {
    fail(`int8 non-finite input: lockstep.wasm says '${want}', the controller ` +
         `'${got1}' (one chunk) and '${got4}' (chunks of 4)`);
  } else {
    console.log(`ok   int8 non-finite projection input: '${want}' from both`);
  }
  // A level -128 (not a §7.2 level): both modules refuse the weights.
  const m128 = { ...q8, payload: new Uint8Array(q8.payload) };
  m128.payload[0] = 0x80;
  const w1 = await errorOf(() => WasmSession.open(simd, m128));
  const w2 = await errorOf(() => WebSession.open(web, m128));
  if (!/not well formed/.test(w1) || w1.replace(/^[^:]*: /, '') !==
      w2.replace(/^[^:]*: /, '')) {
    fail(`int8 level -128: lockstep.wasm says '${w1}', the controller '${w2}'`);
  } else {
    console.log(`ok   int8 level -128 refused by both: '${w2}'`);
  }
}
// Bad input is an error, not a crash.
const s = WebSession.open(web, hf);
try {
  await s.prefill([hf.config.n_vocab]);
  fail('a token outside the vocabulary was accepted');
} catch (e) {
  if (!(e instanceof LockstepError)) fail(`bad token: ${e}`);
}
try {
  await readCheckpoint(bytesSource('short', new Uint8Array(10)));
  fail('a 10-byte checkpoint was accepted');
} catch (e) {
  if (!(e instanceof LockstepError)) fail(`short checkpoint: ${e}`);
}
try {
  const bad = await readFile(join(wasmDir, 'lockstep-web.wasm'));
  bad[100] ^= 1;
  await loadModule('x', async (u) => u === 'x'
      ? { ok: true, arrayBuffer: async () => bad.buffer }
      : fileFetch(join(wasmDir, 'lockstep-web.wasm.sha256')));
  fail('a module with a changed byte was accepted');
} catch (e) {
  if (!/refusing WebAssembly module/.test(e.message)) fail(`module: ${e}`);
}
console.log(`${compared} logit vectors equal (${hf.config.n_vocab} each), ` +
            `${failures} failures`);
process.exit(failures ? 1 : 0);
