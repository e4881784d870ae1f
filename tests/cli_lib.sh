# Shared by the CLI test scripts (cli, layout_cli, q8_cli, verify_cli,
# certify_cli): counters and the expect helper. The sourcing script sets
# $bin (the lockstep binary) and pass=0 fail=0 first.

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN -- ARGS...: exit status CODE (or "nonzero") and
# PATTERN (extended regex, per line) somewhere in stdout+stderr.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out status
  out=$("$bin" "$@" 2>&1)
  status=$?
  if [ "$code" = nonzero ]; then
    [ "$status" -ne 0 ] || { bad "lockstep $* exited 0, expected failure: $out"; return; }
  elif [ "$status" -ne "$code" ]; then
    bad "lockstep $* exited $status, expected $code: $out"
    return
  fi
  if ! grep -Eq -- "$pattern" <<<"$out"; then
    bad "lockstep $*: output lacks /$pattern/: $out"
    return
  fi
  ok
}
