# Shared by the lockstep serve tests (sourced): start a server on a free
# port and stop it. Needs $bin (the lockstep binary) and $tmp (a scratch
# folder the caller removes).

servers=()

# start_server NAME ARGS...: runs `lockstep serve --port 0 ARGS...` with its
# log in $tmp/NAME.log and sets NAME_port (e.g. a_port) from the log's
# "listening on" line; fails the script when no such line comes within
# 60 s (a sanitizer build loads the model slowly).
start_server() {
  local name=$1
  shift
  "$bin" serve --port 0 "$@" 2>"$tmp/$name.log" &
  local pid=$!
  servers+=("$pid")
  eval "${name}_pid=$pid"
  local port=""
  for _ in $(seq 1 600); do
    port=$(sed -n 's|.*listening on http://[^:]*:\([0-9]*\)/v1.*|\1|p' "$tmp/$name.log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "FAIL: server $name did not start: $(cat "$tmp/$name.log")" >&2
    exit 1
  fi
  eval "${name}_port=$port"
}

# Stops every server still running (the scripts' EXIT trap).
stop_servers() {
  local p
  for p in "${servers[@]}"; do
    kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  return 0
}
