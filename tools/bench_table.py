#!/usr/bin/env python3
"""Prints `lockstep bench --json` results as a Markdown table (docs/benchmarks.md).

usage: bench_table.py RESULT.json [RESULT.json ...]
One column per thread count; rows are the figures the file holds.
"""
import json
import sys

ROWS = [
    ("backend_name", "backend", "{}"),
    ("bandwidth_gbps", "read bandwidth, GB/s", "{:.1f}"),
    ("decode_floor_tokens_per_s", "decode floor, tok/s", "{:.1f}"),
    ("decode_tokens_per_s_pos0_127", "decode 0-127, tok/s", "{:.1f}"),
    ("decode_vs_floor", "decode / floor", "{:.2f}"),
    ("decode_tokens_per_s_pos896_1023", "decode 896-1023, tok/s", "{:.1f}"),
    ("nonfma_peak_gflops", "non-FMA peak, GFLOP/s", "{:.0f}"),
    ("prefill128_tokens_per_s", "full pass 128, tok/s", "{:.0f}"),
    ("prefill_vs_nonfma_peak", "full pass 128 / peak", "{:.2f}"),
    ("nonfma_best_peak_gflops", "best non-FMA peak of the run, GFLOP/s",
     "{:.0f}"),
]


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            d = json.load(f)
        keys = sorted(d["backend_name"].keys(), key=int)
        rows = list(ROWS)
        for k in sorted(d):
            if k.startswith("ttft_prefill_s_"):
                n = k[len("ttft_prefill_s_"):]
                rows += [
                    (k, f"TTFT {n} prefill, s", "{:.3f}"),
                    (f"ttft_stepping_s_{n}", f"TTFT {n} stepping, s", "{:.2f}"),
                    (f"ttft_speedup_{n}", f"stepping / prefill ({n})", "{:.1f}"),
                    (f"prefill_cache_{n}_tokens_per_s", f"prefill {n}, tok/s",
                     "{:.0f}"),
                    (f"prefill_cache_{n}_vs_nonfma_peak",
                     f"prefill {n} / best peak", "{:.2f}"),
                ]
        if "decode_tokens_per_s_pos896_1023" in d:
            d["long_vs_short"] = {
                t: d["decode_tokens_per_s_pos896_1023"][t] /
                d["decode_tokens_per_s_pos0_127"][t]
                for t in d["decode_tokens_per_s_pos896_1023"]
            }
            rows.append(("long_vs_short", "decode 896-1023 / 0-127", "{:.2f}"))
        print(f"`{path}`: {d.get('model', '')}\n")
        print("| threads | " + " | ".join(keys) + " |")
        print("| --- |" + " --- |" * len(keys))
        for key, label, fmt in rows:
            if key not in d:
                continue
            cells = [fmt.format(d[key][t]) if t in d[key] else "" for t in keys]
            print(f"| {label} | " + " | ".join(cells) + " |")
        mem = d.get("session_memory_bytes", {})
        if mem:
            print("| session memory, MB | " + " | ".join(
                f"{mem[t] / 1e6:.0f}" for t in keys) + " |")
        print()


if __name__ == "__main__":
    main()
