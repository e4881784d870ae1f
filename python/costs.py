"""What each call of the C ABI costs, timed through the Python binding
(docs/library.md "Costs"): the median of --runs runs of each call.

    LOCKSTEP_LIBRARY=build/lib/liblockstep.so \
      python3 python/costs.py --model models/shakespeare-gpt2 --threads 2

The ctypes call itself is measured too (lockstep_session_position, which
does nothing), so what the binding adds can be told from what the library
spends; logits are copied into a numpy array on every step and prefill.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockstep  # noqa: E402


def median_ms(f, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--prompt-tokens", type=int, default=64)
    a = p.parse_args()

    rows = []
    rows.append(("lockstep_model_load", median_ms(
        lambda: lockstep.Model(a.model).close(), a.runs)))
    model = lockstep.Model(a.model)
    rows.append(("lockstep_tokenizer_load", median_ms(
        lambda: lockstep.Tokenizer().close(), a.runs)))
    tok = lockstep.Tokenizer()
    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "data", "tinyshakespeare.txt")).read()
    text = text[:4096]
    rows.append(("lockstep_tokenize (4 KiB of text)", median_ms(
        lambda: tok.encode(text), a.runs)))
    prompt = tok.encode(text)[:a.prompt_tokens]
    rows.append(("lockstep_session_create", median_ms(
        lambda: lockstep.Session(model, a.backend, a.threads).close(),
        a.runs)))
    s = lockstep.Session(model, a.backend, a.threads)

    def prefill():
        s.reset()
        s.prefill(prompt)

    def steps():
        s.reset()
        for t in prompt:
            s.step(t)

    n = len(prompt)
    rows.append(("lockstep_session_prefill (%d tokens)" % n,
                 median_ms(prefill, a.runs)))
    rows.append(("lockstep_session_step x %d (the same tokens)" % n,
                 median_ms(steps, a.runs)))
    s.reset()
    logits = s.prefill(prompt)
    greedy = lockstep.Sampler(model.n_vocab)
    nucleus = lockstep.Sampler(model.n_vocab, top_p=0.9, seed=1)
    rows.append(("lockstep_sampler_next (greedy)", median_ms(
        lambda: greedy.next(logits), a.runs)))
    rows.append(("lockstep_sampler_next (top_p 0.9)", median_ms(
        lambda: nucleus.next(logits), a.runs)))

    def gen():
        s.reset()
        lockstep.generate(s, greedy, prompt, 32)

    rows.append(("lockstep_generate (%d-token prompt, 32 new)" % n,
                 median_ms(gen, a.runs)))
    rows.append(("a ctypes call (lockstep_session_position)", median_ms(
        lambda: s.position, a.runs * 20)))

    print("model %s (n_ctx %d, n_embd %d, n_layer %d), backend %s, "
          "%d runs each, median:" % (a.model, model.n_ctx, model.n_embd,
                                     model.n_layer, s.backend, a.runs))
    for name, ms in rows:
        print("  %-48s %12.4f ms" % (name, ms))
    pf = dict(rows)["lockstep_session_prefill (%d tokens)" % n]
    st = dict(rows)["lockstep_session_step x %d (the same tokens)" % n]
    print("  steps / prefill: %.2fx" % (st / pf))


if __name__ == "__main__":
    main()
