#!/usr/bin/env bash
# lockstep serve with a real client: the npm package `openai`
# (tests/serve_client/test.mjs) pointed at the trained model's server.
# The client is installed from the committed package-lock.json (npm ci)
# when tests/serve_client/node_modules lacks it; no Node.js, no npm or no
# registry is a failure that says so, never a skip.
# Usage: serve_client_test.sh LOCKSTEP_BINARY REPO_ROOT
set -u
bin=$1
root=$2
dir=$root/tests/serve_client
tmp=$(mktemp -d)
# shellcheck source=serve_lib.sh
. "$root/tests/serve_lib.sh"
trap 'stop_servers; rm -rf "$tmp"' EXIT

command -v node >/dev/null || { echo "FAIL: node is needed (scripts/setup.sh installs nodejs)"; exit 1; }
if [ ! -f "$dir/node_modules/openai/package.json" ]; then
  command -v npm >/dev/null || { echo "FAIL: npm is needed to install the openai client (scripts/setup.sh)"; exit 1; }
  npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error ||
    { echo "FAIL: npm ci could not install the openai client into $dir/node_modules (no registry?)"; exit 1; }
fi

start_server s --model "$root/models/shakespeare-gpt2" --sessions 2 --threads 1
node "$dir/test.mjs" "http://127.0.0.1:$s_port/v1"
status=$?
[ "$status" = 0 ] || { echo "server log:"; tail -20 "$tmp/s.log"; }
exit "$status"
