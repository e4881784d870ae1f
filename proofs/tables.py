#!/usr/bin/env python3
"""Prints docs/proofs.md's two goal tables (per function, per class) as
Markdown, counted from proofs/expected.txt, so the tables are regenerated
rather than recounted by hand:

    python3 proofs/tables.py [proofs/expected.txt]

Per function: the goal lines of each unit and their statuses ("proved" is
proved in WP, "external" is closed by a Gappa or SMT-LIB file, anything
else is not proved). Per class: report.py's goal_class of each goal."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import goal_class  # noqa: E402

CLASS_ORDER = [
    "RTE: memory access", "RTE: array index", "RTE: signed overflow",
    "RTE: float to int", "RTE: signed downcast", "RTE: other",
    "termination (loop variant)", "assigns", "loop assigns",
    "loop invariant", "callee precondition", "assertion (annotation)",
    "postcondition", "order (spec's operations)", "lemma", "other"
]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "expected.txt")
    units, ci, goals = [], {}, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if parts[0] == "unit":
                units.append(parts[1])
                ci[parts[1]] = parts[2] == "ci"
            elif len(parts) >= 3:
                goals.append((parts[0], parts[1], parts[2]))
    per = {u: [0, 0, 0, 0] for u in units}  # goals, proved, external, other
    cls = {}
    for fct, goal, status in goals:
        row = per.setdefault(fct, [0, 0, 0, 0])
        row[0] += 1
        k = {"proved": 1, "external": 2}.get(status, 3)
        row[k] += 1
        c = cls.setdefault(goal_class(goal), [0, 0, 0, 0])
        c[0] += 1
        c[k] += 1
    print("| function | CI | goals | proved in WP | external | not proved |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    total = [0, 0, 0, 0]
    for u in per:
        r = per[u]
        total = [a + b for a, b in zip(total, r)]
        print(f"| `{u}` | {'yes' if ci.get(u) else ''} | {r[0]} | {r[1]} |"
              f" {r[2]} | {r[3]} |")
    print(f"| **total** | | {total[0]} | {total[1]} | {total[2]} |"
          f" {total[3]} |")
    print()
    print("| goal class | goals | proved in WP | external | not proved |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in CLASS_ORDER + sorted(set(cls) - set(CLASS_ORDER)):
        if name in cls:
            r = cls[name]
            print(f"| {name} | {r[0]} | {r[1]} | {r[2]} | {r[3]} |")


if __name__ == "__main__":
    main()
