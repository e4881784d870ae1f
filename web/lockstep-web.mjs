// lockstep in a web page (docs/browser.md): the WebAssembly modules loaded
// and checked against the SHA-256 the build recorded (Web Crypto), the
// checkpoints read from bytes (a packed .lockstep file, plain or panel64,
// or Hugging Face safetensors), and two kinds of session:
//   WasmSession  lockstep.wasm (docs/wasm.md): tiny models and GPT-2, the
//                module's own cached step, prefill and sampler;
//   WebSession   lockstep-web.wasm (wasm/lsw_web.c): the GPT-2 controller
//                that hands every matrix product to a projector (WebGPU,
//                web/webgpu.mjs, or the module's own core products).
// Plain ES module with no DOM access, so that Node.js runs it too
// (tests/web/controller_test.mjs). The planning follows hosts/node/
// module.mjs and session.mjs; the file readers hosts/node/checkpoint.mjs.
// Checkpoint kinds: 'tiny' (binary64), 'gpt2' (binary32, plain-layout
// payload) and 'gpt2q8' (grouped int8, docs/int8.md: the payload as stored).
import { memoryMinimum } from './wasm_imports.mjs';
import { Q8_DTYPE, checkQ8Header } from './checkpoint_q8.mjs';

const PAGE = 65536;

export class LockstepError extends Error {}

export function hex(bytes) {
  return Array.from(new Uint8Array(bytes),
                    (b) => b.toString(16).padStart(2, '0')).join('');
}

export async function sha256Hex(bytes) {
  return hex(await crypto.subtle.digest('SHA-256', bytes));
}

// The page's per-step logits hash: SHA-256 of the logits' bytes.
export async function logitsHash(view) {
  return sha256Hex(view.slice());
}

// The first index where two Float32Arrays differ in bits, or -1.
export function firstDifference(a, b) {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  if (x.length !== y.length) return Math.min(x.length, y.length);
  for (let i = 0; i < x.length; ++i) if (x[i] !== y[i]) return i;
  return -1;
}

export function bitsHex(f) {
  const u = new Uint32Array(new Float32Array([f]).buffer)[0];
  return '0x' + u.toString(16).padStart(8, '0');
}

// ---------------------------------------------------------------- modules


// Fetches `url` and `url.sha256` (the build's record, sha256sum format),
// refuses a module whose SHA-256 differs, and compiles it.
export async function loadModule(url, fetchFn = fetch) {
  const [mod, rec] = await Promise.all([fetchFn(url), fetchFn(url + '.sha256')]);
  if (!mod.ok) throw new LockstepError(`${url}: HTTP ${mod.status}`);
  if (!rec.ok) {
    throw new LockstepError(`${url}.sha256: HTTP ${rec.status} (the build ` +
                            'records the digest next to the module)');
  }
  const bytes = new Uint8Array(await mod.arrayBuffer());
  const want = (await rec.text()).trim().split(/\s+/)[0];
  if (!/^[0-9a-f]{64}$/.test(want)) {
    throw new LockstepError(`${url}.sha256 does not hold a SHA-256 digest`);
  }
  const got = await sha256Hex(bytes);
  if (got !== want) {
    throw new LockstepError(`refusing WebAssembly module ${url}: its SHA-256 ` +
                            `is ${got}, but ${url}.sha256 says ${want}`);
  }
  return { url, sha256: got, size: bytes.length,
           module: await WebAssembly.compile(bytes),
           minPages: memoryMinimum(bytes, LockstepError) };
}

function instantiate(loaded, pages) {
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
  const instance = new WebAssembly.Instance(loaded.module, { env: { memory } });
  return { memory, exports: instance.exports };
}

function cString(memory, ptr) {
  const b = new Uint8Array(memory.buffer, ptr);
  return new TextDecoder().decode(b.subarray(0, b.indexOf(0)));
}

// Plans on a throw-away instance, then instantiates on exactly the plan.
function planAndInstantiate(loaded, fields, planCall, message, what) {
  const read = (memory, ptr) => {
    const v = new Uint32Array(memory.buffer, ptr, fields.length);
    const plan = {};
    fields.forEach((name, i) => { plan[name] = v[i]; });
    return plan;
  };
  const planner = instantiate(loaded, loaded.minPages);
  const plan = read(planner.memory, planCall(planner.exports));
  if (plan.status !== 0) {
    throw new LockstepError(`${what}: ` + cString(
        planner.memory, planner.exports[message](plan.status)));
  }
  const s = instantiate(loaded, plan.total / PAGE);
  const again = read(s.memory, planCall(s.exports));
  if (JSON.stringify(again) !== JSON.stringify(plan)) {
    throw new LockstepError(`${what}: the module planned differently twice`);
  }
  return { plan, memory: s.memory, exports: s.exports };
}

// ------------------------------------------------------------ checkpoints

// A byte source: { name, size, read(offset, length) -> Promise<Uint8Array> }.
export function bytesSource(name, bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return { name, size: u8.length,
           read: async (o, n) => u8.subarray(o, o + n) };
}

export function fileSource(file) {
  return { name: file.name, size: file.size,
           read: async (o, n) =>
             new Uint8Array(await file.slice(o, o + n).arrayBuffer()) };
}

const TINY_CONFIG = { vocab: 256, n_embd: 4, n_head: 2, n_layer: 1, n_ff: 8 };
const GPT2_KEYS = ['n_vocab', 'n_ctx', 'n_embd', 'n_head', 'n_layer'];

// A packed checkpoint (docs/checkpoint-format.md): { kind, config, words,
// payload (Uint8Array, plain layout), payloadSha256 }. The payload's
// SHA-256 (of the bytes as stored) is checked.
export async function readCheckpoint(src) {
  const bad = (what) => {
    throw new LockstepError(`checkpoint '${src.name}': ${what}`);
  };
  if (src.size < 56) bad(`${src.size} bytes, shorter than the 56-byte preamble`);
  const pre = await src.read(0, 56);
  const dv = new DataView(pre.buffer, pre.byteOffset, 56);
  if (new TextDecoder('latin1').decode(pre.subarray(0, 8)) !== 'LOCKSTEP') {
    bad('wrong magic');
  }
  const version = dv.getUint32(8, true);
  if (version !== 1 && version !== 2) bad(`unknown format version ${version}`);
  const H = dv.getUint32(12, true);
  const P = Number(dv.getBigUint64(16, true));
  if (56 + H + P !== src.size) {
    bad(`56 + header ${H} + payload ${P} bytes != file size ${src.size}`);
  }
  let header;
  try {
    header = JSON.parse(new TextDecoder().decode(await src.read(56, H)));
  } catch (e) {
    bad(`the header is not JSON (${e.message})`);
  }
  const cfg = header.config;
  if (typeof cfg !== 'object' || cfg === null) bad('the header has no config');
  let kind, wordBytes;
  if (header.model === 'tiny' && header.dtype === 'f64') {
    kind = 'tiny', wordBytes = 8;
    for (const [k, v] of Object.entries(TINY_CONFIG)) {
      if (cfg[k] !== v) bad(`config.${k} is not the tiny architecture's ${v}`);
    }
    if (!Number.isInteger(cfg.n_ctx)) bad('config lacks an integer n_ctx');
  } else if (header.model === 'gpt2' && header.dtype === 'f32') {
    kind = 'gpt2', wordBytes = 4;
    for (const k of GPT2_KEYS) {
      if (!Number.isInteger(cfg[k])) bad(`config lacks an integer ${k}`);
    }
  } else if (header.model === 'gpt2' && header.dtype === Q8_DTYPE) {
    // Grouped int8: the layout, config and tensor table checked against
    // docs/int8.md (checkpoint_q8.mjs); "words" counts bytes.
    kind = 'gpt2q8', wordBytes = 1;
    checkQ8Header(header, version, P, bad);
  } else {
    bad(`model '${header.model}' with dtype '${header.dtype}': this page ` +
        "reads tiny ('tiny', 'f64'), binary32 GPT-2 ('gpt2', 'f32') and " +
        `grouped int8 GPT-2 ('gpt2', '${Q8_DTYPE}')`);
  }
  if (!Number.isInteger(header.words) || header.words * wordBytes !== P) {
    bad(`words ${header.words} do not match the payload of ${P} bytes`);
  }
  const layout = kind === 'gpt2q8' ? header.layout
      : version === 2 ? header.layout : 'plain';
  if (kind !== 'gpt2q8' && layout !== 'plain' && layout !== 'panel64') {
    bad(`unknown layout ${layout}`);
  }
  const stored = await src.read(56 + H, P);
  const payloadSha256 = hex(pre.subarray(24, 56));
  const got = await sha256Hex(stored);
  if (got !== payloadSha256) {
    bad(`the payload's SHA-256 is ${got}, the header says ${payloadSha256}`);
  }
  const payload = layout === 'panel64' ? unpanel64(cfg, stored) : stored;
  return { kind, config: cfg, words: header.words, payload, payloadSha256,
           label: src.name };
}

// panel64 (docs/gpt2-format.md "Weight layouts") back to the plain layout,
// words moved as u32 so every bit pattern is kept.
function unpanel64(cfg, stored) {
  const V = cfg.n_vocab, T = cfg.n_ctx, C = cfg.n_embd;
  const ms = [{ offset: 0, K: C, N: V, head: true }];
  for (let l = 0; l < cfg.n_layer; ++l) {
    const B = V * C + T * C + l * (12 * C * C + 13 * C);
    ms.push({ offset: B + 2 * C, K: C, N: 3 * C });
    ms.push({ offset: B + 5 * C + 3 * C * C, K: C, N: C });
    ms.push({ offset: B + 8 * C + 4 * C * C, K: C, N: 4 * C });
    ms.push({ offset: B + 12 * C + 8 * C * C, K: 4 * C, N: C });
  }
  const aligned = new Uint8Array(stored.length);
  aligned.set(stored);
  const src = new Uint32Array(aligned.buffer);
  const out = new Uint32Array(src.length);
  out.set(src);  // the words the layout leaves alone
  for (const m of ms) {
    for (let c0 = 0; c0 < m.N; c0 += 64) {
      const pw = Math.min(64, m.N - c0);
      const base = m.offset + c0 * m.K;
      for (let r = 0; r < m.K; ++r) {
        for (let j = 0; j < pw; ++j) {
          const v = src[base + r * pw + j];
          if (m.head) out[m.offset + (c0 + j) * m.K + r] = v;
          else out[m.offset + r * m.N + c0 + j] = v;
        }
      }
    }
  }
  return new Uint8Array(out.buffer);
}

function widen(dtype, bytes, n) {
  const out = new Float32Array(n);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === 'F32') {
    for (let i = 0; i < n; ++i) out[i] = dv.getFloat32(4 * i, true);
  } else if (dtype === 'BF16') {
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < n; ++i) u[i] = dv.getUint16(2 * i, true) << 16;
  } else {  // F16, exactly
    for (let i = 0; i < n; ++i) {
      const h = dv.getUint16(2 * i, true);
      const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, f = h & 1023;
      out[i] = e === 0 ? s * f * 2 ** -24
             : e === 31 ? (f ? NaN : s * Infinity)
             : s * (1024 + f) * 2 ** (e - 25);
    }
  }
  return out;
}

// Hugging Face GPT-2 safetensors plus its config.json into the plain
// layout (what `lockstep convert` does; F32, F16 and BF16 widened exactly;
// a stored lm_head must equal wte).
export async function readSafetensors(src, configText) {
  const bad = (what) => {
    throw new LockstepError(`safetensors '${src.name}': ${what}`);
  };
  let hf;
  try {
    hf = JSON.parse(configText);
  } catch (e) {
    throw new LockstepError(`config.json is not JSON (${e.message})`);
  }
  const cfg = { n_vocab: hf.vocab_size, n_ctx: hf.n_positions,
                n_embd: hf.n_embd, n_head: hf.n_head, n_layer: hf.n_layer };
  for (const k of GPT2_KEYS) {
    if (!Number.isInteger(cfg[k]) || cfg[k] <= 0) {
      throw new LockstepError(`config.json lacks a positive integer for ${k}`);
    }
  }
  if (src.size < 8) bad('shorter than its 8-byte header length');
  const lenBytes = await src.read(0, 8);
  const hlen = Number(new DataView(lenBytes.buffer, lenBytes.byteOffset, 8)
                          .getBigUint64(0, true));
  if (8 + hlen > src.size) bad('the header runs past the file');
  let table;
  try {
    table = JSON.parse(new TextDecoder().decode(await src.read(8, hlen)));
  } catch (e) {
    bad(`the header is not JSON (${e.message})`);
  }
  const tensors = new Map();
  for (const [name, t] of Object.entries(table)) {
    if (name === '__metadata__') continue;
    tensors.set(name.startsWith('transformer.') ? name.slice(12) : name, t);
  }
  const V = cfg.n_vocab, T = cfg.n_ctx, C = cfg.n_embd;
  const words = V * C + T * C + cfg.n_layer * (12 * C * C + 13 * C) + 2 * C;
  const out = new Float32Array(words);
  const bytesOf = { F32: 4, F16: 2, BF16: 2 };
  let at = 0;
  const take = async (name, count) => {
    const t = tensors.get(name);
    if (!t) bad(`tensor '${name}' is missing`);
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== count) bad(`tensor '${name}' has ${n} elements, not ${count}`);
    if (!(t.dtype in bytesOf)) bad(`tensor '${name}' has dtype ${t.dtype}`);
    const [b0, b1] = t.data_offsets;
    if (b1 - b0 !== n * bytesOf[t.dtype] || 8 + hlen + b1 > src.size) {
      bad(`tensor '${name}' has a bad extent`);
    }
    const v = widen(t.dtype, await src.read(8 + hlen + b0, b1 - b0), n);
    out.set(v, at);
    at += n;
    return v;
  };
  const wte = await take('wte.weight', V * C);
  await take('wpe.weight', T * C);
  for (let l = 0; l < cfg.n_layer; ++l) {
    const h = `h.${l}.`;
    await take(h + 'ln_1.weight', C);
    await take(h + 'ln_1.bias', C);
    await take(h + 'attn.c_attn.weight', 3 * C * C);
    await take(h + 'attn.c_attn.bias', 3 * C);
    await take(h + 'attn.c_proj.weight', C * C);
    await take(h + 'attn.c_proj.bias', C);
    await take(h + 'ln_2.weight', C);
    await take(h + 'ln_2.bias', C);
    await take(h + 'mlp.c_fc.weight', 4 * C * C);
    await take(h + 'mlp.c_fc.bias', 4 * C);
    await take(h + 'mlp.c_proj.weight', 4 * C * C);
    await take(h + 'mlp.c_proj.bias', C);
  }
  await take('ln_f.weight', C);
  await take('ln_f.bias', C);
  if (tensors.has('lm_head.weight')) {
    const saved = at;
    at = 0;
    const tmp = out.slice(0, V * C);
    const lm = await take('lm_head.weight', V * C);
    out.set(tmp, 0);
    at = saved;
    const a = new Uint32Array(lm.buffer), b = new Uint32Array(wte.buffer);
    for (let i = 0; i < a.length; ++i) {
      if (a[i] !== b[i]) {
        bad("tensor 'lm_head.weight' differs from wte (lockstep's output " +
            'head is tied to wte)');
      }
    }
  }
  const payload = new Uint8Array(out.buffer);
  return { kind: 'gpt2', config: cfg, words, payload,
           payloadSha256: await sha256Hex(payload), label: src.name };
}

// ---------------------------------------------------------------- sessions

const PLAN_FIELDS = ['status', 'total', 'weights', 'weightsBytes', 'cache',
  'cacheBytes', 'scratch', 'scratchBytes', 'logits', 'logitsBytes', 'tokens',
  'tokensBytes', 'sample', 'sampleBytes', 'repack', 'repackBytes',
  'head', 'headBytes'];

function writeTokens(s, tokens) {
  const t = new Int32Array(s.memory.buffer, s.plan.tokens, tokens.length);
  tokens.forEach((v, i) => {
    t[i] = Number.isInteger(v) && v >= 0 && v <= 0x7fffffff ? v : -1;
  });
}

// lockstep.wasm on a checkpoint: the tiny checked entry, or GPT-2's
// prefill, cached step and sampler (hosts/node/session.mjs).
export class WasmSession {
  static open(loaded, ck) {
    const s = new WasmSession();
    const c = ck.config;
    s.kind = ck.kind, s.config = c, s.payloadSha256 = ck.payloadSha256;
    const what = `${ck.kind} model '${ck.label}'`;
    if (ck.kind === 'tiny') {
      Object.assign(s, planAndInstantiate(loaded, PLAN_FIELDS,
                                          (x) => x.tiny_plan(c.n_ctx),
                                          'status_message', what));
      s.nVocab = 256;
    } else {
      // gpt2_q8_plan for int8; the entries below are the same.
      Object.assign(s, planAndInstantiate(
          loaded, PLAN_FIELDS,
          (x) => (ck.kind === 'gpt2q8' ? x.gpt2_q8_plan : x.gpt2_plan)(
              c.n_vocab, c.n_ctx, c.n_embd, c.n_head, c.n_layer,
              Math.min(c.n_ctx, 128)),
          'status_message', what));
      s.nVocab = c.n_vocab;
      s.maxPrefix = Math.min(c.n_ctx, 128);
    }
    s.nCtx = c.n_ctx;
    if (ck.payload.length !== s.plan.weightsBytes) {
      throw new LockstepError(`${what}: ${ck.payload.length} payload bytes, ` +
                              `the plan has room for ${s.plan.weightsBytes}`);
    }
    new Uint8Array(s.memory.buffer, s.plan.weights, s.plan.weightsBytes)
        .set(ck.payload);
    if (s.kind !== 'tiny') s.check(s.exports.gpt2_prepare(), what);
    s.position = 0;
    s.memoryBytes = s.memory.buffer.byteLength;
    return s;
  }

  check(status, what) {
    if (status !== 0) {
      throw new LockstepError(`${what}: ` + cString(
          this.memory, this.exports.status_message(status)));
    }
  }

  // The tiny model: 256 binary64 logits of the last byte of `window`.
  tinyLogits(window, bound = 10) {
    writeTokens(this, window);
    this.check(this.exports.tiny_logits(window.length, bound), 'tiny model');
    return new Float64Array(this.memory.buffer, this.plan.logits, 256);
  }

  // GPT-2: the prompt through prefill (chunks of maxPrefix), then logits.
  prefill(tokens) {
    if (tokens.length === 0) throw new LockstepError('the prompt is empty');
    if (tokens.length > this.nCtx - this.position) {
      throw new LockstepError(`${tokens.length} tokens do not fit the ` +
                              `context of ${this.nCtx}`);
    }
    for (let done = 0; done < tokens.length;) {
      const m = Math.min(tokens.length - done, this.maxPrefix);
      writeTokens(this, tokens.slice(done, done + m));
      let st = this.exports.prefill(m, this.position, 0);
      if (st === 10 && done + m < tokens.length) st = 0;
      this.check(st, `prefill at position ${this.position}`);
      this.position += m;
      done += m;
    }
    return this.logits();
  }

  step(token) {
    if (this.position >= this.nCtx) {
      throw new LockstepError(`the context is full (${this.nCtx} positions)`);
    }
    this.check(this.exports.cachedStep(token, this.position),
               `step at position ${this.position}`);
    ++this.position;
    return this.logits();
  }

  logits() {
    return new Float32Array(this.memory.buffer, this.plan.logits, this.nVocab);
  }

  seed(seed) { this.exports.seed(BigInt.asUintN(64, BigInt(seed))); }

  sample(topK, temperature) {
    const t = this.exports.sample(topK, temperature);
    if (t < 0) throw new LockstepError(`top-k ${topK} / temperature ${temperature} invalid`);
    return t;
  }

  reset() { this.position = 0; }
}

const WEB_PLAN_FIELDS = ['status', 'total', 'weights', 'weightsBytes',
  'cache', 'cacheBytes', 'work', 'workBytes', 'logits', 'logitsBytes',
  'tokens', 'tokensBytes', 'sample', 'sampleBytes', 'maxPrefix', 'q8'];
// int8: w and b are byte offsets, qx and sx the quantized input's levels
// and scales (wasm/lsw_web.c).
const REQUEST_FIELDS = ['which', 'layer', 'n', 'nIn', 'nOut', 'x', 'y', 'w',
  'b', 'head', 'qx', 'sx'];
export const PRODUCT_NAMES = ['q|k|v', 'attention output', 'MLP up',
  'MLP down', 'output head'];

// lockstep-web.wasm on a GPT-2 checkpoint: the controller runs the pass and
// stops at every matrix product; `projector.project(session, request)`
// (async) writes request.y. Without a projector the module's own core
// products run (web_project_cpu).
export class WebSession {
  static open(loaded, ck, maxPrefix = 128) {
    if (ck.kind !== 'gpt2' && ck.kind !== 'gpt2q8') {
      throw new LockstepError('the WebGPU path runs GPT-2 models (binary32 ' +
                              'or grouped int8)');
    }
    const c = ck.config;
    const s = new WebSession();
    s.config = c;
    s.q8 = ck.kind === 'gpt2q8';
    s.payloadSha256 = ck.payloadSha256;
    Object.assign(s, planAndInstantiate(
        loaded, WEB_PLAN_FIELDS,
        (x) => (s.q8 ? x.web_plan_q8 : x.web_plan)(
            c.n_vocab, c.n_ctx, c.n_embd, c.n_head, c.n_layer, maxPrefix),
        'web_status_message', `GPT-2 '${ck.label}'`));
    if (ck.payload.length !== s.plan.weightsBytes) {
      throw new LockstepError(`${ck.label}: ${ck.payload.length} payload ` +
                              `bytes, the plan has ${s.plan.weightsBytes}`);
    }
    new Uint8Array(s.memory.buffer, s.plan.weights, s.plan.weightsBytes)
        .set(ck.payload);
    s.check(s.exports.web_prepare(), `GPT-2 '${ck.label}'`);
    s.nVocab = c.n_vocab;
    s.nCtx = c.n_ctx;
    s.position = 0;
    s.projector = null;
    s.products = 0;
    return s;
  }

  check(status, what) {
    if (status !== 0) {
      throw new LockstepError(`${what}: ` + cString(
          this.memory, this.exports.web_status_message(status)));
    }
  }

  // The plain-layout weights as a Float32Array view (for the GPU upload).
  weights() {
    return new Float32Array(this.memory.buffer, this.plan.weights,
                            this.plan.weightsBytes / 4);
  }

  // The weights' bytes (int8: the file's payload as stored).
  weightBytes() {
    return new Uint8Array(this.memory.buffer, this.plan.weights,
                          this.plan.weightsBytes);
  }

  request() {
    const v = new Uint32Array(this.memory.buffer,
                              this.exports.web_request(),
                              REQUEST_FIELDS.length);
    const r = {};
    REQUEST_FIELDS.forEach((k, i) => { r[k] = v[i]; });
    return r;
  }

  async run(tokens, position) {
    writeTokens(this, tokens);
    let st = this.exports.web_begin(tokens.length, position);
    while (st >= 1000) {
      const r = this.request();
      if (this.projector) {
        await this.projector.project(this, r);
      } else {
        this.check(this.exports.web_project_cpu(), 'product');
      }
      ++this.products;
      st = this.exports.web_next();
    }
    return st;
  }

  async prefill(tokens) {
    if (tokens.length === 0) throw new LockstepError('the prompt is empty');
    if (tokens.length > this.nCtx - this.position) {
      throw new LockstepError(`${tokens.length} tokens do not fit the ` +
                              `context of ${this.nCtx}`);
    }
    const chunk = this.plan.maxPrefix;
    for (let done = 0; done < tokens.length;) {
      const m = Math.min(tokens.length - done, chunk);
      let st = await this.run(tokens.slice(done, done + m), this.position);
      if (st === 10 && done + m < tokens.length) st = 0;
      this.check(st, `prefill at position ${this.position}`);
      this.position += m;
      done += m;
    }
    return this.logits();
  }

  async step(token) {
    if (this.position >= this.nCtx) {
      throw new LockstepError(`the context is full (${this.nCtx} positions)`);
    }
    this.check(await this.run([token], this.position),
               `step at position ${this.position}`);
    ++this.position;
    return this.logits();
  }

  logits() {
    return new Float32Array(this.memory.buffer, this.plan.logits, this.nVocab);
  }

  seed(seed) { this.exports.web_seed(BigInt.asUintN(64, BigInt(seed))); }

  sample(topK, temperature) {
    const t = this.exports.web_sample(topK, temperature);
    if (t < 0) throw new LockstepError(`top-k ${topK} / temperature ${temperature} invalid`);
    return t;
  }

  reset() { this.position = 0; }
}
