// GPT-2 token ids to bytes, for printing generated text: the inverse of the
// byte-level BPE's byte-to-character map over data/gpt2/encoder.json
// (docs/tokenizer.md). Encoding text is left to the native tokenizer: the
// native CLI passes --tokens (docs/wasm.md).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { hostDir } from './module.mjs';
import { vocabFromEncoder } from '../../web/vocab.mjs';

// The byte map and the id -> bytes table are the page's (web/vocab.mjs,
// plain ES with no Node.js calls); here only the file is read and each
// entry viewed as a Buffer, which the host's writers take.
export function loadVocab(dir = resolve(hostDir, '..', '..', 'data', 'gpt2')) {
  const encoder = JSON.parse(readFileSync(resolve(dir, 'encoder.json'), 'utf8'));
  const bytes = vocabFromEncoder(encoder);
  return (id) => {
    const b = bytes(id);
    return Buffer.from(b.buffer, b.byteOffset, b.length);
  };
}
