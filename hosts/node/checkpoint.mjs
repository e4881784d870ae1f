// The lockstep checkpoint container (docs/checkpoint-format.md): the fixed
// 56 bytes and the JSON header are read first, so that the session's memory
// can be planned from the config; the payload is then read straight into
// the planned weights of the WebAssembly memory and its SHA-256 checked
// there (no second copy of a 500 MB model). A GPT-2 file in the panel64
// weight layout (format version 2, docs/gpt2-format.md "Weight layouts") is
// un-permuted into the plain layout on the way in, one panel at a time: the
// module reads plain weights (and repacks them itself).
import { createHash } from 'node:crypto';
import { openSync, readSync, closeSync, fstatSync } from 'node:fs';
import { HostError } from './module.mjs';
import { Q8_DTYPE, checkQ8Header } from './checkpoint_q8.mjs';

const TINY_CONFIG = { vocab: 256, n_embd: 4, n_head: 2, n_layer: 1, n_ff: 8 };
const GPT2_KEYS = ['n_vocab', 'n_ctx', 'n_embd', 'n_head', 'n_layer'];

function readExactly(fd, buf, offset, length, position, path) {
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buf, offset + done, length - done, position + done);
    if (n === 0) throw new HostError(`checkpoint '${path}': truncated`);
    done += n;
  }
}

// Opens a checkpoint and returns its header: { kind: 'tiny'|'gpt2',
// quant: 'f32'|'int8', config, words, wordBytes, payloadOffset,
// payloadBytes, payloadSha256 }. An int8 GPT-2 file (docs/int8.md) is
// checked by checkpoint_q8.mjs; its payload is read as it is.
export function openCheckpoint(path) {
  let fd;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new HostError(`checkpoint '${path}': ${e.message}`);
  }
  const bad = (what) => {
    closeSync(fd);
    throw new HostError(`checkpoint '${path}': ${what}`);
  };
  const size = fstatSync(fd).size;
  if (size < 56) bad(`${size} bytes, shorter than the 56-byte preamble`);
  const pre = Buffer.alloc(56);
  readExactly(fd, pre, 0, 56, 0, path);
  if (pre.toString('latin1', 0, 8) !== 'LOCKSTEP') bad('wrong magic');
  const version = pre.readUInt32LE(8);
  if (version !== 1 && version !== 2) {
    bad(`unknown format version ${version} (this host reads 1 and 2)`);
  }
  const H = pre.readUInt32LE(12);
  const P = Number(pre.readBigUInt64LE(16));
  if (56 + H + P !== size) {
    bad(`56 + header ${H} + payload ${P} bytes != file size ${size}`);
  }
  if ((56 + H) % 64 !== 0) bad('the payload is not 64-byte aligned');
  const headerBytes = Buffer.alloc(H);
  readExactly(fd, headerBytes, 0, H, 56, path);
  let header;
  try {
    header = JSON.parse(headerBytes.toString('utf8'));
  } catch (e) {
    bad(`the header is not JSON (${e.message})`);
  }
  const cfg = header.config;
  if (typeof cfg !== 'object' || cfg === null) bad('the header has no config');
  let kind, wordBytes;
  if (header.model === 'gpt2' && header.dtype === Q8_DTYPE) {
    const config = checkQ8Header(header, version, P, bad);
    return {
      path, fd, kind: 'gpt2', quant: 'int8', config, words: header.words,
      wordBytes: 1, payloadOffset: 56 + H, payloadBytes: P,
      payloadSha256: pre.subarray(24, 56).toString('hex'),
      layout: header.layout, plainSha256: header.plain_sha256,
    };
  }
  if (header.model === 'tiny' && header.dtype === 'f64') {
    kind = 'tiny';
    wordBytes = 8;
    for (const [k, v] of Object.entries(TINY_CONFIG)) {
      if (cfg[k] !== v) bad(`config.${k} is not the tiny architecture's ${v}`);
    }
    if (!Number.isInteger(cfg.n_ctx)) bad('config lacks an integer n_ctx');
  } else if (header.model === 'gpt2' && header.dtype === 'f32') {
    kind = 'gpt2';
    wordBytes = 4;
    for (const k of GPT2_KEYS) {
      if (!Number.isInteger(cfg[k])) bad(`config lacks an integer ${k}`);
    }
  } else {
    bad(`model '${header.model}' with dtype '${header.dtype}' is neither ` +
        "a tiny model ('tiny', 'f64') nor GPT-2 ('gpt2', 'f32' or " +
        `'${Q8_DTYPE}')`);
  }
  if (!Number.isInteger(header.words) || header.words * wordBytes !== P) {
    bad(`words ${header.words} do not match the payload of ${P} bytes`);
  }
  const payloadSha256 = pre.subarray(24, 56).toString('hex');
  // Version 1: the plain layout. Version 2 (GPT-2 only): "layout" names it
  // and "plain_sha256" is the digest of the plain-layout payload.
  let layout = 'plain';
  let plainSha256 = payloadSha256;
  if (version === 1) {
    if ('layout' in header || 'plain_sha256' in header) {
      bad("format version 1 is the plain layout but the header has a " +
          "'layout' or 'plain_sha256' field (those need version 2)");
    }
  } else {
    if (kind !== 'gpt2') bad('format version 2 is for GPT-2 files');
    if (header.layout !== 'plain' && header.layout !== 'panel64') {
      bad(`unknown weight layout ${JSON.stringify(header.layout)} (this ` +
          'host reads plain and panel64)');
    }
    if (typeof header.plain_sha256 !== 'string' ||
        !/^[0-9a-f]{64}$/.test(header.plain_sha256)) {
      bad("format version 2 needs 'plain_sha256', 64 lowercase hex digits");
    }
    layout = header.layout;
    plainSha256 = header.plain_sha256;
  }
  return {
    path, fd, kind, quant: 'f32', config: cfg, words: header.words,
    wordBytes,
    payloadOffset: 56 + H, payloadBytes: P, payloadSha256, layout,
    plainSha256,
  };
}

// The tensors the panel64 layout permutes, in payload order, as
// { offset, K, N, head } in words (docs/gpt2-format.md "Weight layouts"):
// stored as the panels of the matrix M [K, N], 64 columns each; wte as the
// panels of the head wte^T [C, V] (head: plain word v*C + k is M's (k, v)).
function panelMatrices(cfg) {
  const V = cfg.n_vocab, T = cfg.n_ctx, C = cfg.n_embd;
  const out = [{ offset: 0, K: C, N: V, head: true }];
  for (let l = 0; l < cfg.n_layer; ++l) {
    const B = V * C + T * C + l * (12 * C * C + 13 * C);
    out.push({ offset: B + 2 * C, K: C, N: 3 * C, head: false });
    out.push({ offset: B + 5 * C + 3 * C * C, K: C, N: C, head: false });
    out.push({ offset: B + 8 * C + 4 * C * C, K: C, N: 4 * C, head: false });
    out.push({ offset: B + 12 * C + 8 * C * C, K: 4 * C, N: C, head: false });
  }
  return out;
}

// Reads payload bytes [at, at + n) into dest[to ..] and hashes them.
function readHashed(ck, hash, dest, to, n, at) {
  const piece = 16 << 20;
  for (let done = 0; done < n; done += piece) {
    const k = Math.min(piece, n - done);
    readExactly(ck.fd, dest, to + done, k, ck.payloadOffset + at + done,
                ck.path);
    hash.update(dest.subarray(to + done, to + done + k));
  }
}

// A panel64 payload into `dest` in the plain layout: the words the layout
// leaves alone are read straight into place; a permuted matrix is read one
// panel (at most 64 * K words) at a time and scattered. Words are moved as
// 32-bit integers, so every bit pattern is kept.
function readPanel64Into(ck, hash, dest) {
  if (dest.byteOffset % 4 !== 0) {
    throw new HostError(`checkpoint '${ck.path}': the weights' place in ` +
                        'memory is not 4-byte aligned');
  }
  const out = new Uint32Array(dest.buffer, dest.byteOffset, dest.length / 4);
  const C = ck.config.n_embd;
  const panelBuf = Buffer.alloc(64 * 4 * C * 4);
  const panel = new Uint32Array(panelBuf.buffer, panelBuf.byteOffset,
                                panelBuf.length / 4);
  let word = 0;  // plain words before `word` are in place
  for (const m of panelMatrices(ck.config)) {
    readHashed(ck, hash, dest, word * 4, (m.offset - word) * 4, word * 4);
    for (let c0 = 0; c0 < m.N; c0 += 64) {
      const pw = Math.min(64, m.N - c0);
      const n = pw * m.K;
      readExactly(ck.fd, panelBuf, 0, n * 4,
                  ck.payloadOffset + (m.offset + c0 * m.K) * 4, ck.path);
      hash.update(panelBuf.subarray(0, n * 4));
      for (let r = 0; r < m.K; ++r) {
        const src = r * pw;
        if (m.head) {  // wte[c0 + j][r]
          let d = m.offset + c0 * m.K + r;
          for (let j = 0; j < pw; ++j, d += m.K) out[d] = panel[src + j];
        } else {  // W[r][c0 + j]
          const d = m.offset + r * m.N + c0;
          for (let j = 0; j < pw; ++j) out[d + j] = panel[src + j];
        }
      }
    }
    word = m.offset + m.K * m.N;
  }
  readHashed(ck, hash, dest, word * 4, dest.length - word * 4, word * 4);
}

// Reads the payload into `dest` (a Uint8Array view of exactly payloadBytes)
// in the plain layout, in 16 MiB pieces (a panel64 file: a panel at a time,
// un-permuted), hashing the bytes as stored; refuses a digest mismatch.
export function readPayloadInto(ck, dest) {
  if (dest.length !== ck.payloadBytes) {
    throw new HostError(`checkpoint '${ck.path}': ${ck.payloadBytes} payload ` +
                        `bytes, the plan has room for ${dest.length}`);
  }
  const hash = createHash('sha256');
  try {
    if (ck.layout === 'panel64') {
      readPanel64Into(ck, hash, dest);
    } else {
      readHashed(ck, hash, dest, 0, dest.length, 0);
    }
  } finally {
    closeSync(ck.fd);
  }
  const got = hash.digest('hex');
  if (got !== ck.payloadSha256) {
    throw new HostError(`checkpoint '${ck.path}': the payload's SHA-256 is ` +
                        `${got}, the header says ${ck.payloadSha256}`);
  }
}
