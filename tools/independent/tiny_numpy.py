#!/usr/bin/python3
"""An independent recomputation of lockstep's tiny models in numpy.

This script shares no code with the C/C++ implementation. It reads (and
writes) lockstep checkpoints with its own parser, written from
docs/checkpoint-format.md, and runs the tiny model of docs/models.md in numpy
with numpy's own exp and tanh. It then asks the lockstep binary for the same
logits (`lockstep generate --weights F --tokens ... --bound B --logits
--json`) and compares:

    max |ours - lockstep| <= TOL * max(1, max |ours|),   TOL = 1e-12

The two sides cannot agree bit for bit: lockstep uses its own exp and tanh
and a fixed summation order (docs/arithmetic.md), numpy uses the platform
libm and BLAS. See docs/independent-check.md.

Checks:
  * the shipped checkpoints tiny4/tiny64/tiny128.lockstep in --models
    (skipped with a note if absent), ~20 random byte sequences each, bound 10;
  * random-weight models written by this script's own writer (weights
    uniform in [-3, 3]) for n_ctx 4, 64 and 128, random bounds in [0.5, 10]
    (half of them below 3, so clipping matters), and bound 0 (all weights
    clipped to zero: every logit must be exactly 0);
  * self-checks: the reader rejects malformed files, a written checkpoint
    reads back identically, and the float64 forward agrees with the same
    forward in np.longdouble.

The last line printed is exactly "N passed, M failed"; the exit status is
non-zero if any check failed. Only the standard library and numpy are used.
"""

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

TOL = 1e-12          # relative tolerance, see docs/independent-check.md
DEFAULT_SEED = 20240611
SHIPPED = (("tiny4", 4), ("tiny64", 64), ("tiny128", 128))
RANDOM_CTX = (4, 64, 128)
SEQS_PER_MODEL = 20
RANDOM_LOW, RANDOM_HIGH = -3.0, 3.0
CLI_TIMEOUT_S = 60

# Architecture constants (docs/models.md).
VOCAB, EMBD, HEADS, HEAD_DIM, FF = 256, 4, 2, 2, 8
MAX_CTX = 1024

MAGIC = b"LOCKSTEP"
VERSION = 1
FIXED_LEN = 56       # magic 8 + version 4 + H 4 + P 8 + sha256 32


class CheckpointError(Exception):
    pass


# --------------------------------------------------------------------------
# Tensor layout (docs/models.md "Tensor layout")
# --------------------------------------------------------------------------

def tiny_layout(n_ctx):
    """[(name, shape, offset)] in payload order, and the total word count."""
    shapes = [
        ("wte", [VOCAB, EMBD]),
        ("wpe", [n_ctx, EMBD]),
        ("h0.ln_1.g", [EMBD]),
        ("h0.ln_1.b", [EMBD]),
        ("h0.attn.c_attn.w", [EMBD, 3 * EMBD]),
        ("h0.attn.c_proj.w", [EMBD, EMBD]),
        ("h0.attn.c_proj.b", [EMBD]),
        ("h0.ln_2.g", [EMBD]),
        ("h0.ln_2.b", [EMBD]),
        ("h0.mlp.c_fc.w", [EMBD, FF]),
        ("h0.mlp.c_fc.b", [FF]),
        ("h0.mlp.c_proj.w", [FF, EMBD]),
        ("h0.mlp.c_proj.b", [EMBD]),
        ("ln_f.g", [EMBD]),
        ("ln_f.b", [EMBD]),
        ("head.w", [EMBD, VOCAB]),
        ("head.b", [VOCAB]),
    ]
    out, off = [], 0
    for name, shape in shapes:
        out.append((name, shape, off))
        off += int(np.prod(shape))
    assert off == 2472 + 4 * n_ctx
    return out, off


# --------------------------------------------------------------------------
# Reader and writer (docs/checkpoint-format.md)
# --------------------------------------------------------------------------

def parse_checkpoint(data, label="<bytes>"):
    """Parse checkpoint bytes; return (header dict, float64 weight array)."""
    def bad(msg):
        raise CheckpointError("%s: %s" % (label, msg))

    if len(data) < FIXED_LEN:
        bad("file shorter than %d bytes (%d)" % (FIXED_LEN, len(data)))
    if data[0:8] != MAGIC:
        bad("wrong magic %r" % data[0:8])
    (version,) = struct.unpack("<I", data[8:12])
    if version != VERSION:
        bad("unknown format version %d" % version)
    (h_len,) = struct.unpack("<I", data[12:16])
    (p_len,) = struct.unpack("<Q", data[16:24])
    stored_sha = data[24:56]
    if FIXED_LEN + h_len + p_len != len(data):
        bad("H=%d and P=%d do not add up to the file size %d"
            % (h_len, p_len, len(data)))
    if (FIXED_LEN + h_len) % 64 != 0:
        bad("payload does not start on a 64-byte boundary (56 + H = %d)"
            % (FIXED_LEN + h_len))
    payload = data[FIXED_LEN + h_len:]
    if hashlib.sha256(payload).digest() != stored_sha:
        bad("payload SHA-256 differs from the stored one")
    try:
        header = json.loads(data[FIXED_LEN:FIXED_LEN + h_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        bad("header is not JSON (%s)" % e)
    if not isinstance(header, dict):
        bad("header is not a JSON object")
    for field in ("model", "dtype", "config", "tensors", "words"):
        if field not in header:
            bad("header lacks field %r" % field)
    if header["model"] != "tiny":
        bad("model %r is not 'tiny'" % header["model"])
    if header["dtype"] != "f64":
        bad("dtype %r is not 'f64'" % header["dtype"])
    cfg = header["config"]
    if not isinstance(cfg, dict):
        bad("config is not an object")
    want = {"vocab": VOCAB, "n_embd": EMBD, "n_head": HEADS, "n_layer": 1,
            "n_ff": FF}
    for key in ("vocab", "n_ctx", "n_embd", "n_head", "n_layer", "n_ff"):
        if key not in cfg:
            bad("config lacks field %r" % key)
        if type(cfg[key]) is not int:
            bad("config.%s is not an integer" % key)
    for key, val in want.items():
        if cfg[key] != val:
            bad("config.%s is %r, expected %r" % (key, cfg[key], val))
    n_ctx = cfg["n_ctx"]
    if not 1 <= n_ctx <= MAX_CTX:
        bad("n_ctx %d outside [1, %d]" % (n_ctx, MAX_CTX))
    layout, total = tiny_layout(n_ctx)
    tensors = header["tensors"]
    if not isinstance(tensors, list) or len(tensors) != len(layout):
        bad("tensor table does not have %d entries" % len(layout))
    for i, (t, (name, shape, off)) in enumerate(zip(tensors, layout)):
        if (not isinstance(t, dict) or t.get("name") != name
                or t.get("shape") != shape or t.get("offset") != off
                or type(t.get("offset")) is not int):
            bad("tensor %d is %r, expected name %s shape %s offset %d"
                % (i, t, name, shape, off))
    if type(header["words"]) is not int or header["words"] != total:
        bad("words %r, expected %d" % (header["words"], total))
    if p_len != total * 8:
        bad("payload is %d bytes, expected %d" % (p_len, total * 8))
    w = np.frombuffer(payload, dtype="<f8").astype(np.float64)
    if not np.all(np.isfinite(w)):
        bad("non-finite weight")
    return header, w


def read_checkpoint(path):
    with open(path, "rb") as f:
        data = f.read()
    return parse_checkpoint(data, path)


def checkpoint_bytes(n_ctx, weights, meta=None):
    layout, total = tiny_layout(n_ctx)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (total,):
        raise ValueError("expected %d weights, got %s" % (total, weights.shape))
    header = {
        "model": "tiny",
        "dtype": "f64",
        "config": {"vocab": VOCAB, "n_ctx": n_ctx, "n_embd": EMBD,
                   "n_head": HEADS, "n_layer": 1, "n_ff": FF},
        "tensors": [{"name": n, "shape": s, "offset": o}
                    for n, s, o in layout],
        "words": total,
        "meta": meta or {},
    }
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-(FIXED_LEN + len(hj))) % 64)
    payload = weights.astype("<f8").tobytes()
    return (MAGIC + struct.pack("<I", VERSION) + struct.pack("<I", len(hj))
            + struct.pack("<Q", len(payload))
            + hashlib.sha256(payload).digest() + hj + payload)


def write_checkpoint(path, n_ctx, weights, meta=None):
    """Write PATH.tmp.<pid> completely, then rename it over PATH."""
    data = checkpoint_bytes(n_ctx, weights, meta)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# The forward pass (docs/models.md), in any numpy float dtype
# --------------------------------------------------------------------------

def _const(dtype, text):
    """A decimal constant rounded once, to the nearest `dtype` value."""
    return dtype(text) if dtype == np.longdouble else dtype(float(text))


def tiny_forward(weights, n_ctx, tokens, bound, dtype=np.float64):
    """The 256 logits of the last position, computed in `dtype`."""
    layout, total = tiny_layout(n_ctx)
    weights = np.asarray(weights, dtype=np.float64)
    assert weights.shape == (total,)
    tokens = np.asarray(tokens, dtype=np.int64)
    n = len(tokens)
    assert 1 <= n <= n_ctx and np.all((tokens >= 0) & (tokens < VOCAB))
    assert 0 <= bound <= 10

    b = dtype(bound)
    w = np.clip(weights.astype(dtype), -b, b)
    p = {name: w[off:off + int(np.prod(shape))].reshape(shape)
         for name, shape, off in layout}

    eps = _const(dtype, "1e-5")
    half = dtype(0.5)
    one = dtype(1)
    pi = np.arccos(dtype(-1))
    gelu_c = np.sqrt(dtype(2) / pi)
    gelu_a = _const(dtype, "0.044715")
    inv_scale = one / np.sqrt(dtype(HEAD_DIM))

    def layer_norm(x, g, bb):
        mu = x.mean(axis=-1, keepdims=True)
        d = x - mu
        var = (d * d).mean(axis=-1, keepdims=True)    # biased variance
        return d / np.sqrt(var + eps) * g + bb

    def gelu(x):
        return half * x * (one + np.tanh(gelu_c * (x + gelu_a * x * x * x)))

    x = p["wte"][tokens] + p["wpe"][:n]                         # [n, 4]

    h = layer_norm(x, p["h0.ln_1.g"], p["h0.ln_1.b"])
    qkv = h @ p["h0.attn.c_attn.w"]                             # [n, 12]
    causal = np.tril(np.ones((n, n), dtype=bool))
    heads = []
    for hd in range(HEADS):
        c = slice(HEAD_DIM * hd, HEAD_DIM * (hd + 1))
        q = qkv[:, 0 * EMBD:1 * EMBD][:, c]
        k = qkv[:, 1 * EMBD:2 * EMBD][:, c]
        v = qkv[:, 2 * EMBD:3 * EMBD][:, c]
        s = (q @ k.T) * inv_scale                               # [n, n]
        s = np.where(causal, s, dtype(-np.inf))
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        a = e / e.sum(axis=-1, keepdims=True)
        heads.append(a @ v)                                     # [n, 2]
    att = np.concatenate(heads, axis=-1)                        # [n, 4]
    x = x + (att @ p["h0.attn.c_proj.w"] + p["h0.attn.c_proj.b"])

    h = layer_norm(x, p["h0.ln_2.g"], p["h0.ln_2.b"])
    f = gelu(h @ p["h0.mlp.c_fc.w"] + p["h0.mlp.c_fc.b"])       # [n, 8]
    x = x + (f @ p["h0.mlp.c_proj.w"] + p["h0.mlp.c_proj.b"])

    last = layer_norm(x[-1:], p["ln_f.g"], p["ln_f.b"])[0]      # [4]
    return last @ p["head.w"] + p["head.b"]                     # [256]


# --------------------------------------------------------------------------
# The lockstep side
# --------------------------------------------------------------------------

def lockstep_logits(binary, path, tokens, bound):
    """Run the CLI; return (float64[256], None) or (None, error text)."""
    cmd = [binary, "generate", "--weights", path,
           "--tokens", ",".join(str(int(t)) for t in tokens),
           "--bound", repr(float(bound)), "--logits", "--json"]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=CLI_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "could not run %s: %s" % (" ".join(cmd), e)
    if r.returncode != 0:
        return None, "%s exited %d: %s" % (
            " ".join(cmd[:4]) + " ...", r.returncode,
            r.stderr.decode("utf-8", "replace").strip()[:500])
    try:
        obj = json.loads(r.stdout.decode("utf-8"))
        hexes = obj["logits_hex"]
        decs = obj["logits"]
        if len(hexes) != VOCAB or len(decs) != VOCAB:
            return None, "expected %d logits, got %d hex / %d decimal" % (
                VOCAB, len(hexes), len(decs))
        vals = np.array([float.fromhex(s) for s in hexes], dtype=np.float64)
        dvals = np.array([float(d) for d in decs], dtype=np.float64)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        return None, "unparseable output (%s): %r" % (e, r.stdout[:200])
    # The decimal field is for people; it must only say the same thing as the
    # hex field to the precision it is printed with (not specified: loose).
    if not np.all(np.abs(dvals - vals) <= 1e-4 * np.maximum(1, np.abs(vals))):
        i = int(np.argmax(np.abs(dvals - vals)))
        return None, "logits[%d]: decimal %r disagrees with hex %r" % (
            i, decs[i], hexes[i])
    return vals, None


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------

class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def record(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s" % what)
        return ok


def rel_err(ours, theirs):
    """max |ours - theirs| / max(1, max |ours|), and the absolute part."""
    a = float(np.max(np.abs(ours - theirs)))    # in the wider of the two
    return a / max(1.0, float(np.max(np.abs(ours)))), a


def random_sequences(rng, n_ctx, count):
    lengths = [1, n_ctx] + list(rng.integers(1, n_ctx + 1, size=count - 2))
    return [rng.integers(0, VOCAB, size=int(L)) for L in lengths[:count]]


def check_model(tally, label, kind, path, n_ctx, weights, cases, binary):
    """Run cases [(tokens, bound)], return a summary dict."""
    worst_rel = worst_abs = worst_self = 0.0
    failed_before = tally.failed
    compared = 0
    for tokens, bound in cases:
        ours = tiny_forward(weights, n_ctx, tokens, bound, np.float64)
        ref = tiny_forward(weights, n_ctx, tokens, bound, np.longdouble)
        rs, _ = rel_err(ref, ours)
        worst_self = max(worst_self, rs)
        tally.record(rs <= TOL, "%s: float64 vs longdouble forward differ by "
                     "%.3e relative (tokens %d, bound %g)"
                     % (label, rs, len(tokens), bound))
        if bound == 0:
            tally.record(np.all(ours == 0), "%s: bound 0 but a logit is not 0"
                         % label)
        if binary is None:
            continue
        theirs, err = lockstep_logits(binary, path, tokens, bound)
        if theirs is None:
            tally.record(False, "%s: %s" % (label, err))
            continue
        compared += 1
        r, a = rel_err(ours, theirs)
        worst_rel, worst_abs = max(worst_rel, r), max(worst_abs, a)
        ok = bool(np.all(np.isfinite(theirs))) and r <= TOL
        tally.record(ok, "%s: |ours - lockstep| = %.3e, relative %.3e > %g "
                     "(%d tokens, bound %g, first tokens %s)"
                     % (label, a, r, TOL, len(tokens), bound,
                        ",".join(map(str, tokens[:8]))))
        if bound == 0:
            tally.record(np.all(theirs == 0), "%s: bound 0 but lockstep gave "
                         "a non-zero logit" % label)
    nfail = tally.failed - failed_before
    if binary is None:
        print("%-14s (%s, n_ctx %d): %d cases, %d failed, no lockstep binary; "
              "float64 vs longdouble worst rel %.3e"
              % (label, kind, n_ctx, len(cases), nfail, worst_self))
    else:
        print("%-14s (%s, n_ctx %d): %d cases, %d failed, worst abs %.3e, "
              "worst rel %.3e (float64 vs longdouble %.3e)"
              % (label, kind, n_ctx, len(cases), nfail, worst_abs, worst_rel,
                 worst_self))
    return {"model": label, "kind": kind, "n_ctx": n_ctx, "path": path,
            "cases": len(cases), "compared": compared, "failed": nfail,
            "worst_abs": worst_abs, "worst_rel": worst_rel,
            "worst_rel_f64_vs_longdouble": worst_self}


def reader_selftest(tally, tmpdir, rng):
    """The reader accepts what the writer writes and rejects damage."""
    n_ctx = 4
    _, total = tiny_layout(n_ctx)
    w = rng.uniform(RANDOM_LOW, RANDOM_HIGH, size=total)
    path = os.path.join(tmpdir, "selftest.lockstep")
    write_checkpoint(path, n_ctx, w, {"writer": "selftest"})
    with open(path, "rb") as f:
        good = f.read()
    try:
        hdr, back = parse_checkpoint(good, path)
        ok = (np.array_equal(back, w) and hdr["config"]["n_ctx"] == n_ctx
              and len(good) % 64 == 0 and os.listdir(tmpdir) == ["selftest.lockstep"])
    except CheckpointError as e:
        ok = False
        print("  reader rejected its own writer's file: %s" % e)
    tally.record(ok, "reader/writer round trip")

    h_len = struct.unpack("<I", good[12:16])[0]
    damaged = {
        "short file": good[:40],
        "wrong magic": b"LOCKSTEQ" + good[8:],
        "unknown version": good[:8] + struct.pack("<I", 2) + good[12:],
        "size mismatch": good + b"\0",
        "payload bit flip": good[:-1] + bytes([good[-1] ^ 1]),
        "header not JSON": good[:56] + b"#" + good[57:],
    }
    nan_w = w.copy()
    nan_w[7] = np.nan
    damaged["non-finite weight"] = checkpoint_bytes(n_ctx, nan_w)
    hdr_obj = json.loads(good[56:56 + h_len])
    hdr_obj["tensors"][3]["offset"] += 1
    hj = json.dumps(hdr_obj).encode()
    hj += b" " * ((-(56 + len(hj))) % 64)
    damaged["wrong tensor table"] = (good[:12] + struct.pack("<I", len(hj))
                                     + good[16:56] + hj + good[56 + h_len:])
    for what, data in damaged.items():
        try:
            parse_checkpoint(data, what)
            tally.record(False, "reader accepted a file with %s" % what)
        except CheckpointError:
            tally.record(True, "")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Independent numpy recomputation of lockstep's tiny "
        "models: reads checkpoints with its own parser, runs the forward in "
        "numpy and compares the last-position logits with `LOCKSTEP generate "
        "--weights F --tokens ... --bound B --logits --json` to a relative "
        "tolerance of %g (max |ours - lockstep| <= %g * max(1, max|logit|)). "
        "The last line is 'N passed, M failed'; the exit status is 1 if any "
        "check failed. See docs/independent-check.md." % (TOL, TOL))
    ap.add_argument("--lockstep", metavar="PATH",
                    help="the lockstep binary; without it only the script's "
                    "self-checks run (reader, writer, float64 vs longdouble)")
    ap.add_argument("--models", metavar="DIR",
                    help="directory holding the shipped checkpoints "
                    "tiny4.lockstep, tiny64.lockstep, tiny128.lockstep "
                    "(missing ones are skipped with a note)")
    ap.add_argument("--require-shipped", action="store_true",
                    help="count a missing shipped checkpoint as a failure "
                    "(CTest passes this)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED,
                    help="seed of the numpy PCG64 generators for random "
                    "weights, token sequences and bounds (default %(default)s)")
    ap.add_argument("--report", metavar="FILE",
                    help="also write a JSON report of per-model worst errors")
    args = ap.parse_args(argv)
    if args.seed < 0:
        ap.error("--seed must be a non-negative integer")

    binary = args.lockstep
    tally = Tally()
    summaries = []
    if binary is not None and not os.access(binary, os.X_OK):
        tally.record(False, "lockstep binary %s is not an executable file"
                     % binary)
        binary = None
    if binary is None:
        print("note: no usable lockstep binary; running self-checks only")

    print("tolerance: max|ours - lockstep| <= %g * max(1, max|ours|)" % TOL)
    with tempfile.TemporaryDirectory(prefix="lockstep-indep-") as tmp:
        rng = np.random.Generator(np.random.PCG64([args.seed, 0]))
        selftest_dir = os.path.join(tmp, "selftest")
        os.mkdir(selftest_dir)
        reader_selftest(tally, selftest_dir, rng)

        # (a) the shipped checkpoints, bound 10.
        for i, (name, n_ctx) in enumerate(SHIPPED):
            path = os.path.join(args.models or "", name + ".lockstep")
            if args.models is None or not os.path.exists(path):
                if args.require_shipped:
                    tally.record(False, "shipped %s not found" % path)
                else:
                    print("note: %s not found, skipped" % path)
                continue
            try:
                hdr, w = read_checkpoint(path)
            except (CheckpointError, OSError) as e:
                tally.record(False, "reading shipped %s: %s" % (name, e))
                continue
            if not tally.record(hdr["config"]["n_ctx"] == n_ctx,
                                "%s has n_ctx %d, expected %d"
                                % (path, hdr["config"]["n_ctx"], n_ctx)):
                continue
            n_ctx = hdr["config"]["n_ctx"]
            srng = np.random.Generator(np.random.PCG64([args.seed, 1, i]))
            cases = [(t, 10.0) for t in
                     random_sequences(srng, n_ctx, SEQS_PER_MODEL)]
            summaries.append(check_model(tally, name, "shipped", path, n_ctx,
                                         w, cases, binary))

        # (b) random-weight models from our own writer.
        for i, n_ctx in enumerate(RANDOM_CTX):
            rrng = np.random.Generator(np.random.PCG64([args.seed, 2, i]))
            _, total = tiny_layout(n_ctx)
            w = rrng.uniform(RANDOM_LOW, RANDOM_HIGH, size=total)
            name = "random%d" % n_ctx
            path = os.path.join(tmp, name + ".lockstep")
            write_checkpoint(path, n_ctx, w, {
                "writer": "tools/independent/tiny_numpy.py",
                "weights": "uniform [%g, %g]" % (RANDOM_LOW, RANDOM_HIGH),
                "seed": [args.seed, 2, i]})
            _, back = read_checkpoint(path)
            tally.record(np.array_equal(back, w), "%s: read-back differs"
                         % name)
            seqs = random_sequences(rrng, n_ctx, SEQS_PER_MODEL)
            cases = []
            for j, t in enumerate(seqs):
                # Alternate: bounds below 3 clip many weights, above 3 none.
                lo, hi = (0.5, 3.0) if j % 2 == 0 else (3.0, 10.0)
                cases.append((t, float(rrng.uniform(lo, hi))))
            cases.append((seqs[-1], 0.0))
            summaries.append(check_model(tally, name, "random", path, n_ctx,
                                         w, cases, binary))

    compared = [s for s in summaries if s["compared"]]
    if compared:
        worst = max(compared, key=lambda s: s["worst_rel"])
        print("worst relative error over all models: %.3e (%s)"
              % (worst["worst_rel"], worst["model"]))
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"tolerance": TOL, "seed": args.seed,
                       "lockstep": args.lockstep, "models": summaries,
                       "passed": tally.passed, "failed": tally.failed},
                      f, indent=2)
            f.write("\n")
    print("%d passed, %d failed" % (tally.passed, tally.failed))
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
