// The lockstep checkpoint container (docs/checkpoint-format.md): the fixed
// 56 bytes and the JSON header are read first, so that the session's memory
// can be planned from the config; the payload is then read straight into
// the planned weights of the WebAssembly memory and its SHA-256 checked
// there (no second copy of a 500 MB model).
import { createHash } from 'node:crypto';
import { openSync, readSync, closeSync, fstatSync } from 'node:fs';
import { HostError } from './module.mjs';

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
// config, words, wordBytes, payloadOffset, payloadBytes, payloadSha256 }.
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
  if (version !== 1) bad(`unknown format version ${version}`);
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
        "a tiny model ('tiny', 'f64') nor GPT-2 ('gpt2', 'f32')");
  }
  if (!Number.isInteger(header.words) || header.words * wordBytes !== P) {
    bad(`words ${header.words} do not match the payload of ${P} bytes`);
  }
  return {
    path, fd, kind, config: cfg, words: header.words, wordBytes,
    payloadOffset: 56 + H, payloadBytes: P,
    payloadSha256: pre.subarray(24, 56).toString('hex'),
  };
}

// Reads the payload into `dest` (a Uint8Array view of exactly payloadBytes)
// in 16 MiB pieces, hashing as it goes; refuses a digest mismatch.
export function readPayloadInto(ck, dest) {
  if (dest.length !== ck.payloadBytes) {
    throw new HostError(`checkpoint '${ck.path}': ${ck.payloadBytes} payload ` +
                        `bytes, the plan has room for ${dest.length}`);
  }
  const hash = createHash('sha256');
  const piece = 16 << 20;
  for (let at = 0; at < dest.length; at += piece) {
    const n = Math.min(piece, dest.length - at);
    readExactly(ck.fd, dest, at, n, ck.payloadOffset + at, ck.path);
    hash.update(dest.subarray(at, at + n));
  }
  closeSync(ck.fd);
  const got = hash.digest('hex');
  if (got !== ck.payloadSha256) {
    throw new HostError(`checkpoint '${ck.path}': the payload's SHA-256 is ` +
                        `${got}, the header says ${ck.payloadSha256}`);
  }
}
