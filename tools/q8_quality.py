#!/usr/bin/python3
"""int8 quality against binary32, with per-group and per-row activation
scales.

Converts a binary32 source (an HF folder or a packed binary32 file) with
`lockstep convert --quant int8`, takes N prefixes of the held-out last part
of a text (tokenized with `lockstep tokenize`, GPT-2's BPE), and compares
each int8 variant with binary32 (lockstep, `--backend` for both):

  * greedy: K tokens generated greedily from each prefix; a prefix agrees
    when all K are the same;
  * top-1: the argmax of the logits at every position of every prefix
    (first index on ties);
  * the largest |int8 logit - binary32 logit| over those rows, and the
    largest |binary32 logit| for scale.

The int8 variants:
  * group (the spec, docs/arithmetic.md §7): lockstep's int8 file through
    `lockstep logits --all-positions` and `lockstep generate`, and/or the
    numpy implementation of tools/independent/gpt2_q8_numpy.py on the same
    file (bit-identical to lockstep: with both, every logit and every
    generated token is checked equal, and the run fails otherwise);
  * row (--per-row, a quality experiment, not a shipped path): the same
    weights and arithmetic in numpy, but each projection input quantized
    with one scale per position (its largest magnitude over all K / 127)
    instead of one per group of 64.

Prints a Markdown table. Deterministic: the prefixes are fixed by N, the
text and the tokenizer; the numbers depend only on the arithmetic's bits.
Needs numpy only for the numpy variants.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'independent'))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode != 0:
        sys.exit("failed (%d): %s\n%s" %
                 (r.returncode, " ".join(cmd), r.stderr.decode(errors="replace")))
    return r.stdout


def prefixes(ids, n, min_len, max_len):
    """n prefixes, starts spread evenly over ids, lengths varied in
    [min_len, max_len] by a fixed stride (29 is coprime with the span)."""
    span = max_len - min_len + 1
    out = []
    for i in range(n):
        length = min_len + (i * 29) % span
        start = i * (len(ids) - max_len) // n
        out.append(ids[start:start + length])
    return out


def cli_logits(lockstep, model, backend, toks, vocab, path):
    run([lockstep, "logits", "--model", model, "--backend", backend,
         "--tokens", ",".join(map(str, toks)), "--all-positions", "--out", path])
    a = np.fromfile(path, "<f4")
    os.unlink(path)
    if a.size != len(toks) * vocab:
        sys.exit("logits: %d floats, expected %d x %d" % (a.size, len(toks), vocab))
    return a.reshape(len(toks), vocab)


def cli_greedy(lockstep, model, backend, toks, k):
    out = run([lockstep, "generate", "--model", model, "--backend", backend,
               "--tokens", ",".join(map(str, toks)), "--generate", str(k),
               "--json", "--no-stop-eot", "-q"])
    return json.loads(out)["tokens"]


class Lockstep:
    """One model file through the CLI: (rows of logits, greedy tokens)."""

    def __init__(self, args, model, tmp, tag):
        self.args, self.model, self.tmp, self.tag = args, model, tmp, tag

    def measure(self, ps):
        a = self.args

        def one(i):
            lg = cli_logits(a.lockstep, self.model, a.backend, ps[i], a.vocab,
                            os.path.join(self.tmp, "%s%d.f32" % (self.tag, i)))
            g = cli_greedy(a.lockstep, self.model, a.backend, ps[i], a.generate)
            return lg, g

        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
            return list(ex.map(one, range(len(ps))))


class Numpy:
    """The numpy int8 model on lockstep's int8 file, batched over prefixes."""

    def __init__(self, model, per_row, batch):
        self.m, self.per_row, self.batch = model, per_row, batch

    def measure(self, ps, k):
        import gpt2_q8_numpy as q
        cfg = self.m.cfg
        out = []
        for b0 in range(0, len(ps), self.batch):
            bs = ps[b0:b0 + self.batch]
            B = len(bs)
            T = max(len(p) for p in bs) + k
            cache = np.zeros((B, T, cfg["n_layer"], 2 * cfg["n_embd"]), np.float32)
            toks = np.concatenate([np.asarray(p) for p in bs])
            seqs = np.concatenate([np.full(len(p), i) for i, p in enumerate(bs)])
            pos = np.concatenate([np.arange(len(p)) for p in bs])
            lg = q.forward(self.m, toks, seqs, pos, cache, self.per_row)
            ends = np.cumsum([len(p) for p in bs])
            rows = np.split(lg, ends[:-1])
            gen = [[] for _ in bs]
            nxt = np.array([int(np.argmax(r[-1])) for r in rows])
            for step in range(k):
                for i in range(B):
                    gen[i].append(int(nxt[i]))
                if step == k - 1:
                    break
                spos = np.array([len(p) + step for p in bs])
                l1 = q.forward(self.m, nxt, np.arange(B), spos, cache, self.per_row)
                nxt = np.argmax(l1, axis=1)
            out += list(zip(rows, gen))
            sys.stderr.write("numpy %s: %d / %d prefixes\n"
                             % ("row" if self.per_row else "group", b0 + B, len(ps)))
        return out


def compare(ref, got):
    """(greedy agreeing, top-1 agreeing, positions, max error, max |logit|)."""
    greedy = top1 = positions = 0
    err = big = 0.0
    for (la, ga), (lb, gb) in zip(ref, got):
        greedy += ga == gb
        top1 += int(np.sum(np.argmax(la, axis=1) == np.argmax(lb, axis=1)))
        positions += la.shape[0]
        err = max(err, float(np.max(np.abs(lb.astype(np.float64) - la))))
        big = max(big, float(np.max(np.abs(la))))
    return greedy, top1, positions, err, big


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lockstep", default="build/lockstep", help="the lockstep binary")
    ap.add_argument("--model", default="models/shakespeare-gpt2",
                    help="binary32 source: HF folder or packed binary32 file")
    ap.add_argument("--name", help="the model's name in the table (default: the path's)")
    ap.add_argument("--text", default="data/tinyshakespeare.txt",
                    help="text whose held-out part gives the prefixes")
    ap.add_argument("--val-start", type=int, default=1003856,
                    help="first byte of the held-out part (default: the trained model's "
                    "split, train_report.json data.train_chars; 36,057 tokens)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(),
                    help="prefixes measured at once by the CLI (the result does not depend on it)")
    ap.add_argument("--prefixes", type=int, default=128)
    ap.add_argument("--min-len", type=int, default=4)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--generate", type=int, default=16, help="greedy tokens per prefix")
    ap.add_argument("--backend", default="reference", help="lockstep backend for both files")
    ap.add_argument("--int8", choices=("lockstep", "numpy", "both"), default="lockstep",
                    help="who computes the per-group int8 variant (numpy is bit-identical)")
    ap.add_argument("--per-row", action="store_true",
                    help="also the per-row activation scales (numpy)")
    ap.add_argument("--batch", type=int, default=16, help="prefixes per numpy batch")
    ap.add_argument("--vocab", type=int, default=50257)
    args = ap.parse_args()
    name = args.name or os.path.basename(os.path.normpath(args.model))

    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="q8_quality_") as tmp:
        q8 = os.path.join(tmp, "model.q8.lockstep")
        run([args.lockstep, "convert", args.model, q8, "--quant", "int8"])
        f32 = args.model
        if os.path.isdir(args.model):  # packed once, mapped by every call
            f32 = os.path.join(tmp, "model.f32.lockstep")
            run([args.lockstep, "convert", args.model, f32])
        with open(args.text, "rb") as f:
            data = f.read()
        val = os.path.join(tmp, "val.txt")
        with open(val, "wb") as f:
            f.write(data[args.val_start:])
        ids = json.loads(run([args.lockstep, "tokenize", "--file", val, "--json"]))
        ps = prefixes(ids, args.prefixes, args.min_len, args.max_len)

        ref = Lockstep(args, f32, tmp, "a").measure(ps)
        sys.stderr.write("binary32 done (%.0f s)\n" % (time.time() - t0))
        variants = []
        group = None
        if args.int8 in ("lockstep", "both"):
            group = Lockstep(args, q8, tmp, "b").measure(ps)
            sys.stderr.write("int8 (lockstep) done (%.0f s)\n" % (time.time() - t0))
        numpy_model = None
        if args.int8 in ("numpy", "both") or args.per_row:
            import gpt2_q8_numpy as q
            numpy_model = q.read_q8_file(q8)[0]
        if args.int8 in ("numpy", "both"):
            g2 = Numpy(numpy_model, False, args.batch).measure(ps, args.generate)
            sys.stderr.write("int8 (numpy) done (%.0f s)\n" % (time.time() - t0))
            if group is not None:
                for i, ((la, ga), (lb, gb)) in enumerate(zip(group, g2)):
                    if ga != gb or not np.array_equal(la.view(np.uint32), lb.view(np.uint32)):
                        sys.exit("prefix %d: numpy per-group int8 differs from lockstep's"
                                 % i)
                sys.stderr.write("numpy per-group == lockstep int8 on every logit and "
                                 "greedy token\n")
            group = g2
        variants.append(("per group of 64 (the spec)", group))
        if args.per_row:
            rows = Numpy(numpy_model, True, args.batch).measure(ps, args.generate)
            variants.append(("per row (experiment)", rows))
        seconds = time.time() - t0

    positions = sum(len(p) for p in ps)
    print("| model | activation scales | greedy prefixes agreeing | top-1 at every position | "
          "largest logit error (largest logit) |")
    print("| --- | --- | --- | --- | --- |")
    for label, got in variants:
        g, t, n, err, big = compare(ref, got)
        assert n == positions
        print("| %s (%d prefixes of %d to %d tokens) | %s | %d / %d over %d tokens "
              "| %d / %d (%.2f%%) | %.4g (%.4g) |" %
              (name, len(ps), args.min_len, args.max_len, label, g, len(ps), args.generate,
               t, n, 100.0 * t / n, err, big))
    sys.stderr.write("%.0f s\n" % seconds)


if __name__ == "__main__":
    main()
