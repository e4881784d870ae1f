#!/usr/bin/env python3
"""Train a small GPT-2 on Tiny Shakespeare with Hugging Face transformers.

Trains GPT-2-architecture models (GPT2LMHeadModel, tied output head,
gelu_new, head width 64) on data/tinyshakespeare.txt tokenized with the
GPT-2 tokenizer built from data/gpt2/encoder.json (= HF's vocab.json) and
data/gpt2/vocab.bpe (= HF's merges.txt). The last 10% of the text (from the
first line break at or after 90% of its characters) is held out for
validation. With several --n-layer / --dropout values every combination is
trained with the same recipe and seed, and the one with the lowest
validation loss (at its best evaluation: early stopping) is exported.

Writes into --out:
  config.json, model.safetensors   HF's GPT-2 layout, F16 (or F32)
  train_report.json                recipe, every candidate's losses, times
  reference.json                   HF's float32 reference for PROMPTS: top-k
                                   logits, full-vocabulary summaries, greedy
                                   tokens, on the GPU and on the CPU, and
                                   the distance of each to HF float64 (CPU)
  ref_gpu_f32.bin, ref_cpu_f32.bin last-position logits of every prompt,
                                   little-endian float32, prompts in order
  ref_cpu_f64.bin                  the same in float64 (HF in float64, CPU)

The references are computed from the exported file reloaded by
from_pretrained in float32 (so from the F16-rounded weights that ship), with
TF32 off. docs/trained-model.md records the run that produced
models/shakespeare-gpt2.

Examples (docs/trained-model.md):
  # the sweep that chose the shipped model (about 2 minutes of an H200)
  python3 train/hf/train_gpt2.py --out /tmp/sweep
  # the shipped model's candidate alone, without the time cap
  python3 train/hf/train_gpt2.py --out /tmp/sg --n-layer 4 --dropout 0.1 --stop-after 900
"""

import argparse
import hashlib
import itertools
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time

# cuBLAS needs this before CUDA starts to be deterministic (PyTorch's
# reproducibility notes); harmless on the CPU.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = 50257
EOT = 50256

# The reference prompts: lockstep's tests compare their last-position logits
# and greedy continuations with HF's (tests/trained_model_test.cc).
PROMPTS = [
    "ROMEO:",
    "First Citizen:\nBefore we proceed any further, hear me speak.",
    "KING RICHARD III:\nNow is the winter of our discontent",
    "To be, or not to be, that is the question:",
]
TOPK = 20

# Known GPT-2 encodings: the tokenizer must reproduce them before training.
TOKENIZER_CHECKS = [
    ("Hello world", [15496, 995]),
    (
        "First Citizen:\nBefore we proceed any further, hear me speak.",
        [5962, 22307, 25, 198, 8421, 356, 5120, 597, 2252, 11, 3285, 502, 2740, 13],
    ),
]


def log(*a):
    print(*a, flush=True)


def parse_list(s, typ):
    return [typ(x) for x in str(s).split(",") if x.strip()]


def ids_sha256(ids):
    """SHA-256 of token ids as little-endian int32 (compare with lockstep
    tokenize)."""
    h = hashlib.sha256()
    h.update(b"".join(int(i).to_bytes(4, "little", signed=True) for i in ids))
    return h.hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------- tokenizer


def load_tokenizer(tok_dir):
    """HF's GPT-2 tokenizer from encoder.json / vocab.bpe (the same contents
    as HF's vocab.json / merges.txt), checked on known encodings. Returns
    (encode, decode, description)."""
    enc_json = os.path.join(tok_dir, "encoder.json")
    bpe = os.path.join(tok_dir, "vocab.bpe")
    errors = []
    import transformers

    tmp = tempfile.mkdtemp(prefix="gpt2tok")
    shutil.copyfile(enc_json, os.path.join(tmp, "vocab.json"))
    shutil.copyfile(bpe, os.path.join(tmp, "merges.txt"))
    attempts = []
    for cls_name in ("GPT2TokenizerFast", "GPT2Tokenizer"):
        cls = getattr(transformers, cls_name, None)
        if cls is None:
            continue
        attempts.append((cls_name + ".from_pretrained", lambda c=cls: c.from_pretrained(tmp)))
        attempts.append(
            (cls_name + "(vocab_file, merges_file)", lambda c=cls: c(vocab_file=enc_json, merges_file=bpe))
        )
    for name, make in attempts:
        try:
            tok = make()
            tok.model_max_length = 1 << 30  # whole-text encoding: no warning

            def encode(s, tok=tok):
                return list(tok.encode(s, add_special_tokens=False))

            def decode(ids, tok=tok):
                return tok.decode(ids, clean_up_tokenization_spaces=False)

            for text, want in TOKENIZER_CHECKS:
                got = encode(text)
                if got != want:
                    raise ValueError("encodes %r as %s, expected %s" % (text, got, want))
            return encode, decode, "transformers." + name + " (" + type(tok).__name__ + ")"
        except Exception as e:  # try the next way of building it
            errors.append("%s: %s" % (name, e))
    # Last resort, so that a transformers API change cannot cost a GPU run:
    # the original GPT-2 encoder.py algorithm on the same two files (the
    # token digests in train_report.json show whether it matched lockstep).
    try:
        encode, decode = plain_bpe(enc_json, bpe)
        for text, want in TOKENIZER_CHECKS:
            if encode(text) != want:
                raise ValueError("encodes %r wrongly" % text)
        log("WARNING: transformers' tokenizer failed (%s); using the plain BPE" % "; ".join(errors))
        return encode, decode, "plain GPT-2 BPE (encoder.py algorithm)"
    except Exception as e:
        errors.append("plain BPE: %s" % e)
    raise SystemExit("no working GPT-2 tokenizer: " + "; ".join(errors))


def plain_bpe(enc_json, bpe_path):
    """GPT-2's byte-level BPE as in OpenAI's encoder.py (needs `regex`)."""
    import regex

    with open(enc_json, encoding="utf-8") as f:
        encoder = json.load(f)
    decoder = {v: k for k, v in encoder.items()}
    with open(bpe_path, encoding="utf-8") as f:
        merges = f.read().split("\n")[1:-1]
    ranks = {tuple(m.split()): i for i, m in enumerate(merges)}
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    b2u = dict(zip(bs, map(chr, cs)))
    u2b = {v: k for k, v in b2u.items()}
    pat = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    cache = {}

    def word_bpe(token):
        if token in cache:
            return cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
            if best not in ranks:
                break
            new, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and (word[i], word[i + 1]) == best:
                    new.append(word[i] + word[i + 1])
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            word = new
        cache[token] = word
        return word

    def encode(text):
        out = []
        for t in regex.findall(pat, text):
            out.extend(encoder[w] for w in word_bpe("".join(b2u[b] for b in t.encode("utf-8"))))
        return out

    def decode(ids):
        return bytearray(u2b[c] for c in "".join(decoder[i] for i in ids)).decode("utf-8", errors="replace")

    return encode, decode


def split_text(text):
    """Train = text up to and including the first '\\n' at or after 90% of
    the characters; validation = the rest (the last ~10%)."""
    cut = text.index("\n", int(0.9 * len(text))) + 1
    return text[:cut], text[cut:]


# ---------------------------------------------------------------- model


def make_config(args, n_layer, dropout):
    from transformers import GPT2Config

    return GPT2Config(
        vocab_size=VOCAB,
        n_positions=args.n_positions,
        n_embd=args.n_embd,
        n_layer=n_layer,
        n_head=args.n_head,
        activation_function="gelu_new",
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        layer_norm_epsilon=1e-5,
        initializer_range=0.02,
        tie_word_embeddings=True,
        bos_token_id=EOT,
        eos_token_id=EOT,
    )


def new_model(config):
    """GPT2LMHeadModel with eager attention (plain matmul/softmax: the same
    on every device and deterministic in training)."""
    from transformers import AutoModelForCausalLM, GPT2LMHeadModel

    try:
        return AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    except TypeError:
        return GPT2LMHeadModel(config)


def load_exported(out_dir, device, dtype):
    import torch
    from transformers import GPT2LMHeadModel

    try:
        m = GPT2LMHeadModel.from_pretrained(out_dir, dtype=dtype, attn_implementation="eager")
    except TypeError:
        m = GPT2LMHeadModel.from_pretrained(out_dir, torch_dtype=dtype, attn_implementation="eager")
    m = m.to(device=device, dtype=dtype).eval()
    assert next(m.parameters()).dtype == dtype
    return m


def n_params(model):
    # The tied head is counted once (parameters() deduplicates).
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- training


def windows(tokens, P):
    """Non-overlapping windows of P inputs and their next-token targets."""
    n = (tokens.numel() - 1) // P
    x = tokens[: n * P].view(n, P)
    y = tokens[1 : n * P + 1].view(n, P)
    return x, y


def mean_loss(model, tokens, P, batch):
    """Mean next-token cross-entropy (nats) over every target of the
    non-overlapping P-token windows of `tokens`, in float32."""
    import torch
    import torch.nn.functional as F

    was_training = model.training
    model.eval()
    x, y = windows(tokens, P)
    total = torch.zeros((), dtype=torch.float64, device=tokens.device)
    count = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            logits = model(input_ids=x[i : i + batch]).logits.float()
            total += F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), y[i : i + batch].reshape(-1), reduction="sum"
            ).double()
            count += y[i : i + batch].numel()
    model.train(was_training)
    return float(total) / count, count


def lr_at(step, args):
    """Linear warm-up, then cosine from lr to lr * min_lr_ratio at --steps."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    t = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t)))


def train_one(args, n_layer, dropout, train_ids, val_ids, device, time_cap):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(args.seed)
    model = new_model(make_config(args, n_layer, dropout)).to(device)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, args.beta2),
        eps=1e-8,
    )
    gen = torch.Generator().manual_seed(args.seed)  # batch offsets, on the CPU
    P, B = args.n_positions, args.batch_size
    span = torch.arange(P + 1)
    curve, best = [], None
    run_loss = torch.zeros((), device=device)
    run_n = 0
    t0 = time.time()
    stopped = None
    tag = "L%d d%.2g" % (n_layer, dropout)
    log("== %s: %d parameters (tied head counted once)" % (tag, n_params(model)))
    for step in range(min(args.steps, args.stop_after or args.steps)):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        off = torch.randint(0, train_ids.numel() - P - 1, (B,), generator=gen)
        idx = (off[:, None] + span[None, :]).to(device)
        chunk = train_ids[idx]
        logits = model(input_ids=chunk[:, :-1]).logits
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        run_loss += loss.detach()
        run_n += 1
        last = step + 1 == (args.stop_after or args.steps)
        over = time.time() - t0 > time_cap
        if (step + 1) % args.eval_every == 0 or last or over:
            val, _ = mean_loss(model, val_ids, P, args.eval_batch)
            tr = float(run_loss) / run_n
            run_loss.zero_()
            run_n = 0
            curve.append({"step": step + 1, "train_batch_loss": round(tr, 5), "val_loss": round(val, 5)})
            mark = ""
            if best is None or val < best["val_loss"]:
                best = {"val_loss": val, "step": step + 1}
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                mark = " *"
            log(
                "%s step %5d  lr %.2e  train(batches) %.4f  val %.4f  %.1fs%s"
                % (tag, step + 1, lr_at(step, args), tr, val, time.time() - t0, mark)
            )
            if over and not last:
                stopped = step + 1
                log("%s: time cap %.0fs reached at step %d" % (tag, time_cap, stopped))
                break
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.time() - t0
    model.load_state_dict(best_state)
    result = {
        "n_layer": n_layer,
        "dropout": dropout,
        "params": n_params(model),
        "best_val_loss": round(best["val_loss"], 5),
        "best_step": best["step"],
        "steps_run": stopped or min(args.steps, args.stop_after or args.steps),
        "stopped_by_time_cap": stopped is not None,
        "train_seconds": round(wall, 1),
        "curve": curve,
    }
    return model, result


# ---------------------------------------------------------------- export


def export(model, out_dir, dtype_name):
    """config.json + model.safetensors in HF's GPT-2 layout: transformer.*
    tensors, no lm_head.weight (tied to wte), no attention-mask buffers.
    Written to temporaries, then renamed."""
    import torch
    from safetensors.torch import save_file

    dt = {"f16": torch.float16, "f32": torch.float32}[dtype_name]
    sd = model.state_dict()
    wte = sd["transformer.wte.weight"]
    if "lm_head.weight" in sd and not torch.equal(sd["lm_head.weight"], wte):
        raise SystemExit("lm_head.weight is not tied to transformer.wte.weight")
    tensors = {}
    for k, v in sd.items():
        if k == "lm_head.weight" or k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"):
            continue
        t = v.detach().to("cpu")
        if not torch.isfinite(t).all():
            raise SystemExit("non-finite values in " + k)
        if dt == torch.float16 and t.abs().max() > 65504:
            raise SystemExit(k + " overflows float16")
        tensors[k] = t.to(dt).contiguous()
    os.makedirs(out_dir, exist_ok=True)
    tmp = os.path.join(out_dir, "model.safetensors.tmp")
    save_file(tensors, tmp, metadata={"format": "pt"})
    os.replace(tmp, os.path.join(out_dir, "model.safetensors"))
    cfg = model.config.to_dict()
    cfg.pop("_name_or_path", None)
    cfg["architectures"] = ["GPT2LMHeadModel"]
    tmp = os.path.join(out_dir, "config.json.tmp")
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "config.json"))
    return tensors


def check_reload(out_dir, tensors):
    """from_pretrained must give back exactly the exported values (widened
    to float32) with the head tied to wte."""
    import torch

    m = load_exported(out_dir, torch.device("cpu"), torch.float32)
    sd = m.state_dict()
    for k, t in tensors.items():
        if not torch.equal(sd[k], t.float()):
            raise SystemExit("reloaded %s differs from the exported tensor" % k)
    head = m.get_output_embeddings().weight
    if not torch.equal(head, sd["transformer.wte.weight"]):
        raise SystemExit("reloaded output head is not wte")
    return m


# ---------------------------------------------------------------- references


def exact_float32_matmuls():
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def last_logits(model, prompt_ids, device):
    import torch

    rows = []
    with torch.no_grad():
        for ids in prompt_ids:
            x = torch.tensor([ids], dtype=torch.long, device=device)
            rows.append(model(input_ids=x).logits[0, -1].detach().to("cpu"))
    return torch.stack(rows)


def greedy(model, ids, n, device):
    """n greedy tokens, each from a full-prefix forward (no cache)."""
    import torch

    ids = list(ids)
    out = []
    with torch.no_grad():
        for _ in range(n):
            x = torch.tensor([ids[-model.config.n_positions :]], dtype=torch.long, device=device)
            nxt = int(torch.argmax(model(input_ids=x).logits[0, -1]))
            out.append(nxt)
            ids.append(nxt)
    return out


def summary(row):
    import torch

    r = row.double()
    top = torch.topk(row.float(), TOPK)
    return {
        "top_ids": [int(i) for i in top.indices],
        "top_logits": [float(v) for v in top.values],
        "min": float(r.min()),
        "max": float(r.max()),
        "mean": float(r.mean()),
        "l2": float(torch.sqrt((r * r).sum())),
    }


def references(out_dir, decode, encode, args, gpu):
    """HF's own logits for PROMPTS from the exported file: float32 on the GPU
    (TF32 off) and on the CPU, and float64 on the CPU."""
    import torch

    exact_float32_matmuls()
    prompt_ids = [encode(p) for p in PROMPTS]
    runs = [("cpu_f32", torch.device("cpu"), torch.float32), ("cpu_f64", torch.device("cpu"), torch.float64)]
    if gpu is not None:
        runs.insert(0, ("gpu_f32", gpu, torch.float32))
    logits, greedies = {}, {}
    for name, dev, dt in runs:
        m = load_exported(out_dir, dev, dt)
        logits[name] = last_logits(m, prompt_ids, dev)
        greedies[name] = [greedy(m, ids, args.greedy_tokens, dev) for ids in prompt_ids]
        del m
    ref = {
        "prompts": [],
        "topk": TOPK,
        "greedy_tokens": args.greedy_tokens,
        "note": "last-position logits of each prompt; greedy = argmax of a full-prefix forward per token",
    }
    f64 = logits["cpu_f64"]
    for i, p in enumerate(PROMPTS):
        e = {"text": p, "input_ids": prompt_ids[i]}
        for name in logits:
            e[name] = summary(logits[name][i])
            e[name]["greedy"] = greedies[name][i]
            e[name]["greedy_text"] = decode(greedies[name][i])
            if name != "cpu_f64":
                e[name]["max_abs_diff_vs_cpu_f64"] = float((logits[name][i].double() - f64[i]).abs().max())
        if "gpu_f32" in logits:
            e["max_abs_diff_gpu_f32_vs_cpu_f32"] = float((logits["gpu_f32"][i] - logits["cpu_f32"][i]).abs().max())
        ref["prompts"].append(e)
    for name, t in logits.items():
        path = os.path.join(out_dir, "ref_%s.bin" % name)
        arr = t.numpy().astype("<f8" if name == "cpu_f64" else "<f4")
        with open(path + ".tmp", "wb") as f:
            f.write(arr.tobytes())
        os.replace(path + ".tmp", path)
        ref["ref_%s.bin" % name] = {"sha256": file_sha256(path), "rows": len(PROMPTS), "cols": VOCAB}
    return ref


def sample_text(model, encode, decode, prompt, n, seed, device, temperature=0.8):
    """An eyeball sample from HF (multinomial at temperature 0.8, seeded)."""
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    ids = encode(prompt)
    with torch.no_grad():
        for _ in range(n):
            x = torch.tensor([ids[-model.config.n_positions :]], dtype=torch.long, device=device)
            p = torch.softmax(model(input_ids=x).logits[0, -1].float() / temperature, -1)
            ids.append(int(torch.multinomial(p, 1, generator=g)))
    return decode(ids)


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=os.path.join(REPO, "data/tinyshakespeare.txt"))
    ap.add_argument("--tokenizer", default=os.path.join(REPO, "data/gpt2"), help="folder with encoder.json, vocab.bpe")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--n-head", type=int, default=2, help="head width n_embd/n_head must be 64")
    ap.add_argument("--n-layer", default="4,8", help="one value or a comma list (sweep)")
    ap.add_argument("--dropout", default="0.1,0.25", help="one value or a comma list (sweep)")
    ap.add_argument("--n-positions", type=int, default=512, help="context; also the training window")
    ap.add_argument("--batch-size", type=int, default=16, help="windows per step")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta2", type=float, default=0.95)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument(
        "--stop-after",
        type=int,
        default=None,
        help="stop after this many steps (the schedule still runs to --steps): "
        "the shipped model is --n-layer 4 --dropout 0.1 --stop-after 900",
    )
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--dtype", choices=["f16", "f32"], default="f16", help="exported weights")
    ap.add_argument("--time-budget", type=float, default=100.0, help="seconds of training shared by all candidates")
    ap.add_argument("--greedy-tokens", type=int, default=32)
    ap.add_argument("--no-tf32", dest="tf32", action="store_false", help="no TF32 in training (references never use it)")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    args = ap.parse_args()

    if args.n_embd % args.n_head or args.n_embd // args.n_head != 64:
        ap.error("n_embd / n_head must be 64 (GPT-2's head width)")
    layers, drops = parse_list(args.n_layer, int), parse_list(args.dropout, float)
    if not layers or not drops or min(layers) < 1 or not all(0 <= d < 1 for d in drops):
        ap.error("bad --n-layer or --dropout")

    import torch
    import transformers

    t_start = time.time()
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    gpu = device if device.type == "cuda" else None
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(device) if gpu else "cpu",
        "cpu": platform.processor() or platform.machine(),
        "cuda": torch.version.cuda,
    }
    try:
        import safetensors

        env["safetensors"] = safetensors.__version__
    except Exception:
        pass
    log("environment:", json.dumps(env))
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    torch.backends.cudnn.allow_tf32 = bool(args.tf32)
    torch.set_float32_matmul_precision("high" if args.tf32 else "highest")

    encode, decode, tok_name = load_tokenizer(args.tokenizer)
    with open(args.data, "r", encoding="utf-8") as f:
        text = f.read()
    train_text, val_text = split_text(text)
    t = time.time()
    train_list, val_list = encode(train_text), encode(val_text)
    data = {
        "file": os.path.relpath(args.data, REPO) if args.data.startswith(REPO) else args.data,
        "sha256": file_sha256(args.data),
        "chars": len(text),
        "train_chars": len(train_text),
        "val_chars": len(val_text),
        "train_tokens": len(train_list),
        "val_tokens": len(val_list),
        "train_ids_sha256": ids_sha256(train_list),
        "val_ids_sha256": ids_sha256(val_list),
        "tokenizer": tok_name,
        "tokenize_seconds": round(time.time() - t, 2),
    }
    log("data:", json.dumps(data))
    train_ids = torch.tensor(train_list, dtype=torch.long, device=device)
    val_ids = torch.tensor(val_list, dtype=torch.long, device=device)

    recipe = {k: v for k, v in vars(args).items() if k not in ("out", "data", "tokenizer", "device")}
    log("recipe:", json.dumps(recipe))
    cands = list(itertools.product(layers, drops))
    cap = args.time_budget / len(cands)
    results, best_model, best = [], None, None
    for n_layer, dropout in cands:
        model, r = train_one(args, n_layer, dropout, train_ids, val_ids, device, cap)
        results.append(r)
        log("candidate:", json.dumps({k: v for k, v in r.items() if k != "curve"}))
        if best is None or r["best_val_loss"] < best["best_val_loss"]:
            best, best_model = r, model
        else:
            del model
        if gpu:
            torch.cuda.empty_cache()
    log("chosen: n_layer %d dropout %g (val %.4f at step %d)" % (best["n_layer"], best["dropout"], best["best_val_loss"], best["best_step"]))

    tensors = export(best_model, args.out, args.dtype)
    del best_model
    exported = check_reload(args.out, tensors).to(device)
    # The shipped (rounded) weights' losses, float32, TF32 off.
    exact_float32_matmuls()
    val_loss, val_n = mean_loss(exported, val_ids, args.n_positions, args.eval_batch)
    train_loss, train_n = mean_loss(exported, train_ids, args.n_positions, args.eval_batch)
    st = os.path.join(args.out, "model.safetensors")
    final = {
        "n_layer": best["n_layer"],
        "dropout": best["dropout"],
        "step": best["best_step"],
        "params": n_params(exported),
        "val_loss": round(val_loss, 5),
        "val_targets": val_n,
        "val_perplexity": round(math.exp(val_loss), 3),
        "train_loss": round(train_loss, 5),
        "train_targets": train_n,
        "dtype": args.dtype,
        "safetensors_bytes": os.path.getsize(st),
        "safetensors_sha256": file_sha256(st),
        "config_sha256": file_sha256(os.path.join(args.out, "config.json")),
        "loss_note": "mean next-token cross-entropy (nats) over non-overlapping n_positions windows, float32, exported weights",
    }
    log("final:", json.dumps(final))
    samples = {}
    for i, p in enumerate(["ROMEO:", "JULIET:\n"]):
        samples[p] = sample_text(exported, encode, decode, p, 80, args.seed + i, device)
        log("--- HF sample (T=0.8, seed %d) ---\n%s\n---" % (args.seed + i, samples[p]))
    del exported

    t = time.time()
    ref = references(args.out, decode, encode, args, gpu)
    ref["environment"] = env
    ref["model_sha256"] = final["safetensors_sha256"]
    for e in ref["prompts"]:
        log("reference %r:" % e["text"], json.dumps({k: (v if not isinstance(v, dict) else {
            kk: vv for kk, vv in v.items() if kk in ("max", "greedy_text", "max_abs_diff_vs_cpu_f64")}) for k, v in e.items() if k not in ("input_ids",)}))
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    report = {
        "environment": env,
        "data": data,
        "recipe": recipe,
        "candidates": results,
        "final": final,
        "samples_hf": samples,
        "reference_seconds": round(time.time() - t, 1),
        "total_seconds": round(time.time() - t_start, 1),
    }
    with open(os.path.join(args.out, "train_report.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    log("done in %.1fs; wrote %s" % (time.time() - t_start, ", ".join(sorted(os.listdir(args.out)))))


if __name__ == "__main__":
    main()
