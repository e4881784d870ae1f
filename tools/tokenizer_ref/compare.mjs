// Compares lockstep's GPT-2 tokenizer with the npm package gpt-3-encoder@1.1.4
// (an independent JavaScript implementation; `npm ci --prefix
// tools/tokenizer_ref` installs it). Run by CTest as tokenizer_vs_gpt3_encoder.
//
//   node compare.mjs --tokenize BUILD/tokenizer/lockstep_tokenize_ref
//                    --data data/gpt2 [--text FILE]... [--cases FILE.json]...
//                    [--random N] [--no-codepoints]
//
// Checks, each exactly (ids compared id by id; a difference is reported at its
// first position with the ids and the text around it):
//   --text FILE        ids of the whole file (UTF-8), and its pre-tokens
//   --cases FILE.json  ids of each string of a JSON array of strings or of
//                      {"text": ...} objects (where an object also has "ids",
//                      those are checked too), of all of them joined by "\n",
//                      and gpt-3-encoder's decode of our ids gives the text back
//   --random N         ids of N seeded random strings over a hard alphabet
//                      (default 20000)
//   code points        pre-tokens of probes around every Unicode scalar value;
//                      differences are allowed only on code points that
//                      PCRE2's Unicode tables leave unassigned (a newer Unicode
//                      in Node's ICU), and are counted in the closing line
// The last line says PASS or FAIL; the exit status is 0 only on PASS.
import {execFileSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import fs from 'node:fs';
import {createRequire} from 'node:module';
import os from 'node:os';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const NAME = 'tokenizer_vs_gpt3_encoder';
const here = path.dirname(fileURLToPath(import.meta.url));

function fail(msg) {
  console.log(`${NAME}: FAIL: ${msg}`);
  process.exit(1);
}

// ---- arguments
const args = {texts: [], cases: [], random: 20000, codepoints: true};
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const need = () => {
      if (i + 1 >= a.length) fail(`${a[i]} needs a value`);
      return a[++i];
    };
    if (a[i] === '--tokenize') args.tokenize = need();
    else if (a[i] === '--data') args.data = need();
    else if (a[i] === '--text') args.texts.push(need());
    else if (a[i] === '--cases') args.cases.push(need());
    else if (a[i] === '--random') args.random = Number(need());
    else if (a[i] === '--no-codepoints') args.codepoints = false;
    else fail(`unknown argument ${a[i]}`);
  }
  if (!args.tokenize || !args.data) fail('--tokenize BIN and --data DIR are required');
  if (!Number.isInteger(args.random) || args.random < 0) fail('--random takes a count');
}

// ---- the reference: gpt-3-encoder@1.1.4 from tools/tokenizer_ref/node_modules
const pkgDir = path.join(here, 'node_modules', 'gpt-3-encoder');
if (!fs.existsSync(path.join(pkgDir, 'package.json'))) {
  fail('gpt-3-encoder is not installed: run `npm ci --prefix tools/tokenizer_ref` ' +
       '(from the repository root; scripts/setup.sh does it)');
}
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
if (pkg.version !== '1.1.4') {
  fail(`gpt-3-encoder ${pkg.version} installed, expected 1.1.4: run ` +
       '`npm ci --prefix tools/tokenizer_ref`');
}
const enc = createRequire(import.meta.url)(pkgDir);
const sha256 = (file) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');
for (const f of ['encoder.json', 'vocab.bpe']) {
  const theirs = sha256(path.join(pkgDir, f));
  const ours = sha256(path.join(args.data, f));
  if (theirs !== ours) fail(`gpt-3-encoder's ${f} (${theirs}) differs from ${args.data}/${f} (${ours})`);
}
// gpt-3-encoder's own pre-tokenisation regex, read from its source.
const source = fs.readFileSync(path.join(pkgDir, 'Encoder.js'), 'utf8');
const patMatch = source.match(/^const pat = \/(.*)\/([a-z]*)$/m);
if (!patMatch) fail('cannot find `const pat = /.../` in gpt-3-encoder/Encoder.js');
const PAT = new RegExp(patMatch[1], patMatch[2]);
const JS_SPACE = /^\s$/u;

// ---- our side
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lockstep-tok-'));
process.on('exit', () => fs.rmSync(tmp, {recursive: true, force: true}));
function ours(...cmd) {
  let out;
  try {
    out = execFileSync(args.tokenize, ['--data', args.data, ...cmd],
                       {maxBuffer: 1 << 30, encoding: 'utf8'});
  } catch (e) {
    fail(`${args.tokenize} ${cmd.join(' ')} failed: ${e.stderr || e.message}`);
  }
  return JSON.parse(out);
}
let tmpCount = 0;
function tmpFile(content) {
  const f = path.join(tmp, `in${tmpCount++}`);
  fs.writeFileSync(f, content);
  return f;
}

// ---- helpers
const show = (s) => JSON.stringify(s);
// The first index where two arrays differ, or -1.
function firstDiff(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}
// A readable account of the first difference between two id arrays.
function describeIdDiff(what, mine, theirs, text) {
  const i = firstDiff(mine, theirs);
  const lo = Math.max(0, i - 5);
  // Where in the text: the length of the common prefix, decoded.
  const at = enc.decode(theirs.slice(0, i)).length;
  return `${what}: ids differ at index ${i} of ${mine.length} (ours) / ` +
      `${theirs.length} (gpt-3-encoder): ours ${mine[i]} vs gpt-3-encoder ` +
      `${theirs[i]}; ids ${lo}..${i + 5}: ours [${mine.slice(lo, i + 6)}] vs ` +
      `gpt-3-encoder [${theirs.slice(lo, i + 6)}]; text around character ${at}: ` +
      `${show(text.slice(Math.max(0, at - 40), at))} | ${show(text.slice(at, at + 40))}`;
}
function utf8(buf, what) {
  try {
    return new TextDecoder('utf-8', {fatal: true}).decode(buf);
  } catch {
    fail(`${what} is not valid UTF-8 (gpt-3-encoder takes JS strings; ` +
         'invalid UTF-8 is tested in tests/tokenizer_test.cc)');
  }
}
const pieces = (text) => Array.from(text.matchAll(PAT), (m) => m[0]);

// gpt-3-encoder's encode concatenates arrays per pre-token (quadratic in the
// length of its input), so long texts go to it in chunks cut after a '\n'
// that has a non-space character on each side: its pre-tokens are then the
// same as the whole text's (checked below, not assumed).
function referenceIds(text) {
  const chunks = [];
  let start = 0;
  for (let p = 2; p < text.length; p++) {
    if (p - start >= 4096 && text[p - 1] === '\n' &&
        !JS_SPACE.test(text[p - 2]) && !JS_SPACE.test(text[p])) {
      chunks.push(text.slice(start, p));
      start = p;
    }
  }
  chunks.push(text.slice(start));
  const whole = pieces(text);
  const chunked = chunks.flatMap(pieces);
  const d = firstDiff(whole, chunked);
  if (d >= 0) fail(`internal: chunking changed pre-token ${d}: ${show(whole[d])} vs ${show(chunked[d])}`);
  const ids = [];
  for (const c of chunks) for (const id of enc.encode(c)) ids.push(id);
  return ids;
}

let failures = 0;
let idsCompared = 0;
const summary = [];
// msg: a string, or a function giving it (built only on failure).
function check(ok, msg) {
  if (!ok) {
    failures++;
    console.log(`MISMATCH ${typeof msg === 'function' ? msg() : msg}`);
  }
  return ok;
}

// ---- whole text files
for (const file of args.texts) {
  const text = utf8(fs.readFileSync(file), file);
  const t0 = Date.now();
  const theirs = referenceIds(text);
  const mine = ours('ids', file);
  idsCompared += mine.length;
  check(firstDiff(mine, theirs) < 0, () => describeIdDiff(file, mine, theirs, text));
  const ourLengths = ours('pretokens', file);
  const jsLengths = pieces(text).map((p) => Buffer.byteLength(p, 'utf8'));
  const d = firstDiff(ourLengths, jsLengths);
  check(d < 0, () => `${file}: pre-token ${d} has ${ourLengths[d]} bytes (ours) vs ${jsLengths[d]}`);
  summary.push(`${path.basename(file)} ${text.length} chars, ${mine.length} ids ` +
               `(${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

// ---- lists of strings
function compareStrings(label, texts, expected) {
  const results = ours('strings', tmpFile(JSON.stringify(texts)));
  for (let k = 0; k < texts.length; k++) {
    const mine = results[k];
    const theirs = enc.encode(texts[k]);
    idsCompared += mine.length;
    const what = `${label} string ${k} ${show(texts[k].slice(0, 60))}`;
    check(firstDiff(mine, theirs) < 0, () => describeIdDiff(what, mine, theirs, texts[k]));
    if (expected && expected[k]) {
      check(firstDiff(mine, expected[k]) < 0,
            `${what}: ours [${mine}] vs the file's ids [${expected[k]}]`);
    }
    // gpt-3-encoder's decode (a TextDecoder) drops a leading U+FEFF as a
    // byte order mark; ours keeps it (docs/tokenizer.md).
    const back = texts[k].startsWith('\ufeff') ? texts[k].slice(1) : texts[k];
    check(enc.decode(mine) === back,
          () => `${what}: gpt-3-encoder's decode of our ids is ${show(enc.decode(mine))}`);
  }
}
for (const file of args.cases) {
  const items = JSON.parse(utf8(fs.readFileSync(file), file));
  if (!Array.isArray(items)) fail(`${file}: expected a JSON array`);
  const texts = items.map((x) => (typeof x === 'string' ? x : x.text));
  if (!texts.every((t) => typeof t === 'string')) fail(`${file}: every item needs a string text`);
  const expected = items.map((x) => (typeof x === 'object' && Array.isArray(x.ids) ? x.ids : null));
  compareStrings(path.basename(file), texts, expected);
  const joined = texts.join('\n');
  const mine = ours('ids', tmpFile(joined));
  const theirs = enc.encode(joined);
  idsCompared += mine.length;
  check(firstDiff(mine, theirs) < 0, () => describeIdDiff(`${file} joined`, mine, theirs, joined));
  summary.push(`${path.basename(file)} ${texts.length} strings`);
}

// ---- seeded random strings over an alphabet that stresses every rule
if (args.random > 0) {
  let seed = 20240607;
  const rand = () => {  // mulberry32
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const alphabet = [
    ...'abcxyzAZ019', ...' '.repeat(8), ...'\t\n\r\v\f', ...`,.;:!?'"-_()[]{}<>|/\\@#$%^&*+=~\``,
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", '’', '‘', 'ʼ', '＇',
    ',,', '",', ',"', '},{', '...', '--', '<|endoftext|>',
    'é', 'e\u0301', 'ß', 'ǅ', 'ﬁ', 'Ω', 'я', 'א', 'ب', '\u200f', '\u202e', 'क्', 'ก',
    '漢', 'か', 'カ', '한', '😀', '👍🏽', '👩‍👩‍👧', '🇫🇷', '\u200d', '\ufe0f',
    '٣', '६', '໓', '١٢', 'Ⅻ', '½', '²', '①',
    '\u00a0', '\u2009', '\u3000', '\ufeff', '\u0085', '\u2028', '\u2029', '\u180e',
    '\u200b', '\u1680', '\u202f', '\u205f', '\u0000', '\u007f', '\ufffd', '\u{10ffff}',
    '\u{e0001}', '\u{1d400}', '\u{20000}',
  ];
  const texts = [];
  for (let k = 0; k < args.random; k++) {
    const n = Math.floor(rand() * 40);
    let s = '';
    for (let j = 0; j < n; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
    texts.push(s);
  }
  compareStrings('random', texts, null);
  summary.push(`${args.random} random strings`);
}

// ---- pre-tokens around every Unicode scalar value
if (args.codepoints) {
  const probes = [];
  for (let cp = 0; cp < 0x110000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    // joins letters iff L, digits iff N, punctuation iff neither nor space;
    // ' ' + c and c + c + 'b' exercise the space rules.
    probes.push({cp, text: `a${c}a 1${c}1 !${c}! ${c}${c}b\n`});
  }
  const text = probes.map((p) => p.text).join('');
  const starts = [];  // byte offset of each probe
  let off = 0;
  for (const p of probes) {
    starts.push(off);
    off += Buffer.byteLength(p.text, 'utf8');
  }
  // Pre-token end offsets, increasing; a boundary on one side only is a
  // difference, charged to the probe holding the byte before it.
  const ends = (lengths) => {
    const e = new Int32Array(lengths.length);
    let b = 0;
    for (let k = 0; k < lengths.length; k++) e[k] = (b += lengths[k]);
    return e;
  };
  const mineE = ends(ours('pretokens', tmpFile(text)));
  const jsE = ends(Array.from(text.matchAll(PAT), (m) => Buffer.byteLength(m[0], 'utf8')));
  let probe = 0;
  const probeAt = (b) => {  // b only grows
    while (probe + 1 < starts.length && starts[probe + 1] <= b) probe++;
    return probes[probe].cp;
  };
  const differing = new Set();
  for (let i = 0, j = 0; i < mineE.length || j < jsE.length;) {
    if (i < mineE.length && j < jsE.length && mineE[i] === jsE[j]) {
      i++, j++;
    } else if (j >= jsE.length || (i < mineE.length && mineE[i] < jsE[j])) {
      differing.add(probeAt(mineE[i++] - 1));
    } else {
      differing.add(probeAt(jsE[j++] - 1));
    }
  }
  // Allowed: code points PCRE2 does not know (Unicode version skew).
  const un = JSON.parse(execFileSync(args.tokenize, ['unassigned'], {encoding: 'utf8'}));
  const unassigned = (cp) => un.ranges.some(([lo, hi]) => cp >= lo && cp <= hi);
  const hex = (cp) => 'U+' + cp.toString(16).toUpperCase().padStart(4, '0');
  const real = [...differing].filter((cp) => !unassigned(cp)).sort((x, y) => x - y);
  check(real.length === 0,
        `pre-tokens differ on ${real.length} code points assigned in PCRE2's ` +
        `Unicode ${un.unicode}: ${real.slice(0, 20).map(hex).join(' ')}`);
  const skew = differing.size - real.length;
  summary.push(`pre-tokens of all ${probes.length} scalar values (${skew} differ, all ` +
               `unassigned in PCRE2's Unicode ${un.unicode}, assigned in Node's ` +
               `${process.versions.unicode})`);
}

if (failures > 0) {
  console.log(`${NAME}: FAIL: ${failures} mismatch(es) against gpt-3-encoder@1.1.4`);
  process.exit(1);
}
console.log(`${NAME}: PASS: ${idsCompared} ids identical to gpt-3-encoder@1.1.4 ` +
            `(node ${process.version}) on ${summary.join('; ')}`);
