// GPT-2 token ids to bytes, for printing generated text: the inverse of the
// byte-level BPE's byte-to-character map over data/gpt2/encoder.json
// (docs/tokenizer.md). Encoding text is left to the native tokenizer: the
// native CLI passes --tokens (docs/wasm.md).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { hostDir } from './module.mjs';

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to
// 256 + n in order.
function charToByte() {
  const keep = [];
  for (let b = 33; b <= 126; ++b) keep.push(b);
  for (let b = 161; b <= 172; ++b) keep.push(b);
  for (let b = 174; b <= 255; ++b) keep.push(b);
  const map = new Map();
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    const c = keep.includes(b) ? b : 256 + n++;
    map.set(String.fromCodePoint(c), b);
  }
  return map;
}

export function loadVocab(dir = resolve(hostDir, '..', '..', 'data', 'gpt2')) {
  const encoder = JSON.parse(readFileSync(resolve(dir, 'encoder.json'), 'utf8'));
  const inv = charToByte();
  const bytes = [];
  for (const [text, id] of Object.entries(encoder)) {
    bytes[id] = Buffer.from([...text].map((ch) => inv.get(ch)));
  }
  return (id) => bytes[id] ?? Buffer.alloc(0);
}
