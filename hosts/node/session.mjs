// A session on one model: the module instantiated on a memory planned from
// the checkpoint's config, the weights read into it once, and the entries
// (tiny checked entry, GPT-2 cachedStep, prefill and infer, the §5 sampler)
// on the
// planned buffers. Nothing is allocated in WebAssembly memory after open().
import { HostError, loadModule, planAndInstantiate, statusMessage }
  from './module.mjs';
import { openCheckpoint, readPayloadInto } from './checkpoint.mjs';

export class Session {
  // modelPath: a .lockstep checkpoint (tiny or packed GPT-2). options:
  // module (a path or a loadModule() result), moduleSha, maxPrefix,
  // observe (GPT-2: plan with the observation buffer, for observe()).
  static open(modelPath, options = {}) {
    const loaded = typeof options.module === 'object' && options.module
        ? options.module
        : loadModule(options.module || undefined, options.moduleSha || null);
    const ck = openCheckpoint(modelPath);
    const c = ck.config;
    const s = new Session();
    s.kind = ck.kind;
    // 'f32', or 'int8': a grouped int8 GPT-2 (docs/int8.md), planned with
    // gpt2_q8_plan; the entries below are the same.
    s.quant = ck.quant;
    s.config = c;
    s.payloadSha256 = ck.payloadSha256;
    s.moduleInfo = loaded;
    if (ck.kind === 'tiny') {
      Object.assign(s, planAndInstantiate(loaded, (x) => x.tiny_plan(c.n_ctx),
                                          `tiny model '${modelPath}'`));
      s.nVocab = 256;
      s.nCtx = c.n_ctx;
    } else {
      const maxPrefix = options.maxPrefix || c.n_ctx;
      const int8 = ck.quant === 'int8';
      if (int8 && typeof loaded.module === 'object' &&
          !WebAssembly.Module.exports(loaded.module)
              .some((e) => e.name === 'gpt2_q8_plan')) {
        throw new HostError(`GPT-2 '${modelPath}' is an int8 file, and the ` +
                            `module ${loaded.path} has no int8 entries`);
      }
      // observe: the same plan plus the observation buffer (docs/wasm.md
      // "Observed pass"); the other buffers keep their offsets.
      const planName = (int8 ? 'gpt2_q8' : 'gpt2') +
          (options.observe ? '_observe_plan' : '_plan');
      if (options.observe && typeof loaded.module === 'object' &&
          !WebAssembly.Module.exports(loaded.module)
              .some((e) => e.name === planName)) {
        throw new HostError(`the module ${loaded.path} has no observed ` +
                            `pass (${planName})`);
      }
      Object.assign(s, planAndInstantiate(
          loaded,
          (x) => x[planName](
              c.n_vocab, c.n_ctx, c.n_embd, c.n_head, c.n_layer, maxPrefix),
          `GPT-2${int8 ? ' int8' : ''} '${modelPath}'`));
      s.nVocab = c.n_vocab;
      s.nCtx = c.n_ctx;
      s.maxPrefix = Math.min(maxPrefix, c.n_ctx);
      s.rowBytes = c.n_layer * 2 * c.n_embd * 4;
      // Every-position logits one prefill call can return (the plan's
      // logits rows).
      s.logitsRows = s.exports.logits_rows();
    }
    readPayloadInto(ck, new Uint8Array(s.memory.buffer, s.plan.weights,
                                       s.plan.weightsBytes));
    if (s.kind === 'gpt2') {
      s.check(s.exports.gpt2_prepare(), `GPT-2 '${modelPath}'`);
    }
    s.position = 0;
    s.lastRow = 0;
    s.memoryBytes = s.memory.buffer.byteLength;
    return s;
  }

  check(status, what) {
    if (status !== 0) {
      throw new HostError(`${what}: ${statusMessage(this.exports, this.memory,
                                                     status)}`);
    }
  }

  writeTokens(tokens) {
    if (tokens.length > this.nCtx) return false;
    const t = new Int32Array(this.memory.buffer, this.plan.tokens,
                             tokens.length);
    for (let i = 0; i < tokens.length; ++i) {
      const v = tokens[i];
      // Out-of-range ids are passed as -1 so that the core reports them.
      t[i] = Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff ? v
                                                                        : -1;
    }
    return true;
  }

  // The tiny checked entry: 256 binary64 logits of the last token.
  tinyLogits(tokens, bound) {
    const n = this.writeTokens(tokens) ? tokens.length : this.nCtx + 1;
    this.check(this.exports.tiny_logits(n, bound), 'tiny model');
    return new Float64Array(this.memory.buffer, this.plan.logits, 256);
  }

  // The cached step at position(): n_vocab binary32 logits (a view, valid
  // until the next call).
  step(token) {
    if (this.position >= this.nCtx) {
      throw new HostError(`GPT-2 step: the context is full (${this.nCtx} ` +
                          'positions)');
    }
    this.lastRow = 0;  // as the module's sampler, set whatever the outcome
    this.check(this.exports.cachedStep(token, this.position),
               `GPT-2 step at position ${this.position} (token ${token})`);
    ++this.position;
    return this.logits();
  }

  // Batched prefill (ls_gpt2_prefill): consumes `tokens` at positions
  // position .. position + n - 1 layer by layer, appends their keys and
  // values to the cache and returns the last position's logits (a view,
  // valid until the next call), or with allPositions every position's as a
  // new Float32Array of n * n_vocab (position + i's at i * n_vocab). Runs in
  // chunks of at most maxPrefix positions (logitsRows with allPositions):
  // the same bits as step() on each token, however the prompt is split.
  // Consumes nothing when the tokens do not fit the context.
  prefill(tokens, allPositions = false) {
    if (this.kind !== 'gpt2') {
      throw new HostError('prefill is for GPT-2 models (a tiny model takes ' +
                          'its whole window at once)');
    }
    const n = tokens.length;
    if (n === 0) throw new HostError('GPT-2 prefill: no tokens');
    if (n > this.nCtx - this.position) {
      throw new HostError(`GPT-2 prefill: ${n} tokens at position ` +
                          `${this.position} do not fit the context of ` +
                          `${this.nCtx}`);
    }
    tokens.forEach((t, i) => {
      if (!Number.isInteger(t) || t < 0 || t >= this.nVocab) {
        throw new HostError(`GPT-2 prefill: token ${t} at index ${i} is ` +
                            `outside the vocabulary (0 .. ${this.nVocab - 1})`);
      }
    });
    const chunk = allPositions ? this.logitsRows : this.maxPrefix;
    const V = this.nVocab;
    const all = allPositions ? new Float32Array(n * V) : null;
    const start = this.position;
    for (let done = 0; done < n;) {
      const m = Math.min(n - done, chunk);
      this.writeTokens(tokens.slice(done, done + m));
      this.lastRow = allPositions ? m - 1 : 0;
      let status = this.exports.prefill(m, this.position, allPositions ? 1 : 0);
      // As Gpt2Session::prefill: a chunk before the last is not checked for
      // non-finite logits (LS_ERR_OUTPUT_NONFINITE, 10; its cache rows are
      // complete), so the chunking does not change which positions are
      // checked (docs/arithmetic.md 1.6); on an error nothing is consumed.
      if (status === 10 && !allPositions && done + m < n) status = 0;
      if (status !== 0) {
        const at = this.position;
        this.position = start;
        this.check(status, `GPT-2 prefill of ${m} tokens at position ${at}`);
      }
      if (all) {
        all.set(new Float32Array(this.memory.buffer, this.plan.logits, m * V),
                done * V);
      }
      this.position += m;
      done += m;
    }
    return all ?? this.logits();
  }

  // The full-prefix pass: the last position's logits; the cache is untouched.
  infer(tokens) {
    if (tokens.length > this.maxPrefix && tokens.length <= this.nCtx) {
      throw new HostError(`GPT-2 infer: ${tokens.length} tokens, but this ` +
                          `session was sized for ${this.maxPrefix}`);
    }
    const n = this.writeTokens(tokens) ? tokens.length : this.nCtx + 1;
    this.lastRow = 0;
    this.check(this.exports.infer(n),
               `GPT-2 infer over ${tokens.length} tokens`);
    return this.logits();
  }

  // The observed pass (a session opened with observe): the module's layer
  // pass over `tokens` at positions 0 .. n - 1 with every tap recorded;
  // returns the records (a view, valid until the next call): per tap
  // call, int32 layer, tap, position, head, count, then count float32.
  // The cache, the position and the latest logits are untouched.
  observe(tokens) {
    if (this.kind !== 'gpt2') {
      throw new HostError('observe is for GPT-2 models');
    }
    if (tokens.length > this.maxPrefix && tokens.length <= this.nCtx) {
      throw new HostError(`GPT-2 observe: ${tokens.length} tokens, but ` +
                          `this session was sized for ${this.maxPrefix}`);
    }
    const n = this.writeTokens(tokens) ? tokens.length : this.nCtx + 1;
    this.check(this.exports.observe(n),
               `GPT-2 observed pass over ${tokens.length} tokens`);
    return new Uint8Array(this.memory.buffer, this.exports.observed_at(),
                          this.exports.observed_bytes());
  }

  // The latest position's logits (after an every-position prefill, the
  // last row it wrote; the module's sampler reads the same row).
  logits() {
    return new Float32Array(this.memory.buffer,
                            this.plan.logits + this.lastRow * this.nVocab * 4,
                            this.nVocab);
  }

  // The used rows of the KV cache, as bytes.
  cache() {
    return new Uint8Array(this.memory.buffer, this.plan.cache,
                          this.position * this.rowBytes);
  }

  reset() { this.position = 0; }

  seed(seed) { this.exports.seed(BigInt.asUintN(64, BigInt(seed))); }

  // §5 on the current logits: greedy (topK 0) or top-k with temperature.
  sample(topK, temperature) {
    const t = this.exports.sample(topK, temperature);
    if (t < 0) {
      throw new HostError(`sampler: top-k ${topK} / temperature ` +
                          `${temperature} invalid for ${this.nVocab} tokens`);
    }
    return t;
  }

  // The memory never grows: the buffer keeps the size it was created with.
  assertMemoryUnchanged() {
    if (this.memory.buffer.byteLength !== this.memoryBytes) {
      throw new HostError('the WebAssembly memory grew during the session');
    }
  }
}
