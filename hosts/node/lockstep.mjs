#!/usr/bin/env node
// The Node.js host of the lockstep WebAssembly module (docs/wasm.md):
//   node hosts/node/lockstep.mjs generate|logits|serve|info [options]
// generate and logits take the native CLI's flags and print the same
// tokens and write the same logit bytes; serve is the binary protocol the
// native `lockstep ... --backend wasm` drives (hosts/node/serve.mjs).
// Plain ESM, no dependencies.
import { renameSync, writeFileSync, unlinkSync, existsSync, statSync }
  from 'node:fs';
import { resolve } from 'node:path';
import { HostError, hostDir, loadModule, defaultModulePath }
  from './module.mjs';
import { Session } from './session.mjs';
import { parseArgs, intOption, numberOption, parseTokenList, seedOption,
         boundOption, regularFile, usage } from './args.mjs';
import { hexFloat, jsonNumber, showByte, showBytes } from './format.mjs';
import { loadVocab } from './gpt2_vocab.mjs';
import { serve } from './serve.mjs';
import { writeStdout, OutputError } from './stdout.mjs';

const TINY = ['tiny4', 'tiny64', 'tiny128'];

const out = writeStdout;

const moduleOptions = {
  module: { help: 'the WebAssembly module (default: the build\'s)' },
  'module-sha256': { help: 'its expected SHA-256 (default: recorded)' },
};
const modelOptions = {
  model: { alias: '-m', def: 'tiny128',
           help: 'tiny4, tiny64, tiny128 or a packed .lockstep file' },
  weights: { alias: '-w', help: 'a checkpoint file' },
  // Accepted for the native CLI's sake: the module is single-threaded and
  // is the backend.
  backend: { def: 'wasm', help: 'wasm only' },
  threads: { def: '1', help: 'accepted; the module runs on one' },
};

function modelPath(a) {
  if (a.weights !== undefined) return regularFile(a.weights, '--weights');
  if (TINY.includes(a.model)) {
    return resolve(hostDir, '..', '..', 'models', `${a.model}.lockstep`);
  }
  if (!existsSync(a.model)) {
    throw new HostError(`--model '${a.model}' is neither a shipped model ` +
                        '(tiny4, tiny64, tiny128) nor an existing file');
  }
  if (statSync(a.model).isDirectory()) {
    throw new HostError(`--model '${a.model}' is a folder: the WebAssembly ` +
                        'host reads packed .lockstep checkpoints (lockstep ' +
                        'convert makes one)');
  }
  return regularFile(a.model, '--model');
}

function label(a) { return a.weights !== undefined ? a.weights : a.model; }

function openSession(a, maxPrefix) {
  if (a.backend !== 'wasm') {
    throw new HostError(`--backend '${a.backend}': this host runs 'wasm' only`);
  }
  const module = loadModule(a.module === undefined ? defaultModulePath()
                                                 : regularFile(a.module,
                                                               '--module'),
                            a['module-sha256'] || null);
  return Session.open(modelPath(a), { module, maxPrefix });
}

// Doubles that nlohmann::json must write as doubles (JSON.stringify would
// write 10.0 as 10).
class JsonDouble {
  constructor(v) { this.v = v; }
}

// Sorted keys, as nlohmann::json writes objects.
function json(obj) {
  const keys = Object.keys(obj).sort();
  return '{' + keys.map((k) => JSON.stringify(k) + ':' + value(obj[k]))
      .join(',') + '}';
}

function value(v) {
  if (v instanceof JsonDouble) return jsonNumber(v.v);
  if (Array.isArray(v)) return '[' + v.map(value).join(',') + ']';
  return JSON.stringify(v);
}

function samplerOptions(a, vocab) {
  let topK = a['top-k'] === undefined ? 0
                                      : intOption(a['top-k'], '--top-k', 0,
                                                  1 << 20);
  const temperature = numberOption(a.temperature ?? '1', '--temperature');
  if (topK === 0 && temperature !== 1) topK = vocab;
  if (topK < 0 || topK > vocab) {
    throw new HostError(`top-k must be in [1, ${vocab}] (0 means greedy)`);
  }
  if (!(temperature > 0 && temperature <= 1e300)) {
    throw new HostError('temperature must be a finite number > 0');
  }
  const seed = a.seed === undefined ? 0n : seedOption(a.seed);
  return { topK, temperature, seed };
}

const generateSpec = {
  ...modelOptions, ...moduleOptions,
  text: { alias: '-t', help: 'prompt bytes (tiny models only)' },
  tokens: { help: 'prompt ids, e.g. 84,111,32,98' },
  generate: { alias: '-n', def: '0', help: 'tokens to generate' },
  top: { def: '10', help: 'rows of the distribution' },
  logits: { flag: true, help: 'every logit as a hex float' },
  json: { flag: true, help: 'one JSON object' },
  full: { flag: true, help: 'GPT-2: full-prefix pass per token' },
  special: { flag: true, help: 'accepted (no tokenizer here)' },
  bound: { alias: '-B', def: '10', help: 'tiny: weight bound in [0, 10]' },
  'top-k': { alias: '-k', help: 'sample from the k most likely' },
  seed: { alias: '-s', help: 'sampler seed, 0 to 2^64-1' },
  temperature: { alias: '-T', help: 'T > 0' },
};

function prompt(a, kind) {
  if (a.text !== undefined && a.tokens !== undefined) {
    throw new HostError('--text excludes --tokens');
  }
  if (a.tokens !== undefined) return parseTokenList(a.tokens);
  if (a.text === undefined) return [];
  if (kind === 'gpt2') {
    throw new HostError('GPT-2 --text needs the BPE tokenizer, which this ' +
                        'host does not carry: pass --tokens, or run ' +
                        '`lockstep generate --backend wasm`, which ' +
                        'tokenizes natively');
  }
  return [...Buffer.from(a.text, 'utf8')];
}

function generate(argv) {
  const a = parseArgs(argv, generateSpec, 'generate');
  const n = intOption(a.generate, '--generate', 0, 1000000);
  const top = intOption(a.top, '--top', 1, 256);
  const bound = boundOption(a.bound);
  const s = openSession(a, undefined);
  if (s.kind === 'gpt2' && a.given.has('bound')) {
    throw new HostError('--bound clips the tiny models\' weights; GPT-2 ' +
                        'runs its weights as they are (leave --bound out)');
  }
  const opts = samplerOptions(a, s.nVocab);
  const tokens = prompt(a, s.kind);
  if (tokens.length === 0) {
    throw new HostError('the prompt is empty: give --text or --tokens with ' +
                        `at least one ${s.kind === 'tiny' ? 'byte' : 'token'}`);
  }
  s.seed(opts.seed);
  return s.kind === 'tiny' ? tinyGenerate(a, s, tokens, n, top, bound, opts)
                           : gpt2Generate(a, s, tokens, n, top, opts);
}

function tinyGenerate(a, s, promptTokens, n, top, bound, opts) {
  if (n > 0) {
    const text = [...promptTokens];
    const gen = [];
    if (!a.json && a.text !== undefined) out(Buffer.from(a.text, 'utf8'));
    for (let i = 0; i < n; ++i) {
      const window = text.slice(Math.max(0, text.length - s.nCtx));
      s.tinyLogits(window, bound);
      const next = s.sample(opts.topK, opts.temperature);
      text.push(next);
      gen.push(next);
      if (!a.json) out(Buffer.from([next]));
    }
    s.assertMemoryUnchanged();
    if (a.json) {
      out(json({ model: label(a), payload_sha256: s.payloadSha256,
                 prompt_tokens: promptTokens, tokens: gen,
                 completion_escaped: showBytes(gen) }) + '\n');
    } else {
      out('\n');
    }
    return 0;
  }
  let window = promptTokens;
  if (window.length > s.nCtx) {
    window = window.slice(window.length - s.nCtx);
    process.stderr.write(`note: ${label(a)} sees only the last ${s.nCtx} ` +
                         'bytes\n');
  }
  const logits = Array.from(s.tinyLogits(window, bound));
  if (a.json) {
    out(json({ model: label(a), payload_sha256: s.payloadSha256,
               tokens: window, bound: new JsonDouble(bound),
               logits_hex: logits.map(hexFloat),
               logits: logits.map((v) => new JsonDouble(v)) }) + '\n');
    return 0;
  }
  if (a.logits) {
    let text = '';
    logits.forEach((v, i) => {
      text += `${String(i).padStart(3)} ${hexFloat(v)}\n`;
    });
    out(text);
    return 0;
  }
  // Probabilities for display only (binary64, Math.exp).
  const m = Math.max(...logits);
  const e = logits.map((v) => Math.exp(v - m));
  const sum = e.reduce((x, y) => x + y, 0);
  const order = [...e.keys()].sort((x, y) => e[y] - e[x] || x - y);
  let text = `next byte after '${showBytes(window)}' (${label(a)}, last ` +
             `${window.length} bytes)\nrank  byte   prob      logit\n`;
  for (let r = 0; r < Math.min(top, 256); ++r) {
    const b = order[r];
    text += `${String(r + 1).padStart(4)}  ` +
            `${("'" + showByte(b) + "'").padEnd(5)}  ` +
            `${(e[b] / sum).toFixed(5)}   ${hexFloat(logits[b])}\n`;
  }
  out(text);
  return 0;
}

function gpt2Generate(a, s, tokens, n, top, opts) {
  if (tokens.length > s.nCtx) {
    throw new HostError(`the prompt has ${tokens.length} tokens; the ` +
                        `model's context is ${s.nCtx}`);
  }
  // The prompt: one batched prefill into the cache (the same bits as
  // stepping it), or with --full the full-prefix pass.
  let logits = a.full ? s.infer(tokens) : s.prefill(tokens);
  if (n === 0) {
    const values = Array.from(logits);
    if (a.json) {
      out(json({ model: label(a), payload_sha256: s.payloadSha256, tokens,
                 logits_hex: values.map(hexFloat) }) + '\n');
    } else if (a.logits) {
      out(values.map((v, i) => `${String(i).padStart(5)} ${hexFloat(v)}\n`)
              .join(''));
    } else {
      const vocab = loadVocab();
      const m = Math.max(...values);
      const e = values.map((v) => Math.exp(v - m));
      const sum = e.reduce((x, y) => x + y, 0);
      const order = [...values.keys()].sort(
          (x, y) => values[y] - values[x] || x - y);
      let text = 'rank  token   prob      logit            text\n';
      for (let r = 0; r < Math.min(top, order.length); ++r) {
        const id = order[r];
        text += `${String(r + 1).padStart(4)}  ${String(id).padStart(5)}   ` +
                `${(e[id] / sum).toFixed(5)}   ${hexFloat(values[id])
                    .padEnd(15)}  '${showBytes(vocab(id))}'\n`;
      }
      out(text);
    }
    return 0;
  }
  const vocab = a.json ? null : loadVocab();
  if (!a.json) out(Buffer.concat(tokens.map((t) => vocab(t))));
  const generated = [];
  const all = [...tokens];
  for (let i = 0; i < n; ++i) {
    const next = s.sample(opts.topK, opts.temperature);
    generated.push(next);
    all.push(next);
    if (!a.json) out(vocab(next));
    if (i + 1 === n) break;
    if (all.length >= s.nCtx) {
      process.stderr.write(`\nnote: stopped at the context limit of ` +
                           `${s.nCtx} positions after ${i + 1} of ${n} ` +
                           'tokens\n');
      break;
    }
    logits = a.full ? s.infer(all) : s.step(next);
  }
  s.assertMemoryUnchanged();
  if (a.json) {
    const v = loadVocab();
    out(json({ model: label(a), payload_sha256: s.payloadSha256,
               prompt_tokens: tokens, tokens: generated,
               text: showBytes(Buffer.concat(generated.map((t) => v(t)))) }) +
        '\n');
  } else {
    out('\n');
  }
  return 0;
}

const logitsSpec = {
  ...modelOptions, ...moduleOptions,
  tokens: { help: 'token ids, e.g. 15496,995' },
  text: { help: 'refused: this host has no tokenizer' },
  out: { alias: '-o', help: 'output file (binary32 rows)' },
  'all-positions': { flag: true, help: 'one row per position' },
  full: { flag: true, help: 'full-prefix pass per row' },
  special: { flag: true, help: 'accepted (no tokenizer here)' },
};

function logits(argv) {
  const a = parseArgs(argv, logitsSpec, 'logits');
  if (a.out === undefined) throw new HostError('logits: --out is required');
  const s = openSession(a, undefined);
  if (s.kind !== 'gpt2') {
    throw new HostError('lockstep logits is for GPT-2 models; for a tiny ' +
                        'model use `lockstep generate --logits --json`');
  }
  const tokens = a.text !== undefined ? prompt(a, 'gpt2')
                                      : parseTokenList(a.tokens ?? '');
  if (tokens.length === 0) throw new HostError('no tokens: give --tokens or --text');
  if (tokens.length > s.nCtx) {
    throw new HostError(`${tokens.length} tokens exceed the context of ` +
                        `${s.nCtx}`);
  }
  const rows = a['all-positions'] ? tokens.length : 1;
  const V = s.nVocab;
  const bytes = Buffer.alloc(rows * V * 4);
  const put = (l, row) => {
    bytes.set(new Uint8Array(l.buffer, l.byteOffset, l.length * 4),
              row * V * 4);
  };
  if (a.full) {
    // The full-prefix pass of every prefix (or of the whole prompt).
    for (let t = a['all-positions'] ? 0 : tokens.length - 1;
         t < tokens.length; ++t) {
      put(s.infer(tokens.slice(0, t + 1)), a['all-positions'] ? t : 0);
    }
  } else {
    // One batched prefill: the last position's logits or every position's.
    put(s.prefill(tokens, a['all-positions']), 0);
  }
  s.assertMemoryUnchanged();
  const tmp = `${a.out}.tmp.${process.pid}`;
  try {
    writeFileSync(tmp, bytes);
    renameSync(tmp, a.out);
  } catch (e) {
    if (existsSync(tmp)) unlinkSync(tmp);
    throw new HostError(`cannot write '${a.out}': ${e.message}`);
  }
  process.stderr.write(`wrote ${rows} x ${V} binary32 logits to ${a.out}\n`);
  return 0;
}

// The module's identity and, with --model, the session's memory plan (the
// WebAssembly memory is exactly `memory_bytes`, created once).
// --steps N (GPT-2) decodes N cached steps first (tokens 1000 + 37 i mod
// n_vocab, as bench.mjs), so that process_rss_bytes is a warm session's.
const infoSpec = { ...moduleOptions, model: { alias: '-m' },
                   weights: { alias: '-w' },
                   steps: { def: '0', help: 'GPT-2: cached steps first' } };

function info(argv) {
  const a = parseArgs(argv, infoSpec, 'info');
  const m = loadModule(a.module === undefined ? defaultModulePath()
                                              : regularFile(a.module,
                                                            '--module'),
                       a['module-sha256'] || null);
  const j = { module: m.path, sha256: m.sha256, bytes: m.size,
              min_pages: m.minPages };
  if (a.model !== undefined || a.weights !== undefined) {
    const s = Session.open(modelPath(a), { module: m });
    const steps = intOption(a.steps, '--steps', 0, s.nCtx);
    if (s.kind === 'gpt2') {
      for (let i = 0; i < steps; ++i) s.step((1000 + 37 * i) % s.nVocab);
      s.assertMemoryUnchanged();
    }
    j.model = label(a);
    if (s.kind === 'gpt2') {
      j.quant = s.quant;
      j.steps = steps;
    }
    j.memory_bytes = s.memoryBytes;
    j.plan = Object.fromEntries(Object.entries(s.plan)
        .filter(([k]) => k.endsWith('Bytes') || k === 'total'));
    j.process_rss_bytes = process.memoryUsage().rss;
  }
  out(JSON.stringify(j, null, 1) + '\n');
  return 0;
}

const commands = { generate, logits, serve, info };
const help = {
  generate: [generateSpec, 'The next-token distribution, logits or ' +
             'generated tokens, as `lockstep generate --backend wasm`.'],
  logits: [logitsSpec, 'GPT-2 logits as little-endian binary32 rows, as ' +
           '`lockstep logits`.'],
  info: [infoSpec, 'The module\'s identity; with a model, its memory plan.'],
  serve: [{ ...modelOptions, ...moduleOptions },
          'The binary protocol `lockstep ... --backend wasm` drives ' +
          '(serve.mjs).'],
};
const topUsage = 'usage: node hosts/node/lockstep.mjs ' +
                 'generate|logits|serve|info [options] (COMMAND --help)\n';

function main(argv) {
  const cmd = argv[0];
  if (cmd === '--help' || cmd === '-h') {
    writeStdout(topUsage);
    return 0;
  }
  if (!commands[cmd]) {
    process.stderr.write(topUsage);
    return 2;
  }
  try {
    if (argv.includes('--help') || argv.includes('-h')) {
      writeStdout(usage(cmd, ...help[cmd]));
      return 0;
    }
    return commands[cmd](argv.slice(1));
  } catch (e) {
    // Standard output gone (docs/cli.md "Output"): a closed pipe ends
    // quietly with 141 (128 + SIGPIPE, as the native CLI's signal), any
    // other write error with a message and 1.
    if (e instanceof OutputError) {
      if (e.code === 'EPIPE') return 141;
      process.stderr.write(`lockstep (wasm): error: ${e.message}\n`);
      return 1;
    }
    if (e instanceof HostError || e instanceof RangeError) {
      process.stderr.write(`lockstep (wasm): error: ${e.message}\n`);
      return 1;
    }
    // A file the host could not read or write (EISDIR, EACCES, ENOENT,
    // ENOSPC ...): Node's message, no stack trace.
    if (typeof e.code === 'string' && typeof e.syscall === 'string') {
      process.stderr.write(`lockstep (wasm): error: ${e.message}\n`);
      return 1;
    }
    process.stderr.write(`lockstep (wasm): internal error: ${e.stack}\n`);
    return 3;
  }
}

process.exitCode = main(process.argv.slice(2));
