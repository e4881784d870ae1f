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
//        [--baseline DIR] MODEL...
// --baseline DIR: DIR/webgpu.mjs (an earlier web/webgpu.mjs, with its
// checkpoint_q8.mjs beside it) drives a second WebGPU session stepped with
// the same tokens in the same rounds, each step timed on its own, its
// logits compared with WebAssembly's too: before/after in one run.
// MODEL: a packed .lockstep file (tiny: WebAssembly only, WGSL has no
// binary64), a Hugging Face folder (model.safetensors + config.json), or
// q8:FOLDER_OR_FILE: that binary32 model quantized here to grouped int8
// (hosts/node/q8_quantize.mjs, the bytes of `lockstep convert --quant
// int8`; its payload SHA-256 is printed so that it can be compared with
// the converter's), or random:124M:SEED: GPT-2 124M's shape with weights
// made here from SEED (randomGpt2 below: xorshift32, each tensor uniform
// in the ranges of docs/gpt2-format.md's random checkpoints; NOT the C++
// random:124M:SEED weights, which would take a 497 MB file to carry).
import { readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
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
const baselineDir = opt('--baseline', null);
// --split on|off|auto: GpuProjector's block-split form for small products
// (auto: off on a CPU adapter, openGpu's `cpu`).
const splitOpt = opt('--split', 'auto');
const models = args;
const baseline = baselineDir
    ? await import(pathToFileURL(resolve(baselineDir, 'webgpu.mjs')).href)
    : null;

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
const split = splitOpt === 'auto' ? !g.cpu : splitOpt === 'on';
const probes = await runProbes(g.device);
const flushes = probes.some((p) => /subnormal/.test(p.name) && !p.ok);
const q8Dot = hasQ8Dot(gpu);
const kernel = [...await kernelSelfTest(g.device),
                ...await q8KernelSelfTest(g.device, q8Dot)];
out({ adapter: g.description, info: { ...(g.adapter.info ?? {}) }, cpu: g.cpu,
      split,
      limits: g.limits, dot4I8Packed: q8Dot,
      probes: probes.map((p) => `${p.name}: ${p.ok ? 'no' : 'YES'} (${p.got})`),
      kernel: kernel.map((p) => `${p.name}: ${p.ok ? 'passes' : 'FAILS'} (${p.got})`),
      guard: flushes ? 'subnormals flush: products that could meet one run in WebAssembly'
                     : 'no flushing seen: every product on the GPU' });

const simd = await loadModule(join(wasmDir, 'lockstep.wasm'), fileFetch);
const web = await loadModule(join(wasmDir, 'lockstep-web.wasm'), fileFetch);

// GPT-2 124M in the plain layout (wte, wpe, per layer ln_1 g b, c_attn w b,
// attn c_proj w b, ln_2 g b, c_fc w b, mlp c_proj w b; ln_f g b) with
// seeded uniform weights: matrices and embeddings small, gains near 1,
// biases small; a 32-bit xorshift stream from the seed.
async function randomGpt2(seed) {
  const c = { n_vocab: 50257, n_ctx: 1024, n_embd: 768, n_head: 12,
              n_layer: 12 };
  const V = c.n_vocab, T = c.n_ctx, C = c.n_embd;
  const w = new Float32Array(V * C + T * C + c.n_layer * (12 * C * C + 13 * C) +
                             2 * C);
  let st = (seed >>> 0) || 1, at = 0;
  const fill = (n, center, scale) => {
    for (let i = 0; i < n; ++i) {
      st ^= st << 13; st ^= st >>> 17; st ^= st << 5;
      w[at++] = center + scale * (2 * ((st >>> 0) / 4294967296) - 1);
    }
  };
  fill(V * C, 0, 0.1);
  fill(T * C, 0, 0.02);
  for (let l = 0; l < c.n_layer; ++l) {
    for (const [n, center, scale] of [
      [C, 1, 0.1], [C, 0, 0.02], [3 * C * C, 0, 0.04], [3 * C, 0, 0.02],
      [C * C, 0, 0.04], [C, 0, 0.02], [C, 1, 0.1], [C, 0, 0.02],
      [4 * C * C, 0, 0.04], [4 * C, 0, 0.02], [4 * C * C, 0, 0.04],
      [C, 0, 0.02]]) {
      fill(n, center, scale);
    }
  }
  fill(C, 1, 0.1);
  fill(C, 0, 0.02);
  const payload = new Uint8Array(w.buffer);
  return { kind: 'gpt2', config: c, words: w.length, payload,
           payloadSha256: await sha256Hex(payload) };
}

async function load(spec) {
  const q8 = spec.startsWith('q8:');
  const path = q8 ? spec.slice(3) : spec;
  let ck;
  const rnd = /^random:124M:(\d+)$/.exec(path);
  if (rnd) {
    ck = await randomGpt2(Number(rnd[1]));
  } else if ((await stat(path)).isDirectory()) {
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
      ? new GpuProjectorQ8(g.device, b, g.limits, flushes, q8Dot, split)
      : new GpuProjector(g.device, b, g.limits, flushes, split);
  r.split = split;
  r.upload_ms = Math.round(performance.now() - t0);
  let c = null;
  if (baseline) {
    c = WebSession.open(web, ck);
    c.projector = ck.kind === 'gpt2q8'
        ? new baseline.GpuProjectorQ8(g.device, c, g.limits, flushes, q8Dot)
        : new baseline.GpuProjector(g.device, c, g.limits, flushes);
  }
  const baseRates = [], basePrefill = [];
  let baseEqual = 0;
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
    let lc = null;
    if (c) {
      c.reset();
      t = performance.now();
      lc = await c.prefill(prompt);
      basePrefill.push(performance.now() - t);
    }
    let gpuMs = 0, wasmMs = 0, baseMs = 0;
    const got = [];
    for (let i = 0; ; ++i) {
      const d = firstDifference(lb, la);
      if (c && firstDifference(lc, la) < 0) ++baseEqual;
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
      if (c) {
        t = performance.now();
        lc = await c.step(tb);
        baseMs += performance.now() - t;
      }
    }
    if (c) baseRates.push(n / (baseMs / 1000));
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
    products: b.products,
    submit_ms: Math.round(b.projector.submitMs),
    wait_ms: Math.round(b.projector.waitMs),
    wait_us_per_product: Math.round(1000 * b.projector.waitMs / b.products),
    tokens: tokens.slice(0, 16),
  });
  if (c) {
    Object.assign(r, {
      baseline_tok_s: baseRates.map((x) => +x.toFixed(1)),
      baseline_median: +median(baseRates).toFixed(1),
      baseline_prefill_ms: basePrefill.map((x) => +x.toFixed(1)),
      baseline_steps_equal: baseEqual,
      speedup_median: +(median(gpuRates) / median(baseRates)).toFixed(3),
      baseline_product_ms: c.projector.timeMs.map((x) => Math.round(x)),
    });
    c.projector.destroy();
  }
  b.projector.destroy();
  out(r);
}
g.device.destroy();
process.exit(0);
