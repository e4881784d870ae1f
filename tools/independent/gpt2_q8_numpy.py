#!/usr/bin/python3
"""The grouped int8 GPT-2 (docs/arithmetic.md §7) written a second time, in
numpy, from the spec's text, and compared with lockstep bit for bit.

Shares no code with the C/C++ implementation:
  * its own safetensors reader (and writer, for the random 124M), its own
    reader of lockstep's int8 container (docs/checkpoint-format.md,
    docs/int8.md "The file"), SHA-256 through hashlib;
  * its own quantization of the binary32 weights (§7.1 bfloat16 scales,
    §7.2 groups of 64) and packing (§7.6), checked byte for byte against
    the payload `lockstep convert --quant int8` wrote;
  * its own forward pass (§6 binary32 parts, §7 int8 parts) with §3's exp
    and tanh from tools/independent/arith_numpy.py.

numpy's float32 element-wise operations are single IEEE-754 binary32
operations rounded to nearest (no contraction), so each line below is one
spec operation. Every floating-point sum runs in the spec's order: the
code vectorizes across outputs, positions and heads and loops over the
terms (never np.sum, np.dot or @ on floats whose rounding matters). The one
matrix product is the §7.3 step-1 group sum of int8 levels: products of
integers |q| <= 127, at most 64 terms, so every partial sum is an integer
below 64 * 127 * 127 = 1,032,256 < 2^24, exact in binary32 in any order
and with or without fused multiply-adds; BLAS computes it exactly.

lockstep's side: `lockstep convert IN OUT --quant int8` and `lockstep
logits --model OUT --tokens ... --all-positions --out F` (every
position's logits, i.e. n contexts of lengths 1..n), and, with --core-lib,
the KV cache from the C core's ls_gpt2_q8_prefill through ctypes (no
command writes an int8 cache: `lockstep dump` reads binary32 files only).

Usage:
  gpt2_q8_numpy.py --lockstep build/lockstep --hf tests/data/hf-gpt2-A
  gpt2_q8_numpy.py --lockstep build/lockstep --random-124m --core-lib LIB
Prints what it compared and the first mismatch (index, both values in
hex); last line "N passed, M failed"; exit 1 on any mismatch.
"""

import argparse
import ctypes
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arith_numpy  # noqa: E402  (§3 exp/tanh/GELU in numpy)

F32 = np.float32
GROUP = 64
EPS = F32(float.fromhex('0x1.4f8b58p-17'))  # §2.3, binary32
RNE_MAGIC = F32(float.fromhex('0x1.8p23'))  # §7.2 step 5
MAGIC = b'LOCKSTEP'

# A deliberate deviation from the spec (--mutations): each must make the
# comparison fail, which shows the check can see it.
MUTATIONS = {
    'ties-away': '§7.2: round half away from zero instead of to even',
    'f32-weight-scales': '§7.1: weight scales kept in binary32, not bfloat16',
    'scale-order': '§7.3 step 2: (isum * sx) * sw instead of isum * (sx * sw)',
    'bias-first': '§7.3 step 4: the bias added first instead of last',
    'sequential-layernorm': '§2.3: LayerNorm sums sequential instead of blocked',
}
MUTATION = None


class FormatError(Exception):
    pass


# ---------------------------------------------------------------------------
# safetensors (HF): reader and writer
# ---------------------------------------------------------------------------

def read_safetensors(path):
    """{name: float32 array}; F16 and BF16 widened exactly."""
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 8:
        raise FormatError('%s: shorter than 8 bytes' % path)
    (n,) = struct.unpack('<Q', data[:8])
    if 8 + n > len(data):
        raise FormatError('%s: header length %d past the end' % (path, n))
    header = json.loads(data[8:8 + n].decode('utf-8'))
    base = 8 + n
    out = {}
    for name, t in header.items():
        if name == '__metadata__':
            continue
        a, b = t['data_offsets']
        raw = data[base + a:base + b]
        shape = tuple(t['shape'])
        count = int(np.prod(shape, dtype=np.int64))
        if t['dtype'] == 'F32':
            v = np.frombuffer(raw, '<f4', count)
        elif t['dtype'] == 'F16':
            v = np.frombuffer(raw, '<f2', count).astype(F32)  # exact
        elif t['dtype'] == 'BF16':
            v = (np.frombuffer(raw, '<u2', count).astype(np.uint32)
                 << np.uint32(16)).view(F32)
        else:
            raise FormatError('%s: %s has dtype %s' % (path, name, t['dtype']))
        out[name] = v.astype(F32).reshape(shape)
    return out


def write_safetensors(path, tensors):
    """tensors: {name: float32 array}, written F32 in name order."""
    header, off, blobs = {}, 0, []
    for name in sorted(tensors):
        b = np.ascontiguousarray(tensors[name], '<f4').tobytes()
        header[name] = {'dtype': 'F32', 'shape': list(tensors[name].shape),
                        'data_offsets': [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


HF_SUFFIX = {'ln_1.weight': 'ln_1.g', 'ln_1.bias': 'ln_1.b',
             'attn.c_attn.weight': 'attn.c_attn.w',
             'attn.c_attn.bias': 'attn.c_attn.b',
             'attn.c_proj.weight': 'attn.c_proj.w',
             'attn.c_proj.bias': 'attn.c_proj.b',
             'ln_2.weight': 'ln_2.g', 'ln_2.bias': 'ln_2.b',
             'mlp.c_fc.weight': 'mlp.c_fc.w', 'mlp.c_fc.bias': 'mlp.c_fc.b',
             'mlp.c_proj.weight': 'mlp.c_proj.w',
             'mlp.c_proj.bias': 'mlp.c_proj.b'}
BLOCK_ORDER = ['ln_1.g', 'ln_1.b', 'attn.c_attn.w', 'attn.c_attn.b',
               'attn.c_proj.w', 'attn.c_proj.b', 'ln_2.g', 'ln_2.b',
               'mlp.c_fc.w', 'mlp.c_fc.b', 'mlp.c_proj.w', 'mlp.c_proj.b']
MATRICES = ('attn.c_attn.w', 'attn.c_proj.w', 'mlp.c_fc.w', 'mlp.c_proj.w')


def read_hf(folder):
    """(config, {lockstep name: float32 array}) from an HF GPT-2 folder."""
    with open(os.path.join(folder, 'config.json')) as f:
        hc = json.load(f)
    cfg = dict(n_vocab=hc['vocab_size'], n_ctx=hc['n_positions'],
               n_embd=hc['n_embd'], n_head=hc['n_head'], n_layer=hc['n_layer'])
    if hc.get('layer_norm_epsilon', 1e-5) != 1e-5:
        raise FormatError('layer_norm_epsilon is not 1e-5')
    st = read_safetensors(os.path.join(folder, 'model.safetensors'))
    w = {}
    for name, v in st.items():
        if name == 'lm_head.weight':
            continue
        n = name[len('transformer.'):] if name.startswith('transformer.') else name
        if n in ('wte.weight', 'wpe.weight'):
            w[n[:3]] = v
        elif n.startswith('ln_f.'):
            w['ln_f.' + ('g' if n.endswith('weight') else 'b')] = v
        elif n.startswith('h.'):
            parts = n.split('.', 2)
            if parts[2] in HF_SUFFIX:
                w['h%s.%s' % (parts[1], HF_SUFFIX[parts[2]])] = v
    if 'lm_head.weight' in st and not np.array_equal(
            st['lm_head.weight'].view(np.uint32), w['wte'].view(np.uint32)):
        raise FormatError('lm_head.weight differs from wte')
    for name, shape in tensor_table(cfg):
        if name not in w or w[name].shape != tuple(shape):
            raise FormatError('%s: tensor %s missing or misshapen' % (folder, name))
        if not np.all(np.isfinite(w[name])):
            raise FormatError('%s: tensor %s not finite' % (folder, name))
    return cfg, w


def tensor_table(cfg):
    """[(name, shape)] in lockstep's payload order (docs/gpt2-format.md)."""
    V, T, C = cfg['n_vocab'], cfg['n_ctx'], cfg['n_embd']
    shapes = {'ln_1.g': [C], 'ln_1.b': [C], 'attn.c_attn.w': [C, 3 * C],
              'attn.c_attn.b': [3 * C], 'attn.c_proj.w': [C, C],
              'attn.c_proj.b': [C], 'ln_2.g': [C], 'ln_2.b': [C],
              'mlp.c_fc.w': [C, 4 * C], 'mlp.c_fc.b': [4 * C],
              'mlp.c_proj.w': [4 * C, C], 'mlp.c_proj.b': [C]}
    out = [('wte', [V, C]), ('wpe', [T, C])]
    for layer in range(cfg['n_layer']):
        out += [('h%d.%s' % (layer, s), shapes[s]) for s in BLOCK_ORDER]
    return out + [('ln_f.g', [C]), ('ln_f.b', [C])]


# ---------------------------------------------------------------------------
# §7.1, §7.2: bfloat16 scales and group quantization
# ---------------------------------------------------------------------------

def bf16_bits(v):
    """§7.1: RNE on the bits of finite v >= 0."""
    u = np.asarray(v, F32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def widen(b):
    return (np.asarray(b).astype(np.uint32) << np.uint32(16)).view(F32)


def levels(v, s):
    """§7.2 steps 4-5: v [..., 64], s [..., 1] (binary32) -> int8 levels."""
    zero = s == 0
    safe = np.where(zero, F32(1), s)
    r = v / safe
    r = np.minimum(np.maximum(r, F32(-127)), F32(127))
    q = (r + RNE_MAGIC) - RNE_MAGIC
    if MUTATION == 'ties-away':
        q = np.where(r >= 0, np.floor(r + F32(0.5)), np.ceil(r - F32(0.5))).astype(F32)
    q = np.where(zero, F32(0), q)
    return q.astype(np.int8)


def quantize_weights(W):
    """W [K, N] binary32 -> (q int8 [K, N], scale bits uint16 [N, G])."""
    K, N = W.shape
    G = K // GROUP
    v = W.T.reshape(N, G, GROUP)                 # [o, g, i]
    m = np.abs(v).max(axis=2)                    # §7.2 step 2 (order-free)
    sbits = bf16_bits(m / F32(127))              # step 3, weights
    s = widen(sbits)
    if MUTATION == 'f32-weight-scales':
        s = m / F32(127)
    q = levels(v, s[..., None])                  # [o, g, i]
    return q.reshape(N, K).T.copy(), sbits


def quantize_activations(x, per_row=False):
    """x [R, K] binary32 -> (levels as float32 [R, K], scales [R, G],
    bad [R]: a position whose input has a non-finite value, §7.2 step 1).
    per_row: one scale per position (max over all K), the quality
    experiment's variant, not the spec."""
    R, K = x.shape
    G = K // GROUP
    bad = ~np.all(np.isfinite(x), axis=1)
    xs = np.where(bad[:, None], F32(0), x)
    v = xs.reshape(R, G, GROUP)
    if per_row:
        m = np.repeat(np.abs(xs).max(axis=1)[:, None], G, axis=1)
    else:
        m = np.abs(v).max(axis=2)
    s = m / F32(127)                             # activations: binary32
    q = levels(v, s[..., None]).reshape(R, K).astype(F32)
    return q, s, bad


# ---------------------------------------------------------------------------
# §7.6: packing and unpacking a quantized matrix
# ---------------------------------------------------------------------------

def pack(q, sbits):
    """q int8 [K, N], sbits uint16 [N, G] -> bytes (§7.6)."""
    K, N = q.shape
    G = K // GROUP
    parts = []
    for c0 in range(0, N, 64 * 256):             # 256 panels at a time
        c1 = min(N, c0 + 64 * 256)
        full = (c1 - c0) // 64
        if full:
            cols = q[:, c0:c0 + 64 * full]      # [K, P*64]
            # k = 64g + 4a + b, column 64p + j -> [p, g, a, j, b]
            lv = cols.reshape(G, 16, 4, full, 64).transpose(3, 0, 1, 4, 2)
            lv = lv.reshape(full, G, 64 * 64).view(np.uint8)
            sc = sbits[c0:c0 + 64 * full].reshape(full, 64, G).transpose(0, 2, 1)
            sc = np.ascontiguousarray(sc).astype('<u2').view(np.uint8)
            parts.append(np.concatenate([lv, sc], axis=2).tobytes())
        rest = c1 - (c0 + 64 * full)
        if rest:
            pw, cs = rest, c0 + 64 * full
            lv = q[:, cs:cs + pw].reshape(G, 16, 4, pw).transpose(0, 1, 3, 2)
            lv = lv.reshape(G, 64 * pw).view(np.uint8)
            sc = np.ascontiguousarray(sbits[cs:cs + pw].T).astype('<u2').view(np.uint8)
            parts.append(np.concatenate([lv, sc], axis=1).tobytes())
    return b''.join(parts)


def unpack(buf, K, N):
    """Inverse of pack: bytes -> (q int8 [K, N], sbits uint16 [N, G])."""
    G = K // GROUP
    if len(buf) != N * (K + 2 * G):
        raise FormatError('quantized matrix [%d, %d]: %d bytes' % (K, N, len(buf)))
    raw = np.frombuffer(buf, np.uint8)
    q = np.empty((K, N), np.int8)
    sbits = np.empty((N, G), np.uint16)
    full = N // 64
    if full:
        blk = raw[:full * 64 * (K + 2 * G)].reshape(full, G, 66 * 64)
        lv = blk[:, :, :64 * 64].view(np.int8).reshape(full, G, 16, 64, 4)
        q[:, :full * 64] = lv.transpose(1, 2, 4, 0, 3).reshape(K, full * 64)
        sc = np.ascontiguousarray(blk[:, :, 64 * 64:]).view('<u2')  # [p, g, j]
        sbits[:full * 64] = sc.transpose(0, 2, 1).reshape(full * 64, G)
    pw = N - full * 64
    if pw:
        blk = raw[full * 64 * (K + 2 * G):].reshape(G, 66 * pw)
        lv = blk[:, :64 * pw].view(np.int8).reshape(G, 16, pw, 4)
        q[:, full * 64:] = lv.transpose(0, 1, 3, 2).reshape(K, pw)
        sbits[full * 64:] = np.ascontiguousarray(blk[:, 64 * pw:]).view('<u2').T
    return q, sbits


def q8_bytes(K, N):
    return N * (K + 2 * (K // GROUP))


# ---------------------------------------------------------------------------
# The int8 model: from binary32 weights (§7.2) or from a lockstep file
# ---------------------------------------------------------------------------

class Model:
    """cfg; mats[name] = (q int8 [K, N], sbits [N, G]); f32[name]."""

    def __init__(self, cfg, mats, f32):
        self.cfg, self.mats, self.f32 = cfg, mats, f32
        self._qf = {}
        self._sw = {}

    def qf(self, name):
        """Levels as binary32 (exact) split by group, cached."""
        if name not in self._qf:
            q = self.mats[name][0]
            K = q.shape[0]
            self._qf[name] = [q[g * GROUP:(g + 1) * GROUP].astype(F32)
                              for g in range(K // GROUP)]
            self._sw[name] = widen(self.mats[name][1])  # [N, G]
        return self._qf[name], self._sw[name]


def quantize_model(cfg, w):
    mats, f32 = {}, {}
    for name, shape in tensor_table(cfg):
        if name == 'wte' or name == 'wpe':
            mats[name] = quantize_weights(np.ascontiguousarray(w[name].T))
        elif name.split('.', 1)[-1] in MATRICES:
            mats[name] = quantize_weights(w[name])
        else:
            f32[name] = w[name]
    return Model(cfg, mats, f32)


def expected_entries(cfg):
    """[(name, shape, dtype, offset, bytes)] of an int8 file, from
    docs/int8.md's payload table: every tensor on 64 bytes."""
    out, off = [], 0
    for name, shape in tensor_table(cfg):
        if name in ('wte', 'wpe'):
            dt, nb = 'q8g64', q8_bytes(shape[1], shape[0])
        elif name.split('.', 1)[-1] in MATRICES:
            dt, nb = 'q8g64', q8_bytes(shape[0], shape[1])
        else:
            dt, nb = 'f32', 4 * int(np.prod(shape))
        out.append((name, shape, dt, off, nb))
        off += nb + (-nb % 64)
    return out, off


def payload_bytes(model):
    """The payload this implementation would write (§7.6, docs/int8.md)."""
    entries, total = expected_entries(model.cfg)
    buf = bytearray(total)
    for name, shape, dt, off, nb in entries:
        if dt == 'q8g64':
            b = pack(*model.mats[name])
        else:
            b = np.ascontiguousarray(model.f32[name], '<f4').tobytes()
        assert len(b) == nb, name
        buf[off:off + nb] = b
    return bytes(buf)


def read_q8_file(path):
    """(Model, header, payload bytes) from a lockstep int8 file, with the
    container's and the format's checks."""
    with open(path, 'rb') as f:
        data = f.read()

    def bad(msg):
        raise FormatError('%s: %s' % (path, msg))

    if len(data) < 56 or data[:8] != MAGIC:
        bad('not a lockstep file')
    version, H = struct.unpack('<II', data[8:16])
    (P,) = struct.unpack('<Q', data[16:24])
    if version != 2:
        bad('format version %d (an int8 file is version 2)' % version)
    if 56 + H + P != len(data) or (56 + H) % 64:
        bad('H=%d, P=%d do not fit the file (%d bytes)' % (H, P, len(data)))
    payload = data[56 + H:]
    if hashlib.sha256(payload).digest() != data[24:56]:
        bad('payload SHA-256 differs from the stored one')
    h = json.loads(data[56:56 + H].decode('utf-8'))
    if (h.get('model'), h.get('dtype'), h.get('layout')) != ('gpt2', 'q8g64', 'q8panel64'):
        bad('model/dtype/layout %r' % [h.get(k) for k in ('model', 'dtype', 'layout')])
    ps = h.get('plain_sha256', '')
    if len(ps) != 64 or any(ch not in '0123456789abcdef' for ch in ps):
        bad('plain_sha256 is not 64 lowercase hex digits')
    hc = h['config']
    cfg = {k: hc[k] for k in ('n_vocab', 'n_ctx', 'n_embd', 'n_head', 'n_layer')}
    if cfg['n_embd'] % 64 or cfg['n_embd'] % cfg['n_head']:
        bad('n_embd %d' % cfg['n_embd'])
    entries, total = expected_entries(cfg)
    if h['words'] != total or P != total:
        bad('words %d, payload %d, expected %d' % (h['words'], P, total))
    if len(h['tensors']) != len(entries):
        bad('%d tensors, expected %d' % (len(h['tensors']), len(entries)))
    mats, f32 = {}, {}
    for t, (name, shape, dt, off, nb) in zip(h['tensors'], entries):
        got = (t['name'], list(t['shape']), t['dtype'], t['offset'], t['bytes'])
        if got != (name, shape, dt, off, nb):
            bad('tensor entry %r, expected %r' % (got, (name, shape, dt, off, nb)))
        if any(payload[off + nb:off + nb + (-nb % 64)]):
            bad('%s: padding not zero' % name)
        buf = payload[off:off + nb]
        if dt == 'f32':
            v = np.frombuffer(buf, '<f4').astype(F32).reshape(shape)
            if not np.all(np.isfinite(v)):
                bad('%s: not finite' % name)
            f32[name] = v
        else:
            K, N = (shape[1], shape[0]) if name in ('wte', 'wpe') else shape
            q, sb = unpack(buf, K, N)
            s = widen(sb)
            if np.any(q == -128) or not np.all(np.isfinite(s)) or np.any(s < 0):
                bad('%s: a -128 level or a negative or non-finite scale' % name)
            mats[name] = (q, sb)
    return Model(cfg, mats, f32), h, payload


# ---------------------------------------------------------------------------
# §2, §6, §7 on binary32 arrays
# ---------------------------------------------------------------------------

def blocked_sum(terms, K):
    """§2.1 over K terms: terms(k0, k1) gives the terms k0..k1-1 stacked on
    the last axis. Blocked (16 blocks, then the halving tree) when K is a
    multiple of 16, else sequential; both from +0.0."""
    if K % 16 == 0 and not (MUTATION == 'sequential-layernorm' and blocked_sum.ln):
        L = K // 16
        t = terms(0, K)
        t = t.reshape(t.shape[:-1] + (16, L))
        s = np.zeros(t.shape[:-1], F32)
        for k in range(L):
            s = s + t[..., k]
        for h in (8, 4, 2, 1):
            s = s[..., :h] + s[..., h:2 * h]
        return s[..., 0]
    t = terms(0, K)
    s = np.zeros(t.shape[:-1], F32)
    for k in range(K):
        s = s + t[..., k]
    return s


blocked_sum.ln = False


def layernorm(x, g, b):
    """§2.3 on rows x [R, C]."""
    C = x.shape[-1]
    n = F32(C)
    blocked_sum.ln = True
    mean = blocked_sum(lambda a, z: x[..., a:z], C) / n
    d = x - mean[..., None]
    var = blocked_sum(lambda a, z: d[..., a:z] * d[..., a:z], C) / n
    blocked_sum.ln = False
    r = F32(1) / np.sqrt(var + EPS)
    return ((d * r[..., None]) * g) + b


def q8_matvec(model, name, x, bias, per_row=False, chunk=None):
    """§7.3 for rows x [R, K]: y [R, N]."""
    qw, sw = model.qf(name)
    qx, sx, bad = quantize_activations(x, per_row)
    R = x.shape[0]
    N = qw[0].shape[1]
    out = np.empty((R, N), F32)
    chunk = chunk or N
    for c0 in range(0, N, chunk):
        c1 = min(N, c0 + chunk)
        acc = np.zeros((R, c1 - c0), F32)        # step 3: from +0.0
        if MUTATION == 'bias-first' and bias is not None:
            acc = acc + bias[c0:c1]
        for g in range(len(qw)):
            isum = qx[:, g * GROUP:(g + 1) * GROUP] @ qw[g][:, c0:c1]  # exact
            if MUTATION == 'scale-order':
                acc = acc + (isum * sx[:, g, None]) * sw[None, c0:c1, g]
                continue
            scale = sx[:, g, None] * sw[None, c0:c1, g]               # step 2
            acc = acc + isum * scale
        if bias is not None and MUTATION != 'bias-first':
            acc = acc + bias[c0:c1]                                    # step 4
        out[:, c0:c1] = acc
    out[bad] = F32(np.nan)
    return out


def embed(model, tokens, positions):
    """§7.4: dequantized rows, two exact products and one sum."""
    C = model.cfg['n_embd']
    g = np.arange(C) // GROUP
    qte, ste = model.mats['wte']
    qpe, spe = model.mats['wpe']
    a = qte[:, tokens].T.astype(F32) * widen(ste[tokens][:, g])
    b = qpe[:, positions].T.astype(F32) * widen(spe[positions][:, g])
    return a + b


def attention(q, kc, vc, pos, H):
    """§6 attention of rows q [R, C] against cached keys/values kc, vc
    [R, J, C] (each row's own sequence), keys j <= pos[r]."""
    R, C = q.shape
    D = C // H
    J = kc.shape[1]
    qh = q.reshape(R, H, 1, D)
    kh = kc.reshape(R, J, H, D).transpose(0, 2, 1, 3)       # [R, H, J, D]
    vh = vc.reshape(R, J, H, D).transpose(0, 2, 1, 3)
    div = np.sqrt(F32(D))                                    # 8 for D = 64
    s = blocked_sum(lambda a, z: qh[..., a:z] * kh[..., a:z], D) / div  # [R,H,J]
    live = np.arange(J)[None, :] <= pos[:, None]             # [R, J]
    # §2.4 softmax over j = 0 .. pos, in order
    m = s[:, :, 0].copy()
    for j in range(1, J):
        m = np.where(live[:, None, j] & (s[:, :, j] > m), s[:, :, j], m)
    with np.errstate(over='ignore', invalid='ignore'):
        e = arith_numpy.exp(arith_numpy.F32, s - m[..., None])
    S = np.zeros((R, H), F32)
    for j in range(J):
        S = np.where(live[:, None, j], S + e[:, :, j], S)
    p = e / S[..., None]
    # §2.5 weighted sum, j in order
    out = np.zeros((R, H, D), F32)
    for j in range(J):
        out = np.where(live[:, None, j, None], out + p[:, :, j, None] * vh[:, :, j], out)
    return out.reshape(R, C)


def forward(model, tokens, seqs, pos, cache, per_row=False, want_logits=None):
    """Rows r: token tokens[r] of sequence seqs[r] at position pos[r]. The
    rows of one call must cover every position of their sequence that is
    not yet in the cache. cache: float32 [B, T, L, 2C] (lockstep's row
    layout per position: layer, keys, values), updated in place.
    Returns logits [R, V] (rows not in want_logits are left out)."""
    cfg = model.cfg
    C, H, L = cfg['n_embd'], cfg['n_head'], cfg['n_layer']
    f = model.f32
    tokens = np.asarray(tokens)
    seqs = np.asarray(seqs)
    pos = np.asarray(pos)
    J = int(pos.max()) + 1
    x = embed(model, tokens, pos)
    with np.errstate(over='ignore', invalid='ignore'):
        for layer in range(L):
            p = 'h%d.' % layer
            h = layernorm(x, f[p + 'ln_1.g'], f[p + 'ln_1.b'])
            qkv = q8_matvec(model, p + 'attn.c_attn.w', h, f[p + 'attn.c_attn.b'], per_row)
            cache[seqs, pos, layer, :] = qkv[:, C:]           # keys | values
            kv = cache[seqs, :J, layer, :]                    # [R, J, 2C]
            a = attention(qkv[:, :C], kv[..., :C], kv[..., C:], pos, H)
            x = x + q8_matvec(model, p + 'attn.c_proj.w', a, f[p + 'attn.c_proj.b'], per_row)
            h = layernorm(x, f[p + 'ln_2.g'], f[p + 'ln_2.b'])
            u = q8_matvec(model, p + 'mlp.c_fc.w', h, f[p + 'mlp.c_fc.b'], per_row)
            u = arith_numpy.gelu(arith_numpy.F32, u)
            x = x + q8_matvec(model, p + 'mlp.c_proj.w', u, f[p + 'mlp.c_proj.b'], per_row)
        if want_logits is not None:
            x = x[want_logits]
        h = layernorm(x, f['ln_f.g'], f['ln_f.b'])
        return q8_matvec(model, 'wte', h, None, per_row, chunk=8192)


def full_pass(model, tokens, per_row=False):
    """Every position's logits [n, V] and the cache rows [n, L, 2C]."""
    n = len(tokens)
    cfg = model.cfg
    cache = np.zeros((1, n, cfg['n_layer'], 2 * cfg['n_embd']), F32)
    logits = forward(model, tokens, np.zeros(n, int), np.arange(n), cache, per_row)
    return logits, cache[0]


# ---------------------------------------------------------------------------
# lockstep's side
# ---------------------------------------------------------------------------

def run(cmd):
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError('failed (%d): %s\n%s' % (
            r.returncode, ' '.join(cmd), r.stderr.decode(errors='replace')))
    return r.stdout


def lockstep_logits(lockstep, model_path, tokens, vocab, out, backend='cpu'):
    run([lockstep, 'logits', '--model', model_path, '--backend', backend,
         '--tokens', ','.join(map(str, tokens)), '--all-positions', '--out', out])
    a = np.fromfile(out, '<f4')
    os.unlink(out)
    if a.size != len(tokens) * vocab:
        raise RuntimeError('logits: %d floats, expected %d x %d' % (a.size, len(tokens), vocab))
    return a.reshape(len(tokens), vocab)


class CoreLib:
    """The C core's ls_gpt2_q8_prefill through ctypes (for the cache)."""

    class Config(ctypes.Structure):
        _fields_ = [(k, ctypes.c_int32) for k in
                    ('n_vocab', 'n_ctx', 'n_embd', 'n_head', 'n_layer')]

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        L = self.lib
        L.ls_gpt2_cache_row_floats.restype = ctypes.c_size_t
        L.ls_gpt2_cache_row_floats.argtypes = [ctypes.c_void_p]
        L.ls_gpt2_infer_scratch_floats.restype = ctypes.c_size_t
        L.ls_gpt2_infer_scratch_floats.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.ls_gpt2_q8_bytes.restype = ctypes.c_size_t
        L.ls_gpt2_q8_bytes.argtypes = [ctypes.c_void_p]
        L.ls_gpt2_q8_prefill.restype = ctypes.c_int
        L.ls_gpt2_q8_prefill.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
            ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int,
            ctypes.c_int32, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
            ctypes.c_void_p]

    def prefill(self, cfg, payload, tokens, all_positions):
        c = self.Config(**cfg)
        cp = ctypes.byref(c)
        n = len(tokens)
        row = self.lib.ls_gpt2_cache_row_floats(cp)
        if self.lib.ls_gpt2_q8_bytes(cp) != len(payload):
            raise RuntimeError('ls_gpt2_q8_bytes %d != payload %d' % (
                self.lib.ls_gpt2_q8_bytes(cp), len(payload)))
        w = np.frombuffer(payload, np.uint8)  # 64-byte aligned copy below
        wa = np.empty(len(payload) + 64, np.uint8)
        o = (-wa.ctypes.data) % 64
        wa[o:o + len(payload)] = w
        wa = wa[o:o + len(payload)]
        cache = np.zeros(n * row, F32)
        scratch = np.zeros(self.lib.ls_gpt2_infer_scratch_floats(cp, n), F32)
        logits = np.zeros((n if all_positions else 1) * cfg['n_vocab'], F32)
        toks = np.asarray(tokens, np.int32)
        st = self.lib.ls_gpt2_q8_prefill(
            cp, wa.ctypes.data, len(payload), cache.ctypes.data, cache.size, 0,
            toks.ctypes.data, n, 0, int(all_positions), scratch.ctypes.data,
            scratch.size, logits.ctypes.data)
        if st != 0:
            raise RuntimeError('ls_gpt2_q8_prefill returned status %d' % st)
        return logits, cache.reshape(n, cfg['n_layer'], 2 * cfg['n_embd'])


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def bytes_equal(self, what, ours, theirs):
        if ours == theirs:
            self.passed += 1
            print('  ok   %s: %d bytes equal' % (what, len(ours)))
            return True
        self.failed += 1
        n = min(len(ours), len(theirs))
        a = np.frombuffer(ours[:n], np.uint8)
        b = np.frombuffer(theirs[:n], np.uint8)
        d = np.flatnonzero(a != b)
        i = int(d[0]) if d.size else n
        print('  FAIL %s: %d vs %d bytes, first difference at byte %d: ours %s, lockstep %s'
              % (what, len(ours), len(theirs), i,
                 ours[i:i + 1].hex() or '-', theirs[i:i + 1].hex() or '-'))
        return False

    def floats_equal(self, what, ours, theirs):
        a = np.ascontiguousarray(ours, F32).ravel().view(np.uint32)
        b = np.ascontiguousarray(theirs, F32).ravel().view(np.uint32)
        if a.size == b.size and np.array_equal(a, b):
            self.passed += 1
            print('  ok   %s: %d words equal bit for bit' % (what, a.size))
            return True
        self.failed += 1
        if a.size != b.size:
            print('  FAIL %s: %d words vs %d' % (what, a.size, b.size))
            return False
        d = np.flatnonzero(a != b)
        i = int(d[0])
        idx = np.unravel_index(i, np.shape(ours))
        print('  FAIL %s: %d of %d words differ; first at index %s (flat %d): '
              'ours 0x%08x (%s), lockstep 0x%08x (%s)'
              % (what, d.size, a.size, tuple(int(v) for v in idx), i, a[i],
                 float(a[i:i + 1].view(F32)[0]).hex(), b[i],
                 float(b[i:i + 1].view(F32)[0]).hex()))
        return False


# ---------------------------------------------------------------------------
# A random 124M (seeded), written as an HF folder by this script
# ---------------------------------------------------------------------------

CFG_124M = dict(n_vocab=50257, n_ctx=1024, n_embd=768, n_head=12, n_layer=12)


def random_weights(cfg, seed):
    """Seeded GPT-2-like weights (normal, matrices std 0.02-0.06), with a few
    edge groups planted: an all-zero weight group, a group whose scale is
    subnormal, a group of exact ties after scaling."""
    rng = np.random.Generator(np.random.PCG64(seed))
    w = {}
    stds = {'attn.c_attn.w': 0.06, 'attn.c_proj.w': 0.03, 'mlp.c_fc.w': 0.04,
            'mlp.c_proj.w': 0.02}
    for name, shape in tensor_table(cfg):
        short = name.split('.', 1)[-1]
        if name == 'wte':
            v = rng.standard_normal(shape, F32) * F32(0.1)
        elif name == 'wpe':
            v = rng.standard_normal(shape, F32) * F32(0.03)
        elif short in stds:
            v = rng.standard_normal(shape, F32) * F32(stds[short])
        elif short.endswith('.g'):
            v = F32(1) + rng.standard_normal(shape, F32) * F32(0.1)
        else:
            v = rng.standard_normal(shape, F32) * F32(0.05)
        w[name] = v.astype(F32)
    w['h0.mlp.c_fc.w'][64:128, 5] = 0                       # scale 0
    w['h1.attn.c_attn.w'][0:64, 7] = F32(1e-40) * np.arange(1, 65, dtype=F32) / 64  # subnormal
    # m = 15.875 * 2^-6, so the scale is 2^-9 exactly and v / s = (i - 32) / 2:
    # every odd i is a tie (rounded to even).
    ties = (np.arange(64, dtype=F32) - F32(32)) * F32(2.0 ** -10)
    ties[0] = F32(15.875 * 2.0 ** -6)
    w['h2.mlp.c_proj.w'][128:192, 3] = ties
    return w


def write_hf(folder, cfg, w):
    os.makedirs(folder, exist_ok=True)
    hc = {'architectures': ['GPT2LMHeadModel'], 'model_type': 'gpt2',
          'activation_function': 'gelu_new', 'layer_norm_epsilon': 1e-05,
          'vocab_size': cfg['n_vocab'], 'n_positions': cfg['n_ctx'],
          'n_embd': cfg['n_embd'], 'n_head': cfg['n_head'], 'n_layer': cfg['n_layer'],
          'tie_word_embeddings': True}
    with open(os.path.join(folder, 'config.json'), 'w') as f:
        json.dump(hc, f, indent=1)
    names = {'wte': 'transformer.wte.weight', 'wpe': 'transformer.wpe.weight',
             'ln_f.g': 'transformer.ln_f.weight', 'ln_f.b': 'transformer.ln_f.bias'}
    inv = {v: k for k, v in HF_SUFFIX.items()}
    st = {}
    for name, v in w.items():
        if name in names:
            st[names[name]] = v
        else:
            layer, rest = name.split('.', 1)
            st['transformer.h.%s.%s' % (layer[1:], inv[rest])] = v
    write_safetensors(os.path.join(folder, 'model.safetensors'), st)


# ---------------------------------------------------------------------------

def check_model(label, hf, lockstep, core, n, seed, checks, tmp):
    t0 = time.time()
    cfg, w = read_hf(hf)
    n = min(n, cfg['n_ctx'])
    print('%s: %s, V %d, T %d, C %d, %d heads, %d layers; %d positions'
          % (label, hf, cfg['n_vocab'], cfg['n_ctx'], cfg['n_embd'], cfg['n_head'],
             cfg['n_layer'], n))
    ours = quantize_model(cfg, w)
    del w
    q8 = os.path.join(tmp, label + '.q8.lockstep')
    run([lockstep, 'convert', hf, q8, '--quant', 'int8'])
    theirs, header, payload = read_q8_file(q8)
    if theirs.cfg != cfg:
        checks.failed += 1
        print('  FAIL config %r, expected %r' % (theirs.cfg, cfg))
        return
    # The payload: this script's quantization and packing against lockstep's.
    entries, _ = expected_entries(cfg)
    mine = payload_bytes(ours)
    if not checks.bytes_equal('int8 payload (%d tensors)' % len(entries), mine, payload):
        for name, shape, dt, off, nb in entries:
            if mine[off:off + nb] != payload[off:off + nb]:
                checks.bytes_equal('  tensor ' + name, mine[off:off + nb], payload[off:off + nb])
                break
    # unpack(pack(x)) is the identity (our reader against our writer).
    same = all(np.array_equal(ours.mats[k][0], theirs.mats[k][0]) and
               np.array_equal(ours.mats[k][1], theirs.mats[k][1]) for k in ours.mats)
    if same:
        checks.passed += 1
        print('  ok   levels and scales read back from the file equal this quantization')
    else:
        checks.failed += 1
        print('  FAIL levels and scales read back from the file differ from this quantization')
    t1 = time.time()
    rng = np.random.Generator(np.random.PCG64(seed))
    tokens = rng.integers(0, cfg['n_vocab'], n).tolist()
    # lockstep's two runs (the CLI's logits, the core's cache) proceed while
    # numpy computes: each is one thread, and the bits do not depend on it.
    out = os.path.join(tmp, label + '.logits.f32')
    cli = subprocess.Popen(
        [lockstep, 'logits', '--model', q8, '--backend', 'cpu', '--threads', '1',
         '--tokens', ','.join(map(str, tokens)), '--all-positions', '--out', out],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    core_result = {}
    if core is not None:
        def core_run():
            t = time.time()
            try:
                core_result['v'] = core.prefill(cfg, payload, tokens, all_positions=False)
            except RuntimeError as e:
                core_result['e'] = e
            core_result['t'] = time.time() - t
        th = threading.Thread(target=core_run)
        th.start()
    # The forward runs on the weights read from lockstep's file.
    logits, cache = full_pass(theirs, tokens)
    t2 = time.time()
    err = cli.communicate()[1]
    t3 = time.time()
    if cli.returncode != 0:
        checks.failed += 1
        print('  FAIL lockstep logits exited %d: %s' % (cli.returncode, err.decode(errors='replace')))
    else:
        ref = np.fromfile(out, '<f4')
        ref = ref.reshape(-1, cfg['n_vocab']) if ref.size == n * cfg['n_vocab'] else ref
        checks.floats_equal('logits of %d contexts (lockstep logits --all-positions)' % n,
                            logits, ref)
    if not np.all(np.isfinite(logits)):
        checks.failed += 1
        print('  FAIL non-finite logits')
    if core is not None:
        th.join()
        if 'e' in core_result:
            checks.failed += 1
            print('  FAIL %s' % core_result['e'])
        else:
            clog, ccache = core_result['v']
            checks.floats_equal('KV cache, %d positions x %d layers x 2 x %d (ls_gpt2_q8_prefill)'
                                % (n, cfg['n_layer'], cfg['n_embd']), cache, ccache)
            checks.floats_equal('last-position logits (ls_gpt2_q8_prefill)', logits[-1], clog)
    print('  %s: read and quantize %.1f s, numpy pass %.1f s; lockstep logits done %.1f s '
          'after it%s' % (label, t1 - t0, t2 - t1, t3 - t2,
                          ', core prefill %.1f s' % core_result['t'] if 't' in core_result else ''))


def reader_checks(q8, checks, tmp):
    """This script's reader refuses damaged int8 files (the digest fixed
    up where the damage is behind it)."""
    with open(q8, 'rb') as f:
        good = f.read()
    (H,) = struct.unpack('<I', good[12:16])
    start = 56 + H
    entries = json.loads(good[56:start].decode())['tensors']
    wte = entries[0]

    def redigest(b):
        b = bytearray(b)
        b[24:56] = hashlib.sha256(bytes(b[start:])).digest()
        return bytes(b)

    def level(b, value):  # the first level of wpe
        b = bytearray(b)
        b[start + entries[1]['offset']] = value
        return bytes(b)

    cases = [('truncated', good[:-1]),
             ('a flipped payload bit', good[:start + 5] + bytes([good[start + 5] ^ 1]) +
              good[start + 6:]),
             ('a level -128', redigest(level(good, 0x80))),
             ('version 1', good[:8] + struct.pack('<I', 1) + good[12:])]
    pad = wte['offset'] + wte['bytes']
    if pad % 64:
        b = bytearray(good)
        b[start + pad] = 1
        cases.append(('non-zero padding after wte', redigest(bytes(b))))
    path = os.path.join(tmp, 'damaged.lockstep')
    print('damaged int8 files (each must be refused by this reader):')
    for what, data in cases:
        with open(path, 'wb') as f:
            f.write(data)
        try:
            read_q8_file(path)
        except FormatError as e:
            checks.passed += 1
            print('  ok   %s: %s' % (what, str(e).split(': ', 1)[1]))
        else:
            checks.failed += 1
            print('  FAIL %s: accepted' % what)


def mutation_checks(hf, lockstep, n, seed, checks, tmp):
    """Each MUTATIONS entry run against lockstep's logits (and payload):
    each must differ somewhere. A mutation the comparison cannot see fails."""
    global MUTATION
    cfg, w = read_hf(hf)
    n = min(n, cfg['n_ctx'])
    q8 = os.path.join(tmp, 'mutations.q8.lockstep')
    run([lockstep, 'convert', hf, q8, '--quant', 'int8'])
    _, _, payload = read_q8_file(q8)
    rng = np.random.Generator(np.random.PCG64(seed))
    tokens = rng.integers(0, cfg['n_vocab'], n).tolist()
    ref = lockstep_logits(lockstep, q8, tokens, cfg['n_vocab'], os.path.join(tmp, 'm.f32'))
    reader_checks(q8, checks, tmp)
    print('mutations on %s (each must be seen):' % hf)
    for name, what in MUTATIONS.items():
        MUTATION = name
        try:
            m = quantize_model(cfg, w)
            same_payload = payload_bytes(m) == payload
            logits, _ = full_pass(m, tokens)
        finally:
            MUTATION = None
        a = logits.view(np.uint32)
        b = ref.view(np.uint32)
        diff = int(np.count_nonzero(a != b))
        if diff or not same_payload:
            checks.passed += 1
            print('  ok   %s (%s): payload %s, %d of %d logits differ'
                  % (name, what, 'equal' if same_payload else 'differs', diff, a.size))
        else:
            checks.failed += 1
            print('  FAIL %s (%s): not seen' % (name, what))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--lockstep', required=True, help='the lockstep binary')
    ap.add_argument('--hf', action='append', default=[], help='HF GPT-2 folder (repeatable)')
    ap.add_argument('--random-124m', action='store_true',
                    help='also a seeded random 124M written by this script')
    ap.add_argument('--core-lib', help='shared library of core/ (for the KV cache)')
    ap.add_argument('--positions', type=int, default=128)
    ap.add_argument('--seed', type=int, default=20261201)
    ap.add_argument('--keep', help='keep the random 124M folder here')
    ap.add_argument('--mutations', action='store_true',
                    help='also show that deliberate deviations (MUTATIONS) are seen, '
                    'and that damaged int8 files are refused, on the first --hf model')
    args = ap.parse_args()
    checks = Checks()
    core = CoreLib(args.core_lib) if args.core_lib else None
    with tempfile.TemporaryDirectory(prefix='q8_numpy_') as tmp:
        for i, hf in enumerate(args.hf):
            check_model(os.path.basename(os.path.normpath(hf)), hf, args.lockstep,
                        core, args.positions, args.seed + i, checks, tmp)
        if args.mutations and args.hf:
            mutation_checks(args.hf[0], args.lockstep, args.positions, args.seed, checks, tmp)
        if args.random_124m:
            t = time.time()
            folder = args.keep or os.path.join(tmp, 'random-124M')
            if not os.path.exists(os.path.join(folder, 'model.safetensors')):
                write_hf(folder, CFG_124M, random_weights(CFG_124M, args.seed))
                print('random-124M: written in %.1f s' % (time.time() - t))
            check_model('random-124M', folder, args.lockstep, core, args.positions,
                        args.seed + 100, checks, tmp)
    print('%d passed, %d failed' % (checks.passed, checks.failed))
    return 1 if checks.failed else 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (FormatError, RuntimeError, OSError, ValueError, KeyError) as e:
        print('gpt2_q8_numpy: error: %s: %s' % (type(e).__name__, e), file=sys.stderr)
        sys.exit(2)
