// `lockstep.mjs serve`: one session driven over stdin/stdout by the native
// CLI (`lockstep generate|logits --backend wasm`, cli/wasm_host.cc), so the
// native CLI keeps its own tokenizer, sampler and output code and only the
// logits come from the WebAssembly module.
//
// Requests are text lines; every response is a frame: int32 status (0 ok),
// uint32 length, then `length` bytes (the result, or an error message).
//   step TOKEN           cached step at the session's position: V float32
//   prefill ALL T1,T2,.. batched prefill at the session's position (ALL 0:
//                        the last position's V float32; 1: every
//                        position's, n * V float32)
//   infer T1,T2,...      full-prefix pass: V float32
//   tiny BOUNDBITS T1,.. tiny checked entry (bound as 16 hex digits of its
//                        binary64 bits): 256 float64
//   cache                the used KV-cache rows
//   reset                position 0
//   memory               uint32 bytes of memory now, uint32 at creation
//   observe T1,T2,...    with --observe: the module's observed pass over
//                        the tokens at positions 0..n-1 (docs/wasm.md
//                        "Observed pass"): its tap records
// After opening the model it writes one frame: status 0 and, as payload,
// uint32 n_vocab, uint32 n_ctx, uint32 memory bytes, then the module's
// SHA-256 (64 hex characters).
import { readSync } from 'node:fs';
import { HostError, loadModule, defaultModulePath } from './module.mjs';
import { Session } from './session.mjs';
import { writeStdout } from './stdout.mjs';
import { parseArgs, intOption } from './args.mjs';

function frame(status, payload) {
  const head = Buffer.alloc(8);
  head.writeInt32LE(status, 0);
  head.writeUInt32LE(payload.length, 4);
  writeStdout(head);
  if (payload.length) writeStdout(payload);
}

function bytesOf(view) {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

// Lines from fd 0, read synchronously (the protocol is strictly
// request-response).
function* lines() {
  const chunk = Buffer.alloc(1 << 16);
  let pending = '';
  for (;;) {
    let n;
    try {
      n = readSync(0, chunk, 0, chunk.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN') continue;
      if (e.code === 'EOF') return;
      throw e;
    }
    if (n === 0) return;
    pending += chunk.toString('latin1', 0, n);
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      yield pending.slice(0, nl);
      pending = pending.slice(nl + 1);
    }
  }
}

function tokenList(s) {
  if (s === undefined || s === '') return [];
  return s.split(',').map((t) => {
    if (!/^-?\d+$/.test(t)) throw new HostError(`bad token '${t}'`);
    return Number(t);
  });
}

function handle(s, line) {
  const [cmd, ...rest] = line.split(' ');
  switch (cmd) {
    case 'step':
      return bytesOf(s.step(intOption(rest[0], 'step', -0x80000000,
                                      0x7fffffff)));
    case 'prefill': {
      if (rest[0] !== '0' && rest[0] !== '1') {
        throw new HostError('prefill: the first argument is 0 (last ' +
                            'position) or 1 (every position)');
      }
      return bytesOf(s.prefill(tokenList(rest[1]), rest[0] === '1'));
    }
    case 'infer':
      return bytesOf(s.infer(tokenList(rest[0])));
    case 'tiny': {
      if (!/^[0-9a-f]{16}$/.test(rest[0] ?? '')) {
        throw new HostError('tiny: the bound is 16 hex digits of binary64');
      }
      const b = Buffer.from(rest[0], 'hex');
      return bytesOf(s.tinyLogits(tokenList(rest[1]), b.readDoubleBE(0)));
    }
    case 'cache':
      return Buffer.from(s.cache());
    case 'observe':
      return Buffer.from(s.observe(tokenList(rest[0])));
    case 'reset':
      s.reset();
      return Buffer.alloc(0);
    case 'memory': {
      const m = Buffer.alloc(8);
      m.writeUInt32LE(s.memory.buffer.byteLength, 0);
      m.writeUInt32LE(s.memoryBytes, 4);
      return m;
    }
    default:
      throw new HostError(`unknown request '${cmd}'`);
  }
}

export function serve(argv) {
  const a = parseArgs(argv, {
    model: { alias: '-m' }, weights: { alias: '-w' }, module: {},
    'module-sha256': {}, 'max-prefix': { def: '0' }, observe: { flag: true },
  }, 'serve');
  const path = a.weights ?? a.model;
  if (path === undefined) throw new HostError('serve: --model is required');
  const module = loadModule(a.module || defaultModulePath(),
                            a['module-sha256'] || null);
  const s = Session.open(path, {
    module,
    maxPrefix: intOption(a['max-prefix'], '--max-prefix', 0, 1 << 20) ||
        undefined,
    observe: a.observe,
  });
  const hello = Buffer.alloc(12);
  hello.writeUInt32LE(s.nVocab, 0);
  hello.writeUInt32LE(s.nCtx, 4);
  hello.writeUInt32LE(s.memoryBytes, 8);
  frame(0, Buffer.concat([hello, Buffer.from(module.sha256, 'latin1')]));
  for (const line of lines()) {
    if (line === '') continue;
    try {
      frame(0, handle(s, line));
    } catch (e) {
      if (!(e instanceof HostError)) throw e;
      frame(1, Buffer.from(e.message, 'utf8'));
    }
    s.assertMemoryUnchanged();
  }
  return 0;
}
