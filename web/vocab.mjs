// GPT-2 token ids to bytes (hosts/node/gpt2_vocab.mjs for the browser): the
// inverse of the byte-level BPE's byte-to-character map over encoder.json.
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

// encoder: the parsed encoder.json. Returns id -> Uint8Array.
export function vocabFromEncoder(encoder) {
  const inv = charToByte();
  const bytes = [];
  for (const [text, id] of Object.entries(encoder)) {
    bytes[id] = Uint8Array.from([...text].map((ch) => inv.get(ch)));
  }
  return (id) => bytes[id] ?? new Uint8Array(0);
}
