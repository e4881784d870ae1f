#!/usr/bin/env python3
"""Hugging Face transformers' GPT-2 124M on the same GPU, for comparison
with the CUDA backend (scripts/cuda.sh, docs/cuda.md): batch-1 decode with
the KV cache (eager PyTorch, float32, TF32 off, each step's last logits
copied to the host as a sampler needs them) at positions 1-128, and the
time of one 512-token forward pass (time to first token); then the same
decode at positions 1-128 with a StaticCache, eager and with the forward
compiled by torch.compile (mode "reduce-overhead": CUDA graphs), after
two warm-up passes that compile (static_compiled). Randomly initialised
weights of GPT-2 124M's shape (no download). Prints JSON; a failure of
the compiled path is recorded in it ("hf_static_compile_error").
"""
import json
import statistics
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = GPT2LMHeadModel(GPT2Config()).to("cuda", torch.float32).eval()
    ids = torch.randint(0, 50257, (1, 1024), device="cuda")

    def decode(n=128):
        with torch.no_grad():
            out = model(ids[:, :1], use_cache=True)
            past = out.past_key_values
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for p in range(1, n + 1):
                out = model(ids[:, p:p + 1], past_key_values=past,
                            use_cache=True)
                past = out.past_key_values
                out.logits[0, -1].cpu()
            torch.cuda.synchronize()
            return n / (time.perf_counter() - t0)

    def prefill(n=512):
        with torch.no_grad():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(ids[:, :n], use_cache=True)
            out.logits[0, -1].cpu()
            torch.cuda.synchronize()
            return time.perf_counter() - t0

    decode(16)
    prefill()
    dec = [decode() for _ in range(3)]
    pre = [prefill() for _ in range(5)]
    out = {
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "device": torch.cuda.get_device_name(0),
        "hf_eager_decode_tokens_per_s_pos1_128": statistics.median(dec),
        "hf_eager_decode_runs": dec,
        "hf_eager_prefill_512_s": statistics.median(pre),
        "hf_eager_prefill_512_tokens_per_s": 512 / statistics.median(pre),
    }
    try:
        out.update(static_compiled(model, ids))
    except Exception as e:  # recorded, the eager figures still printed
        out["hf_static_compile_error"] = repr(e)[:2000]
    json.dump(out, sys.stdout, indent=2)
    print()


def static_compiled(model, ids, n=128):
    """Decode with a StaticCache, the forward compiled by torch.compile
    (mode "reduce-overhead": CUDA graphs, fullgraph), one token a call at
    cache_position p, each step's last logits cloned and copied to the host
    (as the eager loop); the same loop uncompiled for comparison. The
    cache is filled once eagerly first, so that its tensors are created
    outside the compiled graphs; torch.compiler.cudagraph_mark_step_begin()
    before each call (the CUDA graphs' outputs are reused)."""
    from transformers import StaticCache
    try:
        cache = StaticCache(config=model.config, max_cache_len=n + 8)
    except TypeError:  # transformers 4.x
        cache = StaticCache(config=model.config, max_batch_size=1,
                            max_cache_len=n + 8, device="cuda",
                            dtype=torch.float32)
    positions = [torch.tensor([p], device="cuda") for p in range(n + 1)]

    def run(fwd, mark):
        with torch.no_grad():
            cache.reset()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for p in range(n + 1):
                if p == 1:  # position 0 is the prompt; time 1..n
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                if mark:
                    torch.compiler.cudagraph_mark_step_begin()
                out = fwd(input_ids=ids[:, p:p + 1], past_key_values=cache,
                          cache_position=positions[p], use_cache=True)
                out.logits[0, -1].clone().cpu()
            torch.cuda.synchronize()
            return n / (time.perf_counter() - t0)

    eager = [run(model.forward, False) for _ in range(3)]
    t0 = time.perf_counter()
    fwd = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)
    run(fwd, True)
    run(fwd, True)
    compile_s = time.perf_counter() - t0
    compiled = [run(fwd, True) for _ in range(3)]
    return {
        "hf_static_eager_decode_tokens_per_s_pos1_128": statistics.median(
            eager),
        "hf_static_compile_decode_tokens_per_s_pos1_128": statistics.median(
            compiled),
        "hf_static_compile_decode_runs": compiled,
        "hf_static_compile_warmup_s": compile_s,
    }


if __name__ == "__main__":
    main()
