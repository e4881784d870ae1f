// Loading the lockstep WebAssembly module (docs/wasm.md): its SHA-256 is
// checked before anything is compiled, and every session gets a memory
// sized once, from the module's own plan, with initial == maximum so that
// it cannot grow.
import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoryMinimum } from '../../web/wasm_imports.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// Compile every function with V8's optimising tier up front. With the
// default dynamic tiering a decode step's few long-running calls stay in
// the baseline compiler (Liftoff) for many tokens: 124M decode measured
// about 30 ms/token that way against 20 with TurboFan from the start. The
// module is small, so compiling it all costs a few milliseconds.
setFlagsFromString('--no-liftoff');

// i64 parameters (the sampler's seed) pass as BigInt from Node 16 on; the
// host is written and tested for Node 20 (Debian 12).
if (Number(process.versions.node.split('.')[0]) < 16) {
  throw new Error(`lockstep's WebAssembly host needs Node.js 16 or later ` +
                  `(this is ${process.version})`);
}
const PAGE = 65536;

export class HostError extends Error {}

// The module the build made: $LOCKSTEP_WASM_MODULE, else build/wasm/.
export function defaultModulePath(scalar = false) {
  if (process.env.LOCKSTEP_WASM_MODULE && !scalar) {
    return process.env.LOCKSTEP_WASM_MODULE;
  }
  const name = scalar ? 'lockstep-scalar.wasm' : 'lockstep.wasm';
  return resolve(here, '..', '..', 'build', 'wasm', name);
}

function sha256Hex(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

// The digest the build recorded next to the module (sha256sum's format).
function recordedDigest(path) {
  const file = path + '.sha256';
  if (!existsSync(file)) {
    throw new HostError(
        `no recorded SHA-256 for ${path}: ${file} is missing (the build ` +
        'writes it; pass --module-sha256 to give the digest yourself)');
  }
  const hex = readFileSync(file, 'utf8').trim().split(/\s+/)[0];
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new HostError(`${file} does not hold a SHA-256 digest`);
  }
  return { hex, from: file };
}


// Reads and checks the module; `expectedSha` (hex) overrides the recorded
// digest. Refuses a module whose bytes differ.
export function loadModule(path = defaultModulePath(), expectedSha = null) {
  if (!existsSync(path)) {
    throw new HostError(`WebAssembly module ${path} not found (build it: ` +
                        'cmake --build build)');
  }
  const bytes = readFileSync(path);
  const want = expectedSha
      ? { hex: expectedSha.toLowerCase(), from: '--module-sha256' }
      : recordedDigest(path);
  const got = sha256Hex(bytes);
  if (got !== want.hex) {
    throw new HostError(`refusing WebAssembly module ${path}: its SHA-256 ` +
                        `is ${got}, but ${want.from} says ${want.hex}`);
  }
  return {
    path,
    sha256: got,
    size: bytes.length,
    module: new WebAssembly.Module(bytes),
    minPages: memoryMinimum(bytes, HostError),
  };
}

// Field order of lsw_plan (wasm/lsw_entry.c).
const PLAN_FIELDS = ['status', 'total', 'weights', 'weightsBytes', 'cache',
  'cacheBytes', 'scratch', 'scratchBytes', 'logits', 'logitsBytes', 'tokens',
  'tokensBytes', 'sample', 'sampleBytes', 'repack', 'repackBytes',
  'head', 'headBytes'];

function readPlan(memory, ptr) {
  const v = new Uint32Array(memory.buffer, ptr, PLAN_FIELDS.length);
  const plan = {};
  PLAN_FIELDS.forEach((name, i) => { plan[name] = v[i]; });
  return plan;
}

function instantiate(loaded, pages) {
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
  const instance = new WebAssembly.Instance(loaded.module, { env: { memory } });
  return { memory, exports: instance.exports };
}

export function statusMessage(x, memory, status) {
  const ptr = x.status_message(status);
  const bytes = new Uint8Array(memory.buffer, ptr);
  const end = bytes.indexOf(0);
  return Buffer.from(bytes.subarray(0, end)).toString('utf8');
}

// Plans with a throw-away instance of the module's minimum memory, then
// instantiates the session's instance on a memory of exactly plan.total
// bytes. `planCall(exports)` returns the plan's address.
export function planAndInstantiate(loaded, planCall, what) {
  const planner = instantiate(loaded, loaded.minPages);
  const plan = readPlan(planner.memory, planCall(planner.exports));
  if (plan.status !== 0) {
    throw new HostError(`${what}: ` +
        statusMessage(planner.exports, planner.memory, plan.status));
  }
  const session = instantiate(loaded, plan.total / PAGE);
  // The session instance must compute the same plan on its own memory.
  const again = readPlan(session.memory, planCall(session.exports));
  if (JSON.stringify(again) !== JSON.stringify(plan)) {
    throw new HostError(`${what}: the module planned differently twice`);
  }
  return { plan, memory: session.memory, exports: session.exports };
}

export const hostDir = here;
export { join };
