// The page (web/index.html, docs/browser.md): loads and checks the
// modules, probes WebGPU, loads a model (shipped or picked), generates on
// WebAssembly or WebGPU and shows, per step, whether WebGPU's logits equal
// WebAssembly's. The last run's numbers are also in window.lockstepResult
// (read by tests/web/e2e.mjs).
import {
  LockstepError, WasmSession, WebSession, bitsHex, bytesSource, fileSource,
  firstDifference, loadModule, logitsHash, readCheckpoint, readSafetensors,
} from './lockstep-web.mjs';
import {
  GpuProjector, GpuProjectorQ8, hasQ8Dot, kernelSelfTest, openGpu,
  q8KernelSelfTest, runProbes,
} from './webgpu.mjs';
import { vocabFromEncoder } from './vocab.mjs';

const $ = (id) => document.getElementById(id);
const EOT = 50256;
const state = window.lockstepState = {
  modules: null, gpu: null, model: null, wasm: null, web: null, vocab: null,
  busy: false,
};

function log(msg, cls = '') {
  const el = $('status');
  el.textContent = msg;
  el.className = cls;
}

function row(table, cells, cls = '') {
  const tr = document.createElement('tr');
  if (cls) tr.className = cls;
  for (const c of cells) {
    const td = document.createElement('td');
    td.textContent = c;
    tr.appendChild(td);
  }
  table.appendChild(tr);
  return tr;
}

async function initModules() {
  const [simd, web] = await Promise.all([
    loadModule('wasm/lockstep.wasm'), loadModule('wasm/lockstep-web.wasm')]);
  state.modules = { simd, web };
  const t = $('modules');
  for (const m of [simd, web]) {
    row(t, [m.url, `${m.size.toLocaleString('en-US')} bytes`,
            `SHA-256 ${m.sha256.slice(0, 16)}… matches the build's record`],
        'ok');
  }
}

async function initGpu() {
  const g = await openGpu();
  const t = $('probes');
  if (g.error) {
    $('adapter').textContent = `WebGPU: unavailable (${g.error}); the ` +
        'WebGPU backend is off.';
    state.gpu = { error: g.error };
    $('backend').querySelector('option[value=webgpu]').disabled = true;
    return;
  }
  $('adapter').textContent = `WebGPU adapter: ${g.description}; ` +
      `maxStorageBufferBindingSize ${g.limits.maxStorageBufferBindingSize.toLocaleString('en-US')}, ` +
      `maxBufferSize ${g.limits.maxBufferSize.toLocaleString('en-US')}`;
  const probes = await runProbes(g.device);
  for (const p of probes) {
    row(t, [p.name, p.ok ? 'no' : 'YES', p.got, p.want], p.ok ? 'ok' : 'bad');
  }
  // Where subnormals flush, a product that could meet one is computed in
  // WebAssembly (webgpu.mjs, subnormalFree).
  const flushes = probes.some((p) => /subnormal/.test(p.name) && !p.ok);
  // The int8 kernel: dot4I8Packed where WGSL has it, else the same exact
  // sums by bytes.
  const q8Dot = hasQ8Dot();
  const kernel = [...await kernelSelfTest(g.device),
                  ...await q8KernelSelfTest(g.device, q8Dot)];
  for (const p of kernel) {
    row(t, [p.name, p.ok ? 'passes' : 'FAILS', p.got, p.want],
        p.ok ? 'ok' : 'bad');
  }
  state.gpu = { ...g, probes, kernel, check: flushes, q8Dot };
  const broken = [probes[1], probes[2], probes[3], ...kernel]
      .filter((p) => !p.ok && !/subnormal/.test(p.name));
  if (broken.length) {
    $('adapter').textContent += '. This adapter contracts, reassociates or ' +
        'rounds otherwise than IEEE in the guarded kernel (' +
        broken.map((p) => p.name).join('; ') + '): expect the per-step ' +
        'hashes to differ.';
  }
  g.device.lost.then((info) => log(`WebGPU device lost: ${info.message}`, 'bad'));
}

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new LockstepError(`${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

async function loadChoice() {
  const v = $('model').value;
  if (v === 'files') {
    const files = [...$('files').files];
    if (files.length === 0) {
      throw new LockstepError('pick a .lockstep file, or model.safetensors ' +
                              'and its config.json');
    }
    const packed = files.find((f) => f.name.endsWith('.lockstep'));
    if (packed) return readCheckpoint(fileSource(packed));
    const st = files.find((f) => f.name.endsWith('.safetensors'));
    const cfg = files.find((f) => f.name.endsWith('.json'));
    if (!st || !cfg) {
      throw new LockstepError('a Hugging Face model needs both ' +
                              'model.safetensors and config.json');
    }
    return readSafetensors(fileSource(st), await cfg.text());
  }
  if (v.endsWith('/')) {  // a Hugging Face folder on the server
    const cfg = await (await fetch(v + 'config.json')).text();
    return readSafetensors(
        bytesSource(v + 'model.safetensors',
                    await fetchBytes(v + 'model.safetensors')), cfg);
  }
  return readCheckpoint(bytesSource(v, await fetchBytes(v)));
}

function dropSessions() {
  if (state.web && state.web.projector) state.web.projector.destroy();
  state.wasm = state.web = null;
}

async function loadModel() {
  dropSessions();
  state.model = null;
  log('loading the model…');
  const t0 = performance.now();
  const ck = await loadChoice();
  state.model = ck;
  state.wasm = WasmSession.open(state.modules.simd, ck);
  const c = ck.config;
  const what = ck.kind === 'tiny'
      ? `tiny model, binary64, ${c.n_ctx} positions`
      : `GPT-2 ${ck.kind === 'gpt2q8' ? 'grouped int8 (q8g64)' : 'binary32'}: ` +
        `${c.n_layer} layers, ${c.n_embd} wide, ` +
        `${c.n_head} heads, ${c.n_ctx} positions, ${c.n_vocab} tokens`;
  $('modelinfo').textContent = `${ck.label}: ${what}; payload SHA-256 ` +
      `${ck.payloadSha256.slice(0, 16)}…`;
  const gpuOpt = $('backend').querySelector('option[value=webgpu]');
  gpuOpt.disabled = ck.kind === 'tiny' || !!state.gpu.error;
  if (ck.kind === 'tiny') {
    $('backend').value = 'wasm';
    $('gpunote').textContent = 'WebGPU runs GPT-2 only (binary32 or int8): ' +
        'the tiny models are binary64, which WGSL does not have.';
  } else {
    $('gpunote').textContent = '';
  }
  if (ck.kind !== 'tiny' && !state.vocab && c.n_vocab === 50257) {
    const enc = await (await fetch('data/gpt2/encoder.json')).json();
    state.vocab = vocabFromEncoder(enc);
  }
  log(`loaded ${ck.label} in ${(performance.now() - t0).toFixed(0)} ms`, 'ok');
}

async function promptTokens() {
  const ids = $('tokens').value.trim();
  if (ids) {
    return ids.split(/[\s,]+/).map((s) => {
      const v = Number(s);
      if (!Number.isInteger(v)) throw new LockstepError(`bad token id '${s}'`);
      return v;
    });
  }
  const text = $('prompt').value;
  if (state.model.kind === 'tiny') return [...new TextEncoder().encode(text)];
  const r = await fetch('api/tokenize', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }) });
  if (!r.ok) {
    throw new LockstepError('tokenizing needs lockstep serve-web ' +
                            `(/api/tokenize: HTTP ${r.status}); or give ids`);
  }
  return (await r.json()).tokens;
}

function options() {
  const n = Number($('n').value);
  let topK = Number($('topk').value);
  const temperature = Number($('temperature').value);
  const seed = BigInt($('seed').value || '0');
  const vocab = state.model.kind === 'tiny' ? 256 : state.model.config.n_vocab;
  if (!Number.isInteger(n) || n < 1) throw new LockstepError('tokens: >= 1');
  if (!Number.isInteger(topK) || topK < 0 || topK > vocab) {
    throw new LockstepError(`top-k must be in [0, ${vocab}]`);
  }
  if (!(temperature > 0)) throw new LockstepError('temperature must be > 0');
  if (topK === 0 && temperature !== 1) topK = vocab;  // as the CLI
  return { n, topK, temperature, seed };
}

async function webSession() {
  if (!state.web) {
    const s = WebSession.open(state.modules.web, state.model);
    s.projector = s.q8
        ? new GpuProjectorQ8(state.gpu.device, s, state.gpu.limits,
                             state.gpu.check, state.gpu.q8Dot, !state.gpu.cpu)
        : new GpuProjector(state.gpu.device, s, state.gpu.limits,
                           state.gpu.check, !state.gpu.cpu);
    state.web = s;
  }
  return state.web;
}

async function generate() {
  const ck = state.model;
  if (!ck) throw new LockstepError('load a model first');
  const o = options();
  const tokens = await promptTokens();
  if (tokens.length === 0) throw new LockstepError('the prompt is empty');
  const backend = $('backend').value;
  const out = $('output');
  const steps = $('steps');
  steps.replaceChildren();
  out.textContent = '';
  const dec = new TextDecoder();
  const show = (bytes) => {
    out.textContent += dec.decode(bytes, { stream: true });
  };
  const result = { backend, model: ck.label, promptTokens: tokens,
                   tokens: [], steps: [], prefillMs: 0, decodeMs: 0 };
  window.lockstepResult = null;
  if (ck.kind === 'tiny') {
    const s = state.wasm;
    s.seed(o.seed);
    show(Uint8Array.from(tokens));
    const text = [...tokens];
    for (let i = 0; i < o.n; ++i) {
      const t0 = performance.now();
      s.tinyLogits(text.slice(Math.max(0, text.length - s.nCtx)));
      const next = s.sample(o.topK, o.temperature);
      const dt = performance.now() - t0;
      if (i === 0) result.prefillMs = dt; else result.decodeMs += dt;
      text.push(next);
      result.tokens.push(next);
      show(Uint8Array.of(next));
      if (i % 16 === 15) await new Promise((r) => setTimeout(r, 0));
    }
  } else {
    const ref = state.wasm;
    const gpu = backend === 'webgpu' ? await webSession() : null;
    const compare = gpu && $('compare').checked;
    const main = gpu ?? ref;
    ref.reset();
    if (gpu) gpu.reset();
    main.seed(o.seed);
    const bytes = (t) => (state.vocab ? state.vocab(t) : new Uint8Array(0));
    for (const t of tokens) show(bytes(t));
    let t0 = performance.now();
    let logits = await main.prefill(tokens);
    result.prefillMs = performance.now() - t0;
    let refLogits = compare ? ref.prefill(tokens) : null;
    for (let i = 0; ; ++i) {
      const entry = { step: i, position: tokens.length + i - 1 };
      entry.hash = (await logitsHash(logits)).slice(0, 16);
      if (refLogits) {
        entry.hashWasm = (await logitsHash(refLogits)).slice(0, 16);
        entry.firstDiff = firstDifference(logits, refLogits);
        entry.equal = entry.firstDiff < 0;
        if (!entry.equal) {
          entry.values = [bitsHex(logits[entry.firstDiff]),
                          bitsHex(refLogits[entry.firstDiff])];
        }
      }
      const next = main.sample(o.topK, o.temperature);
      entry.token = next;
      result.steps.push(entry);
      result.tokens.push(next);
      row(steps, [String(i), String(entry.position), String(next),
                  entry.hash, entry.hashWasm ?? '—',
                  refLogits ? (entry.equal ? 'equal'
                      : `differs at index ${entry.firstDiff} ` +
                        `(${entry.values[0]} vs ${entry.values[1]})`)
                            : '(not compared)'],
          refLogits ? (entry.equal ? 'ok' : 'bad') : '');
      show(bytes(next));
      if (result.tokens.length >= o.n) break;
      if (ck.config.n_vocab === 50257 && next === EOT) break;
      if (tokens.length + i + 1 >= ck.config.n_ctx) break;
      t0 = performance.now();
      logits = await main.step(next);
      result.decodeMs += performance.now() - t0;
      if (compare) refLogits = ref.step(next);
      if (i % 4 === 3) await new Promise((r) => setTimeout(r, 0));
    }
  }
  const decoded = result.tokens.length - 1;
  result.decodeTokPerSec = decoded > 0 ? decoded / (result.decodeMs / 1000) : 0;
  result.allEqual = result.steps.length > 0 &&
      result.steps.every((s) => s.equal === true);
  $('stats').textContent =
      `${backend === 'webgpu' ? 'WebGPU' : 'WebAssembly'}: ` +
      `${tokens.length} prompt tokens, prefill ${result.prefillMs.toFixed(1)} ms, ` +
      `${result.tokens.length} generated, decode ` +
      `${result.decodeTokPerSec.toFixed(1)} tokens/s` +
      (result.steps.some((s) => 'equal' in s)
          ? `; WebGPU logits ${result.allEqual ? 'equal' : 'DIFFER from'} ` +
            `WebAssembly's at ${result.steps.filter((s) => s.equal).length} ` +
            `of ${result.steps.length} steps`
          : '');
  if (state.web && backend === 'webgpu') {
    result.fallbacks = state.web.projector.fallbacks;
    result.products = state.web.products;
    $('stats').textContent += `; ${result.products} products so far on ` +
        `WebGPU, ${result.fallbacks} of them recomputed in WebAssembly ` +
        '(subnormals)';
  }
  window.lockstepResult = result;
  return result;
}

function guard(fn) {
  return async () => {
    if (state.busy) return;
    state.busy = true;
    document.body.classList.add('busy');
    try {
      await fn();
    } catch (e) {
      log(`error: ${e.message}`, 'bad');
      window.lockstepError = e.message;
    } finally {
      state.busy = false;
      document.body.classList.remove('busy');
    }
  };
}

async function main() {
  window.lockstepReady = false;
  try {
    await initModules();
    await initGpu();
  } catch (e) {
    log(`error: ${e.message}`, 'bad');
    window.lockstepError = e.message;
    return;
  }
  $('model').addEventListener('change', () => {
    $('files').parentElement.hidden = $('model').value !== 'files';
  });
  $('load').addEventListener('click', guard(loadModel));
  $('generate').addEventListener('click', guard(async () => {
    log('generating…');
    const r = await generate();
    log(`done: ${r.tokens.length} tokens`, 'ok');
  }));
  const q = new URLSearchParams(location.search);
  if (q.has('model')) {
    const v = q.get('model');
    if (![...$('model').options].some((o) => o.value === v)) {
      $('model').add(new Option(v, v));
    }
    $('model').value = v;
  }
  await guard(loadModel)();
  window.lockstepReady = true;
}

main();
