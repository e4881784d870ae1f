#!/usr/bin/env python3
"""Merges the JSON lines of scripts/certify-tiny-sweep.sh (one object per
shard of `lockstep certify-tiny --all-inputs --shard i/256 --json`; a shard
present in several files counts once, and its copies must agree) into one
summary:  scripts/certify-tiny-merge.py A/sweep.jsonl [B/sweep.jsonl ...]"""
import json
import sys

by_shard = {}
for path in sys.argv[1:]:
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        key = r["shard"]
        same = {k: v for k, v in r.items() if k not in ("seconds", "threads",
                                                       "estimated_full_seconds")}
        if key in by_shard:
            old = {k: v for k, v in by_shard[key].items()
                   if k not in ("seconds", "threads", "estimated_full_seconds")}
            if json.dumps(old, sort_keys=True) != json.dumps(same, sort_keys=True):
                # sum_bound adds in a thread-dependent order: compare the rest
                diff = [k for k in same if same[k] != old.get(k)]
                if set(diff) - {"sum_bound", "mean_bound",
                                "sum_bound_all_positions",
                                "mean_bound_all_positions", "positions_0_1_2"}:
                    sys.exit(f"shard {key}: copies differ in {diff}")
            continue
        by_shard[key] = r
rows = list(by_shard.values())


def merge(items):
    m = {"inputs": 0, "max_bound": 0.0, "sum_bound": 0.0, "over_goal": 0,
         "second_pass": 0, "worst_tokens": ""}
    for s in items:
        if s["inputs"] and s["max_bound"] > m["max_bound"]:
            m["max_bound"], m["worst_tokens"] = s["max_bound"], s["worst_tokens"]
        for k in ("inputs", "sum_bound", "over_goal", "second_pass"):
            m[k] += s[k]
    m["mean_bound"] = m["sum_bound"] / m["inputs"] if m["inputs"] else 0
    return m


shards = sorted(int(r["shard"].split("/")[0]) for r in rows)
missing = [i for i in range(256) if i not in shards]
inputs = sum(r["inputs"] for r in rows)
out = {"shards_done": len(rows), "shards_missing": missing,
       "inputs": inputs, "fraction_of_2^32": inputs / 2**32,
       "position_3": merge(rows),
       "positions_0_1_2": [merge([r["positions_0_1_2"][p] for r in rows])
                           for p in range(3)],
       "max_bound_all_positions":
           max((r["max_bound_all_positions"] for r in rows), default=0),
       "mean_bound_all_positions":
           sum(r["sum_bound_all_positions"] for r in rows) / inputs
           if inputs else 0,
       "shard_seconds_sum": sum(r["seconds"] for r in rows)}
print(json.dumps(out, indent=1))
