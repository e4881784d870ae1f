#!/usr/bin/env python3
"""int8 quality against binary32 on a real model, through the lockstep CLI.

Converts a binary32 source (an HF folder or a packed binary32 file) with
`lockstep convert --quant int8`, takes N prefixes of the held-out last 10%
of a text (tokenized with `lockstep tokenize`, GPT-2's BPE), and compares,
on the same backend for both files:

  * greedy: `lockstep generate --generate K` from each prefix; a prefix
    agrees when all K generated tokens are the same;
  * top-1: the argmax of `lockstep logits --all-positions` at every
    position of every prefix (first index on ties, for both files);
  * the largest |int8 logit - binary32 logit| over those rows, and the
    largest |binary32 logit| for scale.

Prints a Markdown table. Deterministic: the prefixes are fixed by N, the
text and the tokenizer (no randomness); the numbers depend only on the
lockstep binary's bits. Standard library only.
"""

import argparse
import array
import concurrent.futures
import json
import operator
import os
import subprocess
import sys
import tempfile


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


def logits_rows(lockstep, model, backend, toks, vocab, tmp, name):
    path = os.path.join(tmp, name + ".f32")
    run([lockstep, "logits", "--model", model, "--backend", backend,
         "--tokens", ",".join(map(str, toks)), "--all-positions", "--out", path])
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    os.unlink(path)
    if sys.byteorder != "little":
        a.byteswap()
    if len(a) != len(toks) * vocab:
        sys.exit("logits: %d floats, expected %d x %d" % (len(a), len(toks), vocab))
    return [a[r * vocab:(r + 1) * vocab] for r in range(len(toks))]


def greedy(lockstep, model, backend, toks, k):
    out = run([lockstep, "generate", "--model", model, "--backend", backend,
               "--tokens", ",".join(map(str, toks)), "--generate", str(k),
               "--json", "--no-stop-eot", "-q"])
    return json.loads(out)["tokens"]


def argmax(row):
    return row.index(max(row))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lockstep", default="build-q8/lockstep", help="the lockstep binary")
    ap.add_argument("--model", default="models/shakespeare-gpt2",
                    help="binary32 source: HF folder or packed binary32 file")
    ap.add_argument("--text", default="data/tinyshakespeare.txt",
                    help="text whose held-out part gives the prefixes")
    ap.add_argument("--val-start", type=int, default=1003856,
                    help="first byte of the held-out part (default: the trained model's "
                    "split, train_report.json data.train_chars; 36,057 tokens)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(),
                    help="prefixes measured at once (the result does not depend on it)")
    ap.add_argument("--prefixes", type=int, default=128)
    ap.add_argument("--min-len", type=int, default=4)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--generate", type=int, default=16, help="greedy tokens per prefix")
    ap.add_argument("--backend", default="reference", help="backend for both files")
    ap.add_argument("--vocab", type=int, default=50257)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="q8_quality_") as tmp:
        q8 = os.path.join(tmp, "model.q8.lockstep")
        run([args.lockstep, "convert", args.model, q8, "--quant", "int8"])
        with open(args.text, "rb") as f:
            data = f.read()
        val = os.path.join(tmp, "val.txt")
        with open(val, "wb") as f:
            f.write(data[args.val_start:])
        ids = json.loads(run([args.lockstep, "tokenize", "--file", val, "--json"]))
        ps = prefixes(ids, args.prefixes, args.min_len, args.max_len)

        def measure(i):
            p = ps[i]
            a = logits_rows(args.lockstep, args.model, args.backend, p, args.vocab,
                            tmp, "a%d" % i)
            b = logits_rows(args.lockstep, q8, args.backend, p, args.vocab, tmp, "b%d" % i)
            top1 = err = big = 0.0
            for ra, rb in zip(a, b):
                top1 += argmax(ra) == argmax(rb)
                d = list(map(operator.sub, rb, ra))
                err = max(err, max(d), -min(d))
                big = max(big, max(ra), -min(ra))
            ga = greedy(args.lockstep, args.model, args.backend, p, args.generate)
            gb = greedy(args.lockstep, q8, args.backend, p, args.generate)
            # one write per line, so lines from parallel prefixes do not interleave
            sys.stderr.write("prefix %3d len %2d greedy %s\n" %
                             (i, len(p), "same" if ga == gb else "differs"))
            return int(top1), err, big, ga == gb

        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
            results = list(ex.map(measure, range(len(ps))))  # in prefix order

        greedy_ok = sum(r[3] for r in results)
        top1_ok = sum(r[0] for r in results)
        positions = sum(len(p) for p in ps)
        max_err = max(r[1] for r in results)
        max_logit = max(r[2] for r in results)
        worst = max(range(len(ps)), key=lambda i: results[i][1])
        worst = (worst, len(ps[worst]))

    print("| model | greedy prefixes agreeing | top-1 at every position | "
          "largest logit error (largest logit) |")
    print("| --- | --- | --- | --- |")
    print("| %s (%d held-out prefixes of %d to %d tokens, %d val tokens) | %d / %d over %d tokens "
          "| %d / %d (%.2f%%) | %.4g (%.4g) |" %
          (os.path.basename(os.path.normpath(args.model)), len(ps), args.min_len, args.max_len,
           len(ids), greedy_ok, len(ps), args.generate, top1_ok, positions,
           100.0 * top1_ok / positions, max_err, max_logit))
    print("\nlargest error at prefix %d (length %d)" % worst, file=sys.stderr)


if __name__ == "__main__":
    main()
