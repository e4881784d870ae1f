// Grouped int8 quantization in JavaScript (docs/arithmetic.md §7.1, §7.2
// weights, §7.6 layout): a binary32 GPT-2 payload in the plain layout to
// the payload `lockstep convert --quant int8` writes, byte for byte (the
// tests and hosts/node/webgpu_bench.mjs compare the SHA-256). Every binary32
// operation is Math.fround of the binary64 result, which is the binary32
// result for a quotient of binary32 values (binary64 has more than
// 2 * 24 + 2 bits); the ties-to-even rounding to a level is done on the
// exact binary64 value, not by adding 1.5 * 2^23 (which would round twice
// here).
import { q8TensorTable } from '../../web/checkpoint_q8.mjs';

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
const bits = (v) => { f32[0] = v; return u32[0]; };

// §7.1: a finite v >= 0 to bfloat16, ties to even; and back.
export function bf16(v) {
  const u = bits(v);
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}
const widen = (b) => { u32[0] = b << 16; return f32[0]; };

// §7.2 step 5: the level of v against the scale s > 0.
function level(v, s) {
  let r = Math.fround(v / s);
  r = r > 127 ? 127 : r < -127 ? -127 : r;
  const fl = Math.floor(r), d = r - fl;  // exact
  return d > 0.5 || (d === 0.5 && fl % 2 !== 0) ? fl + 1 : fl;
}

// The int8 payload (Uint8Array) of a binary32 plain payload `w`
// (Float32Array) for config `cfg`.
export function quantizeQ8(cfg, w) {
  const { tensors, bytes } = q8TensorTable(cfg);
  const out = new Uint8Array(bytes);
  const v = new Float32Array(64);
  let word = 0;  // the tensor's start in the binary32 payload
  for (const t of tensors) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (t.dtype === 'f32') {
      out.set(new Uint8Array(w.buffer, w.byteOffset + 4 * word, 4 * count),
              t.offset);
    } else {
      // wte [V, C] and wpe [T, C] are stored as their transposes [C, V],
      // [C, T]; a block matrix W [K, N] as it is (input-major).
      const rows = t.name === 'wte' || t.name === 'wpe';
      const K = rows ? t.shape[1] : t.shape[0];
      const N = rows ? t.shape[0] : t.shape[1];
      const G = K / 64;
      const at = (k, o) => word + (rows ? o * K + k : k * N + o);
      for (let o = 0; o < N; ++o) {
        const c0 = o - (o % 64), pw = Math.min(64, N - c0), j = o % 64;
        for (let g = 0; g < G; ++g) {
          let m = 0;
          for (let kk = 0; kk < 64; ++kk) {
            const x = w[at(64 * g + kk, o)];
            if (!Number.isFinite(x)) {
              throw new Error(`${t.name}: a non-finite weight`);
            }
            v[kk] = x;
            const a = Math.abs(x);
            m = a > m ? a : m;
          }
          const s = bf16(Math.fround(m / 127)), sg = widen(s);
          const blk = t.offset + c0 * (K + 2 * G) + g * 66 * pw;
          for (let kk = 0; kk < 64; ++kk) {
            out[blk + ((kk >> 2) * pw + j) * 4 + (kk & 3)] =
                (sg === 0 ? 0 : level(v[kk], sg)) & 0xff;
          }
          out[blk + 64 * pw + 2 * j] = s & 0xff;
          out[blk + 64 * pw + 2 * j + 1] = s >> 8;
        }
      }
    }
    word += count;
  }
  return out;
}
