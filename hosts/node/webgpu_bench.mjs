// WebGPU against WebAssembly outside a browser (docs/browser.md, "A real
// GPU"): the page's own modules (web/lockstep-web.mjs, web/webgpu.mjs) in
// Node.js with WebGPU from the npm package `webgpu` (Dawn for Node.js),
// on whatever adapter Dawn finds (the H200 through Vulkan; SwiftShader
// here with VK_ICD_FILENAMES). Prints the adapter, the start-up probes and
// the kernel self-tests, then for each model the greedy decode speed of
// WebGPU (WGSL products, lockstep-web.wasm's controller) and of
// WebAssembly (lockstep.wasm, SIMD) and whether WebGPU's logits equal
// WebAssembly's bit for bit at every step; one JSON line per model.
//   node hosts/node/webgpu_bench.mjs --webgpu DIR/node_modules/webgpu/index.js
//        --wasm BUILD/wasm [--steps N] [--rounds R] [--prompt 15496,995]
//        MODEL...
// MODEL: a packed .lockstep file (tiny: WebAssembly only, WGSL has no
// binary64), a Hugging Face folder (model.safetensors + config.json), or
// q8:FOLDER_OR_FILE: that binary32 model quantized here to grouped int8
// (hosts/node/q8_quantize.mjs, the bytes of `lockstep convert --quant
// int8`; its payload SHA-256 is printed so that it can be compared with
// the converter's).
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { webcrypto } from 'node:crypto';
import {
  WasmSession, WebSession, bytesSource, firstDifference, bitsHex, loadModule,
  readCheckpoint, readSafetensors, sha256Hex,
} from '../../web/lockstep-web.mjs';
import {
  GpuProjector, GpuProjectorQ8, hasQ8Dot, kernelSelfTest, openGpu,
  q8KernelSelfTest, runProbes,
} from '../../web/webgpu.mjs';
import { quantizeQ8 } from './q8_quantize.mjs';
import { fileFetch } from '../../tests/web/node_fetch.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  if (i < 0) return def;
  const v = args[i + 1];
  args.splice(i, 2);
  return v;
};
const webgpuPath = resolve(opt('--webgpu', '.webgpurun/node_modules/webgpu/index.js'));
const wasmDir = opt('--wasm', 'build/wasm');
const steps = Number(opt('--steps', '32'));
const rounds = Number(opt('--rounds', '3'));
const prompt = opt('--prompt', '15496,995,11,428,318').split(',').map(Number);
const models = args;

if (!globalThis.crypto) globalThis.crypto = webcrypto;
const { create, globals } = await import(webgpuPath);
Object.assign(globalThis, globals);
const gpu = create([]);
Object.defineProperty(globalThis, 'navigator', { value: { gpu },
                                                 configurable: true });
const out = (o) => console.log(JSON.stringify(o));

const g = await openGpu();
if (g.error) {
  out({ error: g.error });
  process.exit(1);
}
const probes = await runProbes(g.device);
const flushes = probes.some((p) => /subnormal/.test(p.name) && !p.ok);
const q8Dot = hasQ8Dot(gpu);
const kernel = [...await kernelSelfTest(g.device),
                ...await q8KernelSelfTest(g.device, q8Dot)];
out({ adapter: g.description, info: { ...(g.adapter.info ?? {}) },
      limits: g.limits, dot4I8Packed: q8Dot,
      probes: probes.map((p) => `${p.name}: ${p.ok ? 'no' : 'YES'} (${p.got})`),
      kernel: kernel.map((p) => `${p.name}: ${p.ok ? 'passes' : 'FAILS'} (${p.got})`),
      guard: flushes ? 'subnormals flush: products that could meet one run in WebAssembly'
                     : 'no flushing seen: every product on the GPU' });

const simd = await loadModule(join(wasmDir, 'lockstep.wasm'), fileFetch);
const web = await loadModule(join(wasmDir, 'lockstep-web.wasm'), fileFetch);

async function load(spec) {
  const q8 = spec.startsWith('q8:');
  const path = q8 ? spec.slice(3) : spec;
  let ck;
  if ((await stat(path)).isDirectory()) {
    ck = await readSafetensors(
        bytesSource('model.safetensors',
                    await readFile(join(path, 'model.safetensors'))),
        await readFile(join(path, 'config.json'), 'utf8'));
  } else {
    ck = await readCheckpoint(bytesSource(path, await readFile(path)));
  }
  ck.label = spec;
  if (q8) {
    const t0 = performance.now();
    const payload = quantizeQ8(ck.config, new Float32Array(
        ck.payload.buffer, ck.payload.byteOffset, ck.payload.length / 4));
    ck = { kind: 'gpt2q8', config: ck.config, payload, label: spec,
           payloadSha256: await sha256Hex(payload),
           quantizeMs: performance.now() - t0 };
  }
  return ck;
}

const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

for (const spec of models) {
  const ck = await load(spec);
  const r = { model: spec, kind: ck.kind, payload_sha256: ck.payloadSha256,
              config: ck.config };
  if (ck.quantizeMs) r.quantize_ms = Math.round(ck.quantizeMs);
  if (ck.kind === 'tiny') {
    // WebAssembly only: 256 binary64 logits per byte.
    const s = WasmSession.open(simd, ck);
    const text = [...new TextEncoder().encode('ROMEO:')];
    const rates = [];
    for (let round = 0; round < rounds; ++round) {
      const t0 = performance.now();
      for (let i = 0; i < steps; ++i) {
        s.tinyLogits(text.slice(Math.max(0, text.length - s.nCtx)));
        text.push(s.sample(0, 1));
      }
      rates.push(steps / ((performance.now() - t0) / 1000));
    }
    r.wasm_tok_s = rates.map((x) => +x.toFixed(1));
    r.webgpu = 'not run: the tiny models are binary64, WGSL has no f64';
    out(r);
    continue;
  }
  const a = WasmSession.open(simd, ck);
  const b = WebSession.open(web, ck);
  const t0 = performance.now();
  b.projector = ck.kind === 'gpt2q8'
      ? new GpuProjectorQ8(g.device, b, g.limits, flushes, q8Dot)
      : new GpuProjector(g.device, b, g.limits, flushes);
  r.upload_ms = Math.round(performance.now() - t0);
  const n = Math.min(steps, ck.config.n_ctx - prompt.length);
  const wasmRates = [], gpuRates = [], gpuPrefill = [], wasmPrefill = [];
  let compared = 0, equal = 0, firstBad = null;
  const tokens = [];
  for (let round = 0; round < rounds; ++round) {
    a.reset();
    b.reset();
    let t = performance.now();
    let lb = await b.prefill(prompt);
    gpuPrefill.push(performance.now() - t);
    t = performance.now();
    let la = a.prefill(prompt);
    wasmPrefill.push(performance.now() - t);
    let gpuMs = 0, wasmMs = 0;
    const got = [];
    for (let i = 0; ; ++i) {
      const d = firstDifference(lb, la);
      ++compared;
      if (d < 0) ++equal;
      else if (!firstBad) {
        firstBad = { round, step: i, index: d,
                     webgpu: bitsHex(lb[d]), wasm: bitsHex(la[d]) };
      }
      const tb = b.sample(0, 1), ta = a.sample(0, 1);
      got.push(tb);
      if (tb !== ta && !firstBad) firstBad = { round, step: i, tokens: [tb, ta] };
      if (i === n) break;
      t = performance.now();
      lb = await b.step(tb);
      gpuMs += performance.now() - t;
      t = performance.now();
      la = a.step(tb);
      wasmMs += performance.now() - t;
    }
    if (round === 0) tokens.push(...got);
    gpuRates.push(n / (gpuMs / 1000));
    wasmRates.push(n / (wasmMs / 1000));
  }
  Object.assign(r, {
    prompt, decode_steps: n, rounds,
    webgpu_tok_s: gpuRates.map((x) => +x.toFixed(1)),
    wasm_tok_s: wasmRates.map((x) => +x.toFixed(1)),
    webgpu_median: +median(gpuRates).toFixed(1),
    wasm_median: +median(wasmRates).toFixed(1),
    webgpu_prefill_ms: gpuPrefill.map((x) => +x.toFixed(1)),
    wasm_prefill_ms: wasmPrefill.map((x) => +x.toFixed(1)),
    steps_compared: compared, steps_equal: equal,
    verdict: equal === compared && !firstBad ? 'equal at every step' : 'DIFFERS',
    first_difference: firstBad,
    fallbacks: b.projector.fallbacks,
    product_ms: b.projector.timeMs.map((x) => Math.round(x)),
    tokens: tokens.slice(0, 16),
  });
  b.projector.destroy();
  out(r);
}
g.device.destroy();
process.exit(0);
