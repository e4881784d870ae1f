#!/usr/bin/env node
// WASM-in-Node vs native single-thread decode, measured in one run
// (docs/wasm.md, docs/benchmarks.md "WebAssembly"):
//   node hosts/node/bench.mjs --model M.lockstep [--native BIN] [--prompt 16]
//        [--steps 32] [--rounds 5] [--prefill 128] [--prefill-rounds 3]
// Each round times `steps` cached steps after a `prompt`-token prompt in
// this process (the module) and in wasm_decode_bench (the native CPU
// backend, one thread), alternating, so both see the same machine state.
// Prints per-round medians and the ratio native ms / wasm ms (1.0: as fast
// as native).
// Then a `prefill`-token prompt fed from an empty cache, three ways in
// each round: the module's batched prefill, the module stepping it one
// token at a time (the same bits), and the native CPU backend's prefill
// (one thread, wasm_decode_bench --prefill); the ratios are WASM stepping
// ms / WASM prefill ms and native prefill ms / WASM prefill ms
// (--prefill 0 skips this).
// With --int8 Q.lockstep (the same model quantized: lockstep convert M Q
// --quant int8), each decode round also times the same steps on the
// module's int8 entries in a second session of this process, after the
// binary32 ones, and the summary gives the ratio WASM binary32 ms / WASM
// int8 ms (the int8 speedup) and both sessions' memory; --native-int8
// also times wasm_decode_bench on the int8 file (whatever the native `cpu`
// backend runs int8 with). With --int8, each prefill round also feeds the
// same prompt to the int8 session's batched prefill and its stepping, right
// after the binary32 ones, and the summary gives the median of the
// per-round ratios WASM binary32 prefill ms / WASM int8 prefill ms, also
// in this process's CPU time (process.cpuUsage: on a shared machine, time
// spent waiting for a core is left out).
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { cpus } from 'node:os';
import { hostDir } from './module.mjs';
import { Session } from './session.mjs';
import { parseArgs, intOption } from './args.mjs';

const usage = `usage: node hosts/node/bench.mjs --model M.lockstep [options]
  --model, -m M     a packed GPT-2 checkpoint (a random 124M:
                    build/wasm/wasm_decode_bench --write-random-124m M)
  --native BIN      the native half (default build/wasm/wasm_decode_bench)
  --prompt N        decode rounds: tokens stepped before timing (16)
  --steps N         decode rounds: cached steps timed per round (32)
  --rounds N        decode rounds, WASM and native alternating (5)
  --prefill N       prefill rounds: prompt length, 0 to skip (128)
  --prefill-rounds N  prefill rounds: WASM prefill, WASM stepping and
                    native one-thread prefill of the same prompt (3)
  --int8 Q          the same model as an int8 file: decode and prefill
                    rounds also time the module's int8 entries on it
  --native-int8     with --int8: also time the native cpu backend on it
  --no-prefill-stepping  prefill rounds: leave out the module stepping
                    the prompt (the slow part of a round)
  --module PATH, --module-sha256 HEX   another module and its digest
Prints each round on stderr and a JSON summary (medians, ratios) on
stdout.
`;
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(usage);
  process.exit(0);
}
const a = parseArgs(process.argv.slice(2), {
  model: { alias: '-m' }, native: {}, prompt: { def: '16' },
  steps: { def: '32' }, rounds: { def: '5' }, module: {},
  prefill: { def: '128' }, 'prefill-rounds': { def: '3' },
  'module-sha256': {}, int8: {}, 'native-int8': { flag: true },
  'no-prefill-stepping': { flag: true },
}, 'bench');
if (a.model === undefined) {
  process.stderr.write('bench: --model M.lockstep is required (a 124M: ' +
      'build/wasm/wasm_decode_bench --write-random-124m M.lockstep)\n');
  process.exit(2);
}
const prompt = intOption(a.prompt, '--prompt', 1, 1000);
const steps = intOption(a.steps, '--steps', 1, 1000);
const rounds = intOption(a.rounds, '--rounds', 1, 100);
const prefillN = intOption(a.prefill, '--prefill', 0, 1 << 20);
const prefillRounds = intOption(a['prefill-rounds'], '--prefill-rounds', 1,
                                100);
const native = a.native ?? resolve(hostDir, '..', '..', 'build', 'wasm',
                                   'wasm_decode_bench');

const median = (v) => [...v].sort((x, y) => x - y)[v.length >> 1];
let s;
try {
  s = Session.open(a.model, { module: a.module, moduleSha:
                              a['module-sha256'],
                              maxPrefix: Math.max(1, prefillN) });
  if (prompt + steps > s.nCtx || prefillN > s.nCtx) {
    throw new Error(`--prompt + --steps and --prefill must fit the ` +
                    `context of ${s.nCtx}`);
  }
} catch (e) {
  process.stderr.write(`bench: ${e.message}\n`);
  process.exit(1);
}
// The int8 session, its scratch sized for the prefill rounds' prompt as the
// binary32 session's.
let q = null;
if (a.int8 !== undefined) {
  try {
    q = Session.open(a.int8, { module: s.moduleInfo,
                               maxPrefix: Math.max(1, prefillN) });
    if (q.quant !== 'int8') throw new Error(`--int8 ${a.int8} is not int8`);
    if (JSON.stringify(q.config) !== JSON.stringify(s.config)) {
      throw new Error(`--int8 ${a.int8} has another config than --model`);
    }
  } catch (e) {
    process.stderr.write(`bench: ${e.message}\n`);
    process.exit(1);
  }
}
const V = s.nVocab;
const tok = (i) => (1000 + 37 * i) % V;

function wasmRound(session = s) {
  session.reset();
  for (let i = 0; i < prompt; ++i) session.step(tok(i));
  const ms = [];
  for (let i = 0; i < steps; ++i) {
    const t0 = process.hrtime.bigint();
    session.step(tok(prompt + i));
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(ms);
}

// The prompt of `prefillN` tokens on one session: one prefill call, then
// a step per token (the same bits), in ms.
function timePrefill(session, tokens) {
  session.reset();
  const c0 = process.cpuUsage();
  let t0 = process.hrtime.bigint();
  session.prefill(tokens);
  const prefillMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  const prefillCpuMs = (c.user + c.system) / 1e3;
  if (a['no-prefill-stepping']) return { prefillMs, stepMs: NaN, prefillCpuMs };
  session.reset();
  t0 = process.hrtime.bigint();
  for (const t of tokens) session.step(t);
  const stepMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return { prefillMs, stepMs, prefillCpuMs };
}

// binary32 (prefill, stepping), then with --int8 the int8 session's
// (prefill, stepping), then the native one-thread prefill.
function prefillRound() {
  const tokens = Array.from({ length: prefillN }, (_, i) => tok(i));
  const { prefillMs, stepMs, prefillCpuMs } = timePrefill(s, tokens);
  const r = { prefillMs, stepMs, ratio: stepMs / prefillMs, prefillCpuMs };
  if (q) {
    const i8 = timePrefill(q, tokens);
    Object.assign(r, { int8PrefillMs: i8.prefillMs, int8StepMs: i8.stepMs,
                       int8Speedup: prefillMs / i8.prefillMs,
                       int8PrefillCpuMs: i8.prefillCpuMs,
                       int8CpuSpeedup: prefillCpuMs / i8.prefillCpuMs });
  }
  const out = execFileSync(native, ['--model', a.model, '--prompt', '1',
    '--steps', '1', '--prefill', String(prefillN)], { encoding: 'utf8' });
  r.nativeMs = JSON.parse(out).prefill_ms;
  r.nativeRatio = r.nativeMs / prefillMs;
  return r;
}

function nativeRound(model = a.model) {
  const out = execFileSync(native, ['--model', model, '--prompt',
    String(prompt), '--steps', String(steps)], { encoding: 'utf8' });
  const j = JSON.parse(out);
  return { ms: median(j.ms_per_token), backend: j.backend };
}

wasmRound(); // warm-up: V8's tiering and the weights' first touch
if (q) wasmRound(q);
const results = [];
for (let r = 0; r < rounds; ++r) {
  const n = nativeRound();
  const w = wasmRound();
  const x = { wasm: w, native: n.ms, ratio: n.ms / w, backend: n.backend };
  let line = `round ${r + 1}: wasm ${w.toFixed(2)} ms/token, native ` +
      `(${n.backend}) ${n.ms.toFixed(2)} ms/token, ratio ` +
      `${(n.ms / w).toFixed(3)}`;
  if (q) {
    x.int8 = wasmRound(q);
    x.speedup = w / x.int8;
    line += `; wasm int8 ${x.int8.toFixed(2)} ms/token, binary32 / int8 ` +
        `${x.speedup.toFixed(3)}`;
    if (a['native-int8']) {
      const ni = nativeRound(a.int8);
      x.nativeInt8 = ni.ms;
      x.nativeInt8Backend = ni.backend;
      line += `; native int8 (${ni.backend}) ${ni.ms.toFixed(2)} ms/token`;
    }
  }
  results.push(x);
  process.stderr.write(line + '\n');
}
const prefillResults = [];
if (prefillN > 0) {
  // Warm-up: V8's tiering of the batched products (the decode rounds only
  // ran the one-position kernels).
  const warm = Array.from({ length: prefillN }, (_, i) => tok(i));
  for (const session of q ? [s, q] : [s]) {
    session.reset();
    session.prefill(warm);
  }
  for (let r = 0; r < prefillRounds; ++r) {
    const p = prefillRound();
    prefillResults.push(p);
    const i8 = q ? `; int8 prefill ${p.int8PrefillMs.toFixed(0)} ms, ` +
        `stepping ${p.int8StepMs.toFixed(0)} ms, binary32 / int8 prefill ` +
        `${p.int8Speedup.toFixed(3)} (CPU time ` +
        `${p.prefillCpuMs.toFixed(0)} / ${p.int8PrefillCpuMs.toFixed(0)} ms: ` +
        `${p.int8CpuSpeedup.toFixed(3)})` : '';
    process.stderr.write(`prefill round ${r + 1}: ${prefillN} tokens, ` +
        `prefill ${p.prefillMs.toFixed(0)} ms, stepping ` +
        `${p.stepMs.toFixed(0)} ms, ratio ${p.ratio.toFixed(3)}${i8}; ` +
        `native prefill ${p.nativeMs.toFixed(0)} ms\n`);
  }
}
s.assertMemoryUnchanged();
if (q) q.assertMemoryUnchanged();
const summary = {
  model: a.model,
  config: s.config,
  module_sha256: s.moduleInfo.sha256,
  memory_bytes: s.memoryBytes,
  prompt, steps, rounds,
  cpu: cpus()[0]?.model,
  node: process.version,
  native_backend: results[0].backend,
  wasm_ms_per_token: median(results.map((x) => x.wasm)),
  native_ms_per_token: median(results.map((x) => x.native)),
  ratio_native_over_wasm: median(results.map((x) => x.ratio)),
};
if (q) {
  const f32 = summary.wasm_ms_per_token;
  const int8 = median(results.map((x) => x.int8));
  Object.assign(summary, {
    int8_model: a.int8,
    int8_memory_bytes: q.memoryBytes,
    wasm_int8_ms_per_token: int8,
    wasm_tokens_per_s: 1000 / f32,
    wasm_int8_tokens_per_s: 1000 / int8,
    // The median of the per-round ratios (each round's binary32 and int8
    // steps run back to back).
    ratio_wasm_f32_over_wasm_int8: median(results.map((x) => x.speedup)),
  });
  if (a['native-int8']) {
    summary.native_int8_backend = results[0].nativeInt8Backend;
    summary.native_int8_ms_per_token =
        median(results.map((x) => x.nativeInt8));
  }
}
if (prefillN > 0) {
  Object.assign(summary, {
    prefill_tokens: prefillN,
    prefill_rounds: prefillRounds,
    wasm_prefill_ms: median(prefillResults.map((x) => x.prefillMs)),
    wasm_stepping_ms: median(prefillResults.map((x) => x.stepMs)),
    ratio_stepping_over_prefill: median(prefillResults.map((x) => x.ratio)),
    native_prefill_ms: median(prefillResults.map((x) => x.nativeMs)),
    ratio_native_prefill_over_wasm_prefill:
        median(prefillResults.map((x) => x.nativeRatio)),
  });
  if (q) {
    Object.assign(summary, {
      wasm_int8_prefill_ms: median(prefillResults.map((x) => x.int8PrefillMs)),
      wasm_int8_stepping_ms: median(prefillResults.map((x) => x.int8StepMs)),
      // The median of the per-round ratios (each round's binary32 and int8
      // prefills run back to back).
      ratio_wasm_f32_prefill_over_wasm_int8_prefill:
          median(prefillResults.map((x) => x.int8Speedup)),
      wasm_prefill_cpu_ms: median(prefillResults.map((x) => x.prefillCpuMs)),
      wasm_int8_prefill_cpu_ms:
          median(prefillResults.map((x) => x.int8PrefillCpuMs)),
      ratio_wasm_f32_prefill_over_wasm_int8_prefill_cpu:
          median(prefillResults.map((x) => x.int8CpuSpeedup)),
    });
  }
}
process.stdout.write(JSON.stringify(summary, null, 1) + '\n');
