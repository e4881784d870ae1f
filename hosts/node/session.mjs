// A session on one model: the module instantiated on a memory planned from
// the checkpoint's config, the weights read into it once, and the entries
// (tiny checked entry, GPT-2 cachedStep and infer, the §5 sampler) on the
// planned buffers. Nothing is allocated in WebAssembly memory after open().
import { HostError, loadModule, planAndInstantiate, statusMessage }
  from './module.mjs';
import { openCheckpoint, readPayloadInto } from './checkpoint.mjs';

export class Session {
  // modelPath: a .lockstep checkpoint (tiny or packed GPT-2). options:
  // module (a path or a loadModule() result), moduleSha, maxPrefix.
  static open(modelPath, options = {}) {
    const loaded = typeof options.module === 'object' && options.module
        ? options.module
        : loadModule(options.module || undefined, options.moduleSha || null);
    const ck = openCheckpoint(modelPath);
    const c = ck.config;
    const s = new Session();
    s.kind = ck.kind;
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
      Object.assign(s, planAndInstantiate(
          loaded,
          (x) => x.gpt2_plan(c.n_vocab, c.n_ctx, c.n_embd, c.n_head,
                             c.n_layer, maxPrefix),
          `GPT-2 '${modelPath}'`));
      s.nVocab = c.n_vocab;
      s.nCtx = c.n_ctx;
      s.maxPrefix = Math.min(maxPrefix, c.n_ctx);
      s.rowBytes = c.n_layer * 2 * c.n_embd * 4;
    }
    readPayloadInto(ck, new Uint8Array(s.memory.buffer, s.plan.weights,
                                       s.plan.weightsBytes));
    if (s.kind === 'gpt2') {
      s.check(s.exports.gpt2_prepare(), `GPT-2 '${modelPath}'`);
    }
    s.position = 0;
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
    this.check(this.exports.cachedStep(token, this.position),
               `GPT-2 step at position ${this.position} (token ${token})`);
    ++this.position;
    return this.logits();
  }

  // The full-prefix pass: the last position's logits; the cache is untouched.
  infer(tokens) {
    if (tokens.length > this.maxPrefix && tokens.length <= this.nCtx) {
      throw new HostError(`GPT-2 infer: ${tokens.length} tokens, but this ` +
                          `session was sized for ${this.maxPrefix}`);
    }
    const n = this.writeTokens(tokens) ? tokens.length : this.nCtx + 1;
    this.check(this.exports.infer(n),
               `GPT-2 infer over ${tokens.length} tokens`);
    return this.logits();
  }

  logits() {
    return new Float32Array(this.memory.buffer, this.plan.logits, this.nVocab);
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
