// The grouped int8 GPT-2 file (docs/int8.md, docs/arithmetic.md §7.6):
// the container of hosts/node/checkpoint.mjs and web/lockstep-web.mjs with
// "dtype": "q8g64" and "layout": "q8panel64", shared by the Node.js host
// and the page (each passes its own `bad`). Their own reading of it,
// written from the docs rather than from formats/gpt2_q8.cc: the byte
// count and every tensor's offset and size are computed here from the
// config and compared with the header's table entry by entry, so a file
// that the module would read at the wrong offsets is refused before a byte
// of the payload is read. The payload is used in place by the modules (no
// permutation); they check the levels, scales and padding (gpt2_prepare,
// web_prepare: ls_gpt2_q8_weights_valid).

export const Q8_DTYPE = 'q8g64';
export const Q8_LAYOUT = 'q8panel64';
const GROUP = 64;

const pad64 = (n) => Math.ceil(n / 64) * 64;
// §7.6: a quantized matrix M [K, N] is N * (K + 2 K / 64) bytes.
const matrixBytes = (K, N) => N * (K + 2 * (K / GROUP));

// The payload's tensors in order, as the binary32 table names them:
// { name, dtype, shape, offset, bytes }, each starting on 64 bytes.
export function q8TensorTable(cfg) {
  const V = cfg.n_vocab, T = cfg.n_ctx, C = cfg.n_embd, L = cfg.n_layer;
  const out = [];
  let at = 0;
  const add = (name, shape, q8K, q8N) => {
    const bytes = q8K ? matrixBytes(q8K, q8N)
                      : shape.reduce((a, b) => a * b, 1) * 4;
    out.push({ name, dtype: q8K ? Q8_DTYPE : 'f32', shape, offset: at,
               bytes });
    at = pad64(at + bytes);
  };
  add('wte', [V, C], C, V);  // stored as the head wte^T [C, V]
  add('wpe', [T, C], C, T);  // stored as wpe^T [C, T]
  for (let l = 0; l < L; ++l) {
    const h = `h${l}.`;
    add(h + 'ln_1.g', [C]);
    add(h + 'ln_1.b', [C]);
    add(h + 'attn.c_attn.w', [C, 3 * C], C, 3 * C);
    add(h + 'attn.c_attn.b', [3 * C]);
    add(h + 'attn.c_proj.w', [C, C], C, C);
    add(h + 'attn.c_proj.b', [C]);
    add(h + 'ln_2.g', [C]);
    add(h + 'ln_2.b', [C]);
    add(h + 'mlp.c_fc.w', [C, 4 * C], C, 4 * C);
    add(h + 'mlp.c_fc.b', [4 * C]);
    add(h + 'mlp.c_proj.w', [4 * C, C], 4 * C, C);
    add(h + 'mlp.c_proj.b', [C]);
  }
  add('ln_f.g', [C]);
  add('ln_f.b', [C]);
  return { tensors: out, bytes: at };
}

// Checks an int8 header (after checkpoint.mjs has checked the container:
// magic, version, sizes, alignment, JSON). `P` is the payload's bytes;
// `bad(what)` throws. Returns the config.
export function checkQ8Header(header, version, P, bad) {
  if (version !== 2) bad(`an int8 file is format version 2, not ${version}`);
  if (header.layout !== Q8_LAYOUT) {
    bad(`layout ${JSON.stringify(header.layout)}: an int8 file's is ` +
        `'${Q8_LAYOUT}'`);
  }
  if (typeof header.plain_sha256 !== 'string' ||
      !/^[0-9a-f]{64}$/.test(header.plain_sha256)) {
    bad("'plain_sha256' is not 64 lowercase hex digits");
  }
  const cfg = header.config;
  const keys = ['n_vocab', 'n_ctx', 'n_embd', 'n_head', 'n_layer'];
  if (Object.keys(cfg).length !== keys.length) {
    bad(`config ${JSON.stringify(cfg)} must have exactly the keys ` +
        keys.join(', '));
  }
  for (const k of keys) {
    if (!Number.isInteger(cfg[k]) || cfg[k] < 1 || cfg[k] > 0x7fffffff) {
      bad(`config lacks a positive integer '${k}'`);
    }
  }
  if (cfg.n_embd % GROUP !== 0 || cfg.n_embd % cfg.n_head !== 0) {
    bad(`config n_embd ${cfg.n_embd} is not a usable int8 width (a ` +
        `multiple of 64 and of n_head ${cfg.n_head})`);
  }
  const { tensors, bytes } = q8TensorTable(cfg);
  if (header.words !== bytes || P !== bytes) {
    bad(`payload is ${P} bytes and the header says ${header.words}; this ` +
        `config's int8 weights are ${bytes}`);
  }
  const got = header.tensors;
  if (!Array.isArray(got) || got.length !== tensors.length) {
    bad(`the tensor table has ${Array.isArray(got) ? got.length : 'no'} ` +
        `entries, this config has ${tensors.length}`);
  }
  tensors.forEach((want, i) => {
    const t = got[i];
    const same = t !== null && typeof t === 'object' &&
        Object.keys(t).length === 5 && t.name === want.name &&
        t.dtype === want.dtype && Array.isArray(t.shape) &&
        t.shape.length === want.shape.length &&
        t.shape.every((v, d) => v === want.shape[d]) &&
        t.offset === want.offset && t.bytes === want.bytes;
    if (!same) {
      bad(`tensor table entry ${i} is ${JSON.stringify(t)}, expected ` +
          `${JSON.stringify(want)} (docs/int8.md)`);
    }
  });
  return cfg;
}
