#!/usr/bin/env bash
# Frama-C/WP proofs of the kernel core's ACSL contracts (docs/proofs.md).
#
#   bash proofs/run.sh            every unit of proofs/expected.txt
#   bash proofs/run.sh --ci       the CI-sized part (CTest proofs_wp)
#   bash proofs/run.sh ls_dot64   named functions only
#   options: --timeout S (per goal and prover, wall clock; default 30)
#            --jobs N (provers in parallel; default 2)
#            --write-expected FILE (write the statuses seen, for review)
#            --smoke (also WP's smoke tests: each precondition set, loop
#              invariant set and statement must NOT be provable false;
#              a smoke test that is proved means dead code or an
#              inconsistent contract, and fails the run)
#            --smoke-timeout S (per smoke test and prover; default 5: a
#              consistent one runs until the limit, so this sets the cost)
#            --provers LIST (WP's -wp-prover list, tried in that order on
#              each goal until one proves it; default z3,cvc5; also
#              z3-noauto: z3 with smt.auto_config=false; given, it
#              replaces the per-unit default orders below)
#            --unit-provers UNIT=LIST (that unit's order; repeatable)
#            --keep-work (keep the work folder: frama-c logs, per-unit
#              times in its file times; its path is printed)
#
# Each function is proved by its own frama-c run: -wp-rte (runtime-error
# guards), the float model (IEEE binary32/64), z3 then cvc5 (or the
# --provers list, in its order) on every goal WP's simplifier (Qed) does
# not close. Every goal is printed with its status and the prover that
# closed it, and compared with
# proofs/expected.txt: the run fails if a goal listed as proved is not, if
# a goal is missing from the expected list (new goals must be listed), or if
# an expected goal was not generated (no goal is dropped silently).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
timeout=30
jobs=2
mode=all
write_expected=""
smoke=()
smoke_timeout=5
provers=z3,cvc5
provers_given=0
unit_provers=()
keep_work=0
fcts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) mode=ci ;;
    --timeout) timeout="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --write-expected) write_expected="$2"; shift ;;
    --smoke) smoke=(-wp-smoke-tests) ;;
    --smoke-timeout) smoke_timeout="$2"; shift ;;
    --provers) provers="$2"; provers_given=1; shift ;;
    --unit-provers) unit_provers+=("$2"); shift ;;
    --keep-work) keep_work=1 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) fcts+=("$1") ;;
  esac
  shift
done
# Per-unit default orders (docs/proofs.md, "Run time"): units whose value
# goals z3 does not prove in 10 s and cvc5 proves fast try cvc5 first.
default_unit_provers=(ls_tanh64=cvc5,z3 ls_tanh32=cvc5,z3 ls_gelu32=cvc5,z3
  ls_dot64=cvc5,z3 ls_tiny_logits_checked=cvc5,z3 ls_matvec64=cvc5,z3
  ls_matvec32_finish=cvc5,z3)
if [ "$provers_given" = 0 ]; then
  unit_provers=("${default_unit_provers[@]}" "${unit_provers[@]}")
fi
provers_of() {  # the prover order of unit $1 (the last match wins)
  local p="$provers" u
  for u in "${unit_provers[@]}"; do
    [ "${u%%=*}" = "$1" ] && p="${u#*=}"
  done
  echo "$p"
}
[ ${#smoke[@]} -eq 0 ] || smoke+=(-wp-smoke-timeout "$smoke_timeout")

for tool in frama-c why3 z3 cvc5 gappa python3; do
  command -v "$tool" >/dev/null || {
    echo "run.sh: $tool not found (bash scripts/setup.sh installs it)" >&2
    exit 2
  }
done

expected="$here/expected.txt"
# The functions to prove: from expected.txt's "unit" lines, in order.
# "unit NAME ci|full" lines name the functions; --ci takes the ci ones.
if [ ${#fcts[@]} -eq 0 ]; then
  while read -r kw name part; do
    [ "$kw" = unit ] || continue
    if [ "$mode" = all ] || [ "$part" = ci ]; then fcts+=("$name"); fi
  done <"$expected"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/lockstep-wp.XXXXXX")"
if [ "$keep_work" = 1 ]; then
  echo "run.sh: work folder $work (kept)"
else
  trap 'rm -rf "$work"' EXIT
fi
# Why3 1.5 has no cvc5 entry: a configuration of our own with z3 (Why3's
# own z3 4.8 driver) and cvc5 (proofs/cvc5.drv.in, CVC4 1.7's driver with
# cvc5's logic name). HOME is the work folder, so no user configuration or
# WP cache is read.
datadir="$(why3 --print-datadir)"
sed "s|@WHY3_DATADIR@|$datadir|" "$here/cvc5.drv.in" >"$work/cvc5.drv"
z3v="$(z3 -version | sed -n 's/^Z3 version \([0-9.]*\).*/\1/p')"
cvc5v="$(cvc5 --version | sed -n 's/^This is cvc5 version \([0-9.]*\).*/\1/p')"
# z3 with fixed seeds; the z3-noauto entry adds smt.auto_config=false.
z3="$(command -v z3) -smt2 sat.random_seed=42 nlsat.randomize=false smt.random_seed=42"
cat >"$work/why3.conf" <<EOF
[main]
magic = 14
memlimit = 2000
running_provers_max = $jobs
timelimit = $timeout

[prover]
command = "$z3 -T:%t -st %f"
command_steps = "$z3 -st rlimit=%S %f"
driver = "z3_471"
editor = ""
in_place = false
interactive = false
name = "Z3"
shortcut = "z3"
version = "$z3v"

[prover]
command = "$(command -v cvc5) --tlimit-per=%t000 --fp-lazy-wb --lang=smt2 %f"
command_steps = "$(command -v cvc5) --rlimit=%S --fp-lazy-wb --lang=smt2 %f"
driver = "$work/cvc5.drv"
editor = ""
in_place = false
interactive = false
name = "CVC5"
shortcut = "cvc5"
version = "$cvc5v"

[prover]
command = "$z3 -T:%t smt.auto_config=false -st %f"
command_steps = "$z3 smt.auto_config=false -st rlimit=%S %f"
driver = "z3_471"
editor = ""
in_place = false
interactive = false
name = "Z3"
alternative = "noauto"
shortcut = "z3-noauto"
version = "$z3v"
EOF

cd "$root"
sources=(core/ls_arith.c core/ls_ops64.c core/ls_ops32.c core/ls_tiny.c)
start=$(date +%s)
for f in "${fcts[@]}"; do
  log="$work/$f.log"
  t0=$(date +%s)
  if [ "$f" = lemmas ]; then
    sel=(-wp-prop=@lemma)  # the global lemmas of core/ls_arith.h
  else
    sel=(-wp-fct "$f")
  fi
  # -warn-special-float none: IEEE infinities and NaN are values, not
  # undefined behaviour (docs/arithmetic.md §3.4 defines them); the float
  # to int conversion, signed overflow and memory accesses are guarded.
  # proofs/sqrt_contracts.h (Frama-C's preprocessor only) gives
  # __builtin_sqrt and __builtin_sqrtf their IEEE contracts.
  HOME="$work" WHY3CONFIG="$work/why3.conf" FRAMAC_WP_CACHE=none \
    frama-c -machdep gcc_x86_64 \
    -cpp-extra-args="-I$root/core -include $here/sqrt_contracts.h" \
    "${sources[@]}" \
    -warn-special-float none -warn-signed-downcast \
    -wp -wp-rte -wp-driver "$here/lockstep.driver" -wp-model Typed+float \
    -wp-prover "$(provers_of "$f")" -wp-timeout "$timeout" -wp-par "$jobs" \
    -wp-no-warn-memory-model "${smoke[@]}" "${sel[@]}" >"$log" 2>&1 || {
    echo "run.sh: frama-c failed on $f:" >&2
    tail -20 "$log" >&2
    exit 2
  }
  echo "$f $(($(date +%s) - t0)) $(provers_of "$f")" >>"$work/times"
done
# Integer lemmas WP's provers cannot close in its context, stated as
# SMT-LIB files and proved by z3 and cvc5 alone (expected.txt: external).
for smt in "$here"/nia/*.smt2; do
  name="$(basename "$smt" .smt2)"
  r1="$(timeout "$timeout" z3 "$smt" 2>&1 || true)"
  r2="$(timeout "$timeout" cvc5 "$smt" 2>&1 || true)"
  echo "nia/$name.smt2 z3=$r1 cvc5=$r2" >>"$work/external"
done
# Floating-point range facts WP's provers cannot close (bit-level binary64
# products), stated as Gappa scripts (expected.txt: external).
for g in "$here"/gappa/*.g; do
  name="$(basename "$g")"
  if timeout "$timeout" gappa "$g" >"$work/gappa-$name.log" 2>&1; then
    echo "gappa/$name gappa=proved" >>"$work/external"
  else
    echo "gappa/$name gappa=failed" >>"$work/external"
  fi
done
echo "time: $(($(date +%s) - start)) s (timeout $timeout s per goal, $jobs jobs, provers $provers${unit_provers[*]:+ except ${unit_provers[*]}})"
sed 's/^/unit time (s): /' "$work/times"

LS_SMOKE=${#smoke[@]} python3 "$here/report.py" "$expected" "$work" "$mode" \
  "$write_expected" "${fcts[@]}"
