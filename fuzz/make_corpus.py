#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses (docs/fuzzing.md) into
fuzz/corpus/<harness>/: small valid inputs of every format (and a few
near-misses), so that mutation starts from files the parsers accept.
Deterministic: run again, the same bytes. Standard library only."""
import hashlib
import json
import os
import random
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
rng = random.Random(20261201)


def put(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def floats(n, lo=-0.5, hi=0.5):
    return struct.pack("<%df" % n, *[rng.uniform(lo, hi) for _ in range(n)])


def compact(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


# ---- safetensors
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = compact(header)
    text += " " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text.encode() + data


put("fuzz_safetensors", "f32", safetensors(
    [("a", "F32", [2, 3], floats(6)), ("b", "F32", [3], floats(3))],
    {"format": "pt"}))
put("fuzz_safetensors", "f16_bf16", safetensors(
    [("h", "F16", [4], bytes(range(8))), ("g", "BF16", [2, 2], bytes(8)),
     ("s", "F32", [], floats(1)), ("e", "F32", [0, 5], b"")]))
put("fuzz_safetensors", "ints", safetensors(
    [("i", "I64", [2], bytes(16)), ("u", "U8", [3], b"abc"),
     ("b", "BOOL", [1], b"\x01"), ("c", "C64", [1], bytes(8))]))
put("fuzz_safetensors", "empty", safetensors([]))
put("fuzz_safetensors", "overlap", b"\x40\x00\x00\x00\x00\x00\x00\x00" +
    b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{}}'[:64])


# ---- the checkpoint container (docs/checkpoint-format.md)
def container(header, payload, version=1):
    text = compact(header)
    text += " " * (-(56 + len(text)) % 64)
    return (b"LOCKSTEP" + struct.pack("<IIQ", version, len(text), len(payload))
            + hashlib.sha256(payload).digest() + text.encode() + payload)


def gpt2_table(V, T, C, L):
    t, at = [], 0

    def add(name, shape):
        nonlocal at
        t.append({"name": name, "offset": at, "shape": shape})
        n = 1
        for d in shape:
            n *= d
        at += n
    add("wte", [V, C])
    add("wpe", [T, C])
    for l in range(L):
        h = "h%d." % l
        add(h + "ln_1.g", [C]); add(h + "ln_1.b", [C])
        add(h + "attn.c_attn.w", [C, 3 * C]); add(h + "attn.c_attn.b", [3 * C])
        add(h + "attn.c_proj.w", [C, C]); add(h + "attn.c_proj.b", [C])
        add(h + "ln_2.g", [C]); add(h + "ln_2.b", [C])
        add(h + "mlp.c_fc.w", [C, 4 * C]); add(h + "mlp.c_fc.b", [4 * C])
        add(h + "mlp.c_proj.w", [4 * C, C]); add(h + "mlp.c_proj.b", [C])
    add("ln_f.g", [C]); add("ln_f.b", [C])
    return t, at


def gpt2_packed(V, T, C, H, L, layout=None):
    table, words = gpt2_table(V, T, C, L)
    payload = floats(words)
    header = {"model": "gpt2", "dtype": "f32",
              "config": {"n_vocab": V, "n_ctx": T, "n_embd": C, "n_head": H,
                         "n_layer": L},
              "tensors": table, "words": words, "meta": {"note": "seed"}}
    if layout is None:
        return container(header, payload, 1)
    header["layout"] = layout
    # A plain file's plain_sha256 is its payload digest; panel64's is
    # another order's (any hex is accepted: it is a claim).
    header["plain_sha256"] = hashlib.sha256(payload).hexdigest()
    return container(header, payload, 2)


for name, args in {"v1_8x4x4x2x1": (8, 4, 4, 2, 1),
                   "v1_5x3x6x3x2": (5, 3, 6, 3, 2)}.items():
    put("fuzz_gpt2_packed", name, gpt2_packed(*args))
    put("fuzz_checkpoint", "gpt2_" + name, gpt2_packed(*args))
put("fuzz_gpt2_packed", "v2_panel64", gpt2_packed(8, 4, 4, 2, 1, "panel64"))
put("fuzz_gpt2_packed", "v2_plain", gpt2_packed(8, 4, 4, 2, 1, "plain"))
put("fuzz_checkpoint", "gpt2_v2_panel64", gpt2_packed(8, 4, 4, 2, 1, "panel64"))

tiny = {"model": "tiny", "dtype": "f64",
        "config": {"vocab": 256, "n_ctx": 4, "n_embd": 4, "n_head": 2,
                   "n_layer": 1, "n_ff": 8},
        "tensors": [{"name": "a", "shape": [2, 3], "offset": 0},
                    {"name": "b", "shape": [4], "offset": 6}],
        "words": 10, "meta": {"note": "seed", "list": [1, 2.5, None, True]}}
put("fuzz_checkpoint", "tiny_like_f64",
    container(tiny, struct.pack("<10d", *[rng.uniform(-1, 1) for _ in range(10)])))
tiny32 = dict(tiny, dtype="f32")
put("fuzz_checkpoint", "tiny_like_f32", container(tiny32, floats(10)))
put("fuzz_checkpoint", "empty_table", container(
    {"model": "x", "dtype": "f32", "config": {}, "tensors": [], "words": 0}, b""))

# ---- config.json
with open(os.path.join(ROOT, "tests", "data", "hf-gpt2-A", "config.json"),
          "rb") as f:
    put("fuzz_hf_config", "hf_fixture", f.read())
put("fuzz_hf_config", "minimal", compact(
    {"vocab_size": 50257, "n_embd": 768, "n_head": 12, "n_layer": 12,
     "n_positions": 1024}))
put("fuzz_hf_config", "all_keys", json.dumps(
    {"model_type": "gpt2", "vocab_size": 16, "n_embd": 8, "n_head": 2,
     "n_layer": 1, "n_positions": 4, "n_ctx": 4, "layer_norm_epsilon": 1e-5,
     "activation_function": "gelu_new", "n_inner": None,
     "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
     "add_cross_attention": False, "tie_word_embeddings": True}, indent=2))

# ---- tokenizer
texts = {
    "english": "First Citizen:\nBefore we proceed any further, hear me speak.",
    "spaces": "  a  b\t\tc\n\n\r\n  \u00a0x \u2028 y   ",
    "contractions": "I'm you're he'll we've they'd it's DON'T 'tis",
    "numbers": "1234567890 3.14159 -42 1e10 0x1f",
    "unicode": "na\u00efve caf\u00e9 \u65e5\u672c\u8a9e \U0001f600 \u0915\u093f",
    "endoftext": "a<|endoftext|>b<|endoftext|><|endoftext|>",
}
for k, v in texts.items():
    put("fuzz_tokenizer", k, v.encode("utf-8"))
put("fuzz_tokenizer", "invalid_utf8", b"ab\xff\xfe\xc3(\xe2\x82 \xf0\x9f\x98 z")

# ---- the differential: sizes, seed, tokens, then (index, bits) overrides
for i in range(8):
    head = bytes([rng.randrange(256) for _ in range(6)])
    seed = struct.pack("<Q", rng.getrandbits(64))
    toks = bytes([rng.randrange(256) for _ in range(12)])
    over = b"".join(struct.pack("<II", rng.getrandbits(32), b) for b in
                    [0x00000001, 0x7f7fffff, 0x80000000, 0x3f800000,
                     0x00800000, 0x4b800000][: i % 7])
    put("fuzz_gpt2_diff", "seed%d" % i, head + seed + toks + over)

print("corpus written to", OUT)
