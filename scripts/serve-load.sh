#!/usr/bin/env bash
# A bounded load test of lockstep serve on loopback (docs/serve.md "Load"):
# starts the trained model's server on a free port, sends every distinct
# request alone, then CLIENTS concurrent clients send REQUESTS requests,
# each answer checked equal to the same request's answer alone; prints
# throughput and latency percentiles and writes them as JSON.
#   bash scripts/serve-load.sh [LOCKSTEP_BINARY] [OUT_JSON] [-- serve options]
# Environment: CLIENTS (8), REQUESTS (500), DISTINCT (16), MAX_TOKENS (32),
# MODEL (models/shakespeare-gpt2). Not part of CI: it takes minutes on a
# small machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/lockstep}
out=${2:-bench-results/serve-load-$(date -u +%Y%m%dT%H%M%SZ).json}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
mkdir -p "$(dirname "$out")"
log=$(mktemp)
"$bin" serve --model "${MODEL:-models/shakespeare-gpt2}" --port 0 "$@" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 600); do
  port=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\)/v1.*|\1|p' "$log")
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "serve-load: the server did not start" >&2; exit 1; }
head -1 "$log"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
python3 scripts/serve_load.py --url "127.0.0.1:$port" \
  --clients "${CLIENTS:-8}" --requests "${REQUESTS:-500}" \
  --distinct "${DISTINCT:-16}" --max-tokens "${MAX_TOKENS:-32}" --json "$out"
echo "wrote $out"
