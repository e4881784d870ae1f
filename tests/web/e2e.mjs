// The browser page end to end (docs/browser.md): Debian's chromium through
// playwright-core, WebGPU on SwiftShader, a new empty profile. The page
// (served by `lockstep serve-web`) loads and checks its modules, runs the
// start-up probes, and generates with both backends; the tokens must equal
// the native CLI's and WebGPU's logits must equal WebAssembly's bit for bit
// at every step, for tiny128 (WebAssembly only: binary64), the Hugging
// Face fixture (picked through the file input, as safetensors and as a
// packed file), the shipped shakespeare-gpt2, and both GPT-2 models in
// grouped int8 (`lockstep convert --quant int8`, picked through the file
// input: WGSL's dot4I8Packed kernel against WebAssembly's int8 path). Exits
// 77 (CTest: skipped) only when the browser offers no WebGPU adapter.
//   node e2e.mjs --lockstep BUILD/lockstep --repo ROOT [--chromium PATH]
//                [--screenshot OUT.png] [--tokens N]
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const lockstep = resolve(opt('--lockstep', 'build/lockstep'));
const repo = resolve(opt('--repo', '.'));
const chromiumPath = opt('--chromium', '/usr/bin/chromium');
const screenshot = opt('--screenshot', null);
const nTokens = Number(opt('--tokens', '12'));
const fixture = join(repo, 'tests', 'data', 'hf-gpt2-A');

let failures = 0;
const fail = (m) => { console.log('FAIL ' + m); ++failures; };
const same = (what, a, b) => {
  const x = JSON.stringify(a), y = JSON.stringify(b);
  if (x !== y) fail(`${what}:\n  page   ${x}\n  native ${y}`);
  else console.log(`ok   ${what}`);
};

function native(model, extra) {
  const out = execFileSync(lockstep, ['generate', '--model', model, '--json',
                                      '--quiet', ...extra], { cwd: repo });
  return JSON.parse(out.toString());
}

// serve-web on a free port, with the fixtures mounted.
const server = spawn(lockstep, ['serve-web', '--port', '0', '--mount',
                                `/fixtures=${join(repo, 'tests', 'data')}`],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
const base = await new Promise((res, rej) => {
  let text = '';
  server.stdout.on('data', (d) => {
    text += d;
    const m = text.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
    if (m) res(m[0]);
  });
  server.on('exit', (code) => rej(new Error(`serve-web exited ${code}`)));
});
const profile = mkdtempSync(join(tmpdir(), 'lockstep-web-profile-'));
const tmp = mkdtempSync(join(tmpdir(), 'lockstep-web-'));
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: false,  // --headless=new below, as the flags say
    args: ['--headless=new', '--no-sandbox', '--enable-unsafe-webgpu',
           '--use-webgpu-adapter=swiftshader',
           '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--no-first-run', '--disable-quic'],
    viewport: { width: 1180, height: 1100 },
  });
  const page = context.pages()[0] ?? await context.newPage();
  page.on('pageerror', (e) => fail(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') console.log(`page console: ${m.text()}`);
  });
  await page.goto(base + '?model=models/tiny128.lockstep');
  await page.waitForFunction(() => window.lockstepReady || window.lockstepError,
                             null, { timeout: 60000 });
  const err = await page.evaluate(() => window.lockstepError);
  if (err) throw new Error(`the page failed to start: ${err}`);
  const modules = await page.$$eval('#modules tr.ok', (r) => r.length);
  if (modules !== 2) fail(`${modules} modules verified, not 2`);
  else console.log('ok   both modules\' SHA-256 match the build\'s record');
  const adapter = await page.textContent('#adapter');
  console.log(adapter);
  if (/unavailable/.test(adapter)) {
    console.log('SKIP: this chromium offers no WebGPU adapter: ' + adapter);
    process.exitCode = 77;
    throw null;
  }
  const probes = await page.$$eval('#probes tr', (rows) => rows.slice(1).map(
      (r) => [...r.children].map((c) => c.textContent).join(' | ')));
  for (const p of probes) console.log('probe: ' + p);
  // The probes are verdicts about the adapter; the kernel self-test rows
  // must pass.
  const kernelRows = probes.filter((p) => p.startsWith('kernel'));
  if (kernelRows.length !== 16 || kernelRows.some((p) => !/\| passes \|/.test(p))) {
    fail('the kernel self-test did not pass: ' + JSON.stringify(kernelRows));
  }
  // The int8 kernel's other form (the exact byte sums a WGSL without
  // dot4I8Packed gets), on the page's device.
  const bytesRows = await page.evaluate(async () => {
    const m = await import('./webgpu.mjs');
    return (await m.q8KernelSelfTest(window.lockstepState.gpu.device, false))
        .map((r) => `${r.name} | ${r.ok ? 'passes' : 'FAILS'} | ${r.got}`);
  });
  for (const p of bytesRows) console.log('probe: ' + p);
  if (bytesRows.length !== 7 || bytesRows.some((p) => !/\| passes \|/.test(p))) {
    fail('the int8 kernel without dot4I8Packed: ' + JSON.stringify(bytesRows));
  } else {
    console.log('ok   the int8 kernel\'s byte-sum form passes its self-test');
  }

  const setForm = async (o) => {
    for (const [id, v] of Object.entries(o)) await page.fill('#' + id, v);
  };
  const run = async (backend) => {
    await page.selectOption('#backend', backend);
    await page.evaluate(() => { window.lockstepResult = null; window.lockstepError = null; });
    await page.click('#generate');
    await page.waitForFunction(() => window.lockstepResult || window.lockstepError,
                               null, { timeout: 300000 });
    const e = await page.evaluate(() => window.lockstepError);
    if (e) throw new Error(`generate on ${backend}: ${e}`);
    return page.evaluate(() => window.lockstepResult);
  };
  const loadModel = async (value, files) => {
    await page.selectOption('#model', value);
    if (files) await page.setInputFiles('#files', files);
    await page.evaluate(() => { window.lockstepError = null; });
    await page.click('#load');
    await page.waitForFunction(
        () => /loaded|error/.test(document.getElementById('status').textContent),
        null, { timeout: 120000 });
    const e = await page.evaluate(() => window.lockstepError);
    if (e) throw new Error(`loading ${value}: ${e}`);
  };
  const times = [];

  // tiny128: WebAssembly, greedy and sampled; WebGPU is off (binary64).
  for (const [k, seed] of [['0', '0'], ['20', '7']]) {
    await setForm({ prompt: 'ROMEO:', tokens: '', n: '60', topk: k, seed,
                    temperature: '1' });
    const r = await run('wasm');
    const want = native('tiny128', ['--text', 'ROMEO:', '--generate', '60',
                                    '--top-k', k, '--seed', seed]);
    same(`tiny128 WebAssembly tokens, top-k ${k} seed ${seed}`, r.tokens,
         want.tokens);
  }
  const gpuOff = await page.$eval('#backend option[value=webgpu]',
                                  (o) => o.disabled);
  if (!gpuOff) fail('WebGPU is offered for a binary64 tiny model');

  // The Hugging Face fixture through the file input: safetensors + config.
  const checkGpt2 = async (label, nativeModel, configs) => {
    for (const [k, seed, temp] of configs) {
      await setForm({ prompt: 'Hello world, this is', tokens: '',
                      n: String(nTokens), topk: k, seed, temperature: temp });
      const want = native(nativeModel, [
        '--text', 'Hello world, this is', '--generate', String(nTokens),
        '--top-k', k, '--seed', seed, '--temperature', temp]);
      const w = await run('wasm');
      same(`${label} WebAssembly tokens (top-k ${k})`, w.tokens, want.tokens);
      same(`${label} prompt tokens (serve-web's tokenizer)`, w.promptTokens,
           want.prompt_tokens);
      const g = await run('webgpu');
      same(`${label} WebGPU tokens (top-k ${k})`, g.tokens, want.tokens);
      const bad = g.steps.filter((s) => !s.equal);
      if (bad.length || g.steps.length !== g.tokens.length) {
        fail(`${label}: WebGPU logits differ from WebAssembly's at ` +
             JSON.stringify(bad.slice(0, 3)));
      } else {
        console.log(`ok   ${label}: WebGPU logits equal WebAssembly's bit ` +
                    `for bit at all ${g.steps.length} steps (top-k ${k})`);
      }
      times.push({ label, k, wasm: [w.prefillMs, w.decodeTokPerSec],
                   webgpu: [g.prefillMs, g.decodeTokPerSec] });
    }
  };
  await loadModel('files', [join(fixture, 'model.safetensors'),
                            join(fixture, 'config.json')]);
  const info = await page.textContent('#modelinfo');
  const sha = native(fixture, ['--tokens', '1']).payload_sha256;
  if (!info.includes(sha.slice(0, 16))) {
    fail(`the page's payload digest (${info}) is not the CLI's ${sha}`);
  }
  await checkGpt2('hf-gpt2-A (safetensors)', fixture,
                  [['0', '0', '1'], ['40', '11', '0.8']]);
  // The same weights as a packed file (panel64 layout).
  const packed = join(tmp, 'hf-gpt2-A.lockstep');
  execFileSync(lockstep, ['convert', fixture, packed], { stdio: 'ignore' });
  await loadModel('files', [packed]);
  await checkGpt2('hf-gpt2-A (packed)', packed, [['40', '11', '0.8']]);
  // The shipped trained GPT-2 (Hugging Face safetensors in models/).
  await loadModel('models/shakespeare-gpt2/');
  await checkGpt2('shakespeare-gpt2 (shipped)',
                  join(repo, 'models', 'shakespeare-gpt2'), [['0', '0', '1']]);
  // Grouped int8: the fixture and the shipped model through
  // `lockstep convert --quant int8`, picked through the file input.
  for (const [label, src] of [
    ['hf-gpt2-A', fixture],
    ['shakespeare-gpt2', join(repo, 'models', 'shakespeare-gpt2')]]) {
    const q8 = join(tmp, `${label}-int8.lockstep`);
    execFileSync(lockstep, ['convert', src, q8, '--quant', 'int8'],
                 { stdio: 'ignore' });
    await loadModel('files', [q8]);
    const text = await page.textContent('#modelinfo');
    if (!/grouped int8/.test(text)) fail(`${label} int8: the page says ${text}`);
    await checkGpt2(`${label} (int8)`, q8, [['0', '0', '1']]);
  }
  for (const t of times) {
    console.log(`time ${t.label} top-k ${t.k}: WebAssembly prefill ` +
                `${t.wasm[0].toFixed(1)} ms, decode ${t.wasm[1].toFixed(1)} ` +
                `tok/s; WebGPU prefill ${t.webgpu[0].toFixed(1)} ms, decode ` +
                `${t.webgpu[1].toFixed(1)} tok/s`);
  }
  if (screenshot) {
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(`screenshot: ${screenshot}`);
  }
  writeFileSync(join(tmp, 'done'), '');
} catch (e) {
  if (e !== null) fail(e.stack || String(e));
} finally {
  if (context) await context.close();
  server.kill('SIGTERM');
  rmSync(profile, { recursive: true, force: true });
  rmSync(tmp, { recursive: true, force: true });
}
if (process.exitCode !== 77) {
  console.log(failures ? `${failures} failures` : 'all checks passed');
  process.exit(failures ? 1 : 0);
}
