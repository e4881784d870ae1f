#!/usr/bin/env python3
"""Reads the frama-c logs of proofs/run.sh, prints every goal with its
status, compares with proofs/expected.txt and exits 1 on any mismatch that
matters: a goal expected proved that is not, a goal not listed, or a listed
goal that was not generated (docs/proofs.md)."""
import os
import re
import sys

GOAL = re.compile(r"^\[wp\] \[([^\]]+)\] Goal (\S+)(?: : (\S+))?")
DETAIL = re.compile(r"^\s+(\S.*?): (.*)$")
# WP's smoke tests (run.sh --smoke): "Passed" means the prover could NOT
# prove false there (the preconditions, the loop invariants or the code
# point are consistent/reachable); "Failed" means false was proved: dead
# code or contradictory assumptions, which would make every goal behind
# them vacuous.
SMOKE = re.compile(r"^\[wp\] \[([^\]]+)\] Smoke-test (\S+)")


def short(goal):
    return re.sub(r"^typed_(lockstep_)?", "", goal)


def goal_class(goal):
    """The kind of a goal, from WP's name."""
    for key, name in (
        ("rte_mem_access", "RTE: memory access"),
        ("rte_index_bound", "RTE: array index"),
        ("rte_signed_overflow", "RTE: signed overflow"),
        ("rte_float_to_int", "RTE: float to int"),
        ("rte_signed_downcast", "RTE: signed downcast"),
        ("rte_", "RTE: other"),
        ("loop_variant", "termination (loop variant)"),
        ("loop_assigns", "loop assigns"),
        ("assigns", "assigns"),
        ("loop_invariant", "loop invariant"),
        ("requires", "callee precondition"),
        ("order_ensures", "order (spec's operations)"),
        ("ensures", "postcondition"),
        ("assert", "assertion (annotation)"),
        ("lemma", "lemma"),
    ):
        if key in goal:
            return name
    return "other"


def parse_log(path):
    """The goals of one frama-c log, and its smoke tests (name: tag)."""
    goals = {}
    smoke = {}
    last = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            s = SMOKE.match(line)
            if s:
                smoke[short(s.group(2))] = s.group(1)
                last = None
                continue
            m = GOAL.match(line)
            if m:
                tag, name, status = m.group(1), short(m.group(2)), m.group(3)
                if "_wp_smoke_" in name:
                    # Reported by its Smoke-test line; its name carries
                    # statement ids, so it is not listed in expected.txt.
                    last = None
                    continue
                # A function's goals are named after it (WP's naming);
                # lemmas are named lemma_<name>.
                if status == "Valid":
                    goals[name] = ("proved", tag)
                    last = None
                else:
                    goals[name] = ("unproved", [])
                    last = name
                continue
            if last is not None:
                d = DETAIL.match(line)
                if d and not line.startswith("["):
                    what = d.group(2)
                    # z3 prints "timeout" when -T expires; Why3 1.5's z3
                    # driver reports that as an unknown failure.
                    what = what.replace("Failed Unknown error", "timeout")
                    goals[last][1].append(d.group(1) + ": " + what)
                else:
                    last = None
    return goals, smoke


def main():
    expected_path, work, mode, write_expected = sys.argv[1:5]
    fcts = sys.argv[5:]
    units = {}
    expected = {}
    with open(expected_path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split(None, 3)
            if parts[0] == "unit":
                units[parts[1]] = parts[2]
                continue
            fct, goal, status = parts[0], parts[1], parts[2]
            reason = parts[3] if len(parts) > 3 else ""
            expected.setdefault(fct, {})[goal] = (status, reason)

    external = {}
    ext_path = os.path.join(work, "external")
    if os.path.exists(ext_path):
        with open(ext_path, encoding="utf-8") as f:
            for line in f:
                name, rest = line.split(None, 1)
                external[name] = rest.strip()

    failures = []
    rows = []
    out_lines = []
    classes = {}
    smoke_on = os.environ.get("LS_SMOKE", "0") != "0"
    smoke_rows = []
    for fct in fcts:
        seen, smoke = parse_log(os.path.join(work, fct + ".log"))
        exp = expected.get(fct, {})
        n_proved = 0
        n_expected_open = 0
        n_fail = 0
        print(f"== {fct}")
        if smoke_on:
            bad = sorted(n for n, t in smoke.items() if t == "Failed")
            for n in sorted(smoke):
                print(f"  smoke     {smoke[n]:<12} {n}")
            for n in bad:
                failures.append(f"{fct} {n}: smoke test failed (false is"
                                f" provable there: dead code or"
                                f" contradictory assumptions)")
            smoke_rows.append((fct, len(smoke) - len(bad), len(smoke)))
        for goal in sorted(seen):
            status, info = seen[goal]
            e = exp.get(goal)
            if status == "proved":
                n_proved += 1
                note = ""
                if e and e[0] != "proved":
                    note = "  (listed as unproved: now proved, update expected.txt)"
                print(f"  proved    {info:<12} {goal}{note}")
                out_lines.append(f"{fct} {goal} proved")
            else:
                detail = "; ".join(info) if info else "no prover answer"
                if e and e[0] == "external":
                    # Proved outside WP: the file named first in the reason
                    # must be unsat for z3 and cvc5 (nia/*.smt2) or proved
                    # by Gappa (gappa/*.g).
                    smt = e[1].split()[0]
                    res = external.get(smt, "not run")
                    if res in ("z3=unsat cvc5=unsat", "gappa=proved"):
                        n_proved += 1
                        tool = res.split("=")[0] if "gappa" in res else "z3+cvc5"
                        print(f"  proved    {tool + ' ext':<12} {goal}"
                              f" ({smt}; in WP: {detail})")
                        out_lines.append(f"{fct} {goal} external {e[1]}")
                    else:
                        n_fail += 1
                        print(f"  UNPROVED  (external) {goal}: {smt}: {res}")
                        failures.append(f"{fct} {goal}: {smt}: {res}")
                        out_lines.append(f"{fct} {goal} external {e[1]}")
                elif e and e[0] == "unproved":
                    n_expected_open += 1
                    print(f"  unproved  (expected)   {goal}: {detail}")
                    print(f"            why: {e[1]}")
                    out_lines.append(f"{fct} {goal} unproved {e[1]}")
                else:
                    n_fail += 1
                    print(f"  UNPROVED  (expected proved) {goal}: {detail}")
                    failures.append(f"{fct} {goal}: not proved ({detail})")
                    out_lines.append(f"{fct} {goal} unproved TODO")
            c = classes.setdefault(goal_class(goal), [0, 0, 0])
            c[0] += 1
            if status == "proved":
                c[1] += 1
            elif e and e[0] == "external":
                c[2] += 1
            if e is None:
                failures.append(f"{fct} {goal}: not listed in expected.txt")
        for goal in sorted(set(exp) - set(seen)):
            failures.append(f"{fct} {goal}: listed but not generated")
            print(f"  MISSING   {goal} (listed in expected.txt)")
        rows.append((fct, n_proved, len(seen), n_expected_open, n_fail))

    print()
    print(f"{'function':<28} {'proved':>7} {'goals':>6} {'open':>5} {'fail':>5}")
    tp = tg = to = tf = 0
    for fct, p, g, o, fl in rows:
        print(f"{fct:<28} {p:>7} {g:>6} {o:>5} {fl:>5}")
        tp, tg, to, tf = tp + p, tg + g, to + o, tf + fl
    print(f"{'total':<28} {tp:>7} {tg:>6} {to:>5} {tf:>5}")
    print("(open: not proved, and listed as such in proofs/expected.txt with"
          " the reason)")
    if smoke_on:
        print()
        print(f"{'function':<28} {'smoke ok':>9} {'smoke':>6}")
        for fct, ok, n in smoke_rows:
            print(f"{fct:<28} {ok:>9} {n:>6}")
        print(f"{'total':<28} {sum(r[1] for r in smoke_rows):>9}"
              f" {sum(r[2] for r in smoke_rows):>6}")
        print("(smoke ok: the prover could not prove false at that"
              " precondition set, invariant or statement)")
    print()
    print(f"{'goal class':<30} {'goals':>6} {'in WP':>6} {'external':>9}")
    for name in sorted(classes):
        g, p, x = classes[name]
        print(f"{name:<30} {g:>6} {p:>6} {x:>9}")

    if write_expected:
        with open(write_expected, "w", encoding="utf-8") as f:
            for fct in fcts:
                f.write(f"unit {fct} {units.get(fct, 'full')}\n")
            for line in out_lines:
                f.write(line + "\n")
        print(f"wrote {write_expected}")

    if failures:
        print(f"\nFAILED: {len(failures)} problem(s)")
        for x in failures:
            print("  " + x)
        return 1
    print("\nOK: every goal has its expected status")
    return 0


if __name__ == "__main__":
    sys.exit(main())
