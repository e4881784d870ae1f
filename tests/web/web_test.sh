#!/usr/bin/env bash
# The browser page (docs/browser.md), in two tests:
#   web_controller  lockstep-web.wasm's controller against lockstep.wasm in
#                   Node.js (tests/web/controller_test.mjs)
#   web_e2e         Debian's chromium through playwright-core, WebGPU on
#                   SwiftShader (tests/web/e2e.mjs); exit 77 (skipped) only
#                   when the browser offers no WebGPU adapter
# playwright-core comes from the committed package-lock.json (npm ci) when
# tests/web/node_modules lacks it; no node, npm, registry or chromium is a
# failure that says so, never a skip.
# Usage: web_test.sh controller|e2e LOCKSTEP_BINARY REPO_ROOT WASM_DIR
set -u
what=$1
bin=$2
root=$3
wasm=$4
dir=$root/tests/web
command -v node >/dev/null || { echo "FAIL: node is needed (scripts/setup.sh installs nodejs)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $what in
  controller)
    # The controller module: one import (the memory), nothing that could
    # grow it, no fused multiply-add; its recorded digest.
    m=$wasm/lockstep-web.wasm
    x=$(wasm-objdump -x "$m") || { echo "FAIL: wasm-objdump -x $m"; exit 1; }
    imports=$(sed -n 's/^Import\[\([0-9]*\)\]:$/\1/p' <<<"$x")
    { [ "$imports" = 1 ] && grep -q ' - memory\[0\] .* <- env.memory' <<<"$x"; } ||
      { echo "FAIL: $m imports: $imports"; exit 1; }
    wasm-objdump -d "$m" | grep -qE 'memory\.grow|fma|relaxed' &&
      { echo "FAIL: $m contains memory.grow or a fused multiply-add"; exit 1; }
    [ "$(sha256sum "$m" | cut -d' ' -f1)" = "$(cut -d' ' -f1 "$m.sha256")" ] ||
      { echo "FAIL: $m.sha256 does not match"; exit 1; }
    echo "ok   $m: imports only env.memory, no memory.grow, no fma, digest recorded"
    "$bin" convert "$root/tests/data/hf-gpt2-A" "$tmp/hf.lockstep" \
      >"$tmp/convert.log" 2>&1 || { cat "$tmp/convert.log"; echo "FAIL: lockstep convert"; exit 1; }
    "$bin" convert "$root/tests/data/hf-gpt2-A" "$tmp/hf-int8.lockstep" --quant int8 \
      >"$tmp/convert.log" 2>&1 || { cat "$tmp/convert.log"; echo "FAIL: lockstep convert --quant int8"; exit 1; }
    exec node "$dir/controller_test.mjs" "$wasm" "$root/tests/data/hf-gpt2-A" \
      "$tmp/hf.lockstep" "$tmp/hf-int8.lockstep"
    ;;
  e2e)
    if [ ! -f "$dir/node_modules/playwright-core/package.json" ]; then
      command -v npm >/dev/null || { echo "FAIL: npm is needed to install playwright-core (scripts/setup.sh)"; exit 1; }
      npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error ||
        { echo "FAIL: npm ci could not install playwright-core into $dir/node_modules (no registry?)"; exit 1; }
    fi
    [ -x /usr/bin/chromium ] || { echo "FAIL: /usr/bin/chromium is needed (scripts/setup.sh installs Debian's chromium)"; exit 1; }
    # Bad flags are errors with a message, not a server.
    for args in "--mount nope" "--mount /x=$tmp/missing" "--port 70000" "--web $tmp/missing"; do
      # shellcheck disable=SC2086
      if "$bin" serve-web $args --check >"$tmp/bad.log" 2>&1; then
        echo "FAIL: serve-web $args succeeded"; exit 1
      fi
      grep -qi "error\|not a folder\|wants\|not in range\|not exist" "$tmp/bad.log" ||
        { cat "$tmp/bad.log"; echo "FAIL: serve-web $args: no message"; exit 1; }
    done
    echo "ok   serve-web refuses bad --mount, --port and --web"
    # serve-web serves the modules next to the binary's build.
    exec node "$dir/e2e.mjs" --lockstep "$bin" --repo "$root" --tokens 12
    ;;
esac
echo "usage: web_test.sh controller|e2e LOCKSTEP REPO WASM_DIR"
exit 2
