#!/usr/bin/env bash
# lockstep serve as a client meets it (docs/serve.md), with curl: the
# shipped trained model served on a free port of 127.0.0.1; completions,
# chat and streams equal to `lockstep generate` with the same settings
# (the same bytes and token ids); each step's logits digest equal to the
# SHA-256 of the row `lockstep logits` writes; the same answers from the
# reference backend, on a second run and under concurrent requests;
# logprobs; errors 400/404/413/429 with JSON messages; a client that
# disconnects mid-stream frees its session; SIGTERM stops the server.
# Usage: serve_test.sh LOCKSTEP_BINARY REPO_ROOT
set -u
bin=$1
root=$2
model=$root/models/shakespeare-gpt2
tmp=$(mktemp -d)
# shellcheck source=serve_lib.sh
. "$root/tests/serve_lib.sh"
trap 'stop_servers; rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
for tool in curl jq python3; do
  command -v $tool >/dev/null || { echo "FAIL: $tool is needed (scripts/setup.sh installs it)"; exit 1; }
done

# req PORT METHOD PATH [BODY]: the response body in $tmp/r.json, the
# status in $code.
req() {
  local port=$1 method=$2 path=$3
  if [ $# -ge 4 ]; then
    code=$(curl -s -o "$tmp/r.json" -w '%{http_code}' -X "$method" \
      -H 'Content-Type: application/json' --data-binary "$4" \
      "http://127.0.0.1:$port$path")
  else
    code=$(curl -s -o "$tmp/r.json" -w '%{http_code}' -X "$method" \
      "http://127.0.0.1:$port$path")
  fi
}
# jqr FILTER: jq -r on the last response.
jqr() { jq -r "$1" "$tmp/r.json"; }

# expect_error PORT PATH BODY STATUS PATTERN: an error status with a JSON
# {"error": {"message": ...}} whose message matches PATTERN.
expect_error() {
  req "$1" POST "$2" "$3"
  local msg
  msg=$(jq -r '.error.message' "$tmp/r.json" 2>/dev/null)
  if [ "$code" != "$4" ]; then
    bad "$2 $(head -c 200 <<<"$3"): status $code, expected $4: $(head -c 300 "$tmp/r.json")"
  elif ! grep -Eq -- "$5" <<<"$msg"; then
    bad "$2 $3: message '$msg' lacks /$5/"
  else
    ok
  fi
}

# same_as_generate NAME BODY PROMPT GENERATE_ARGS...: a completion equals
# `lockstep generate` with those arguments: its text, byte for byte (the
# prompt, the text, a newline on stdout), and its token ids (--json).
same_as_generate() {
  local name=$1 body=$2 prompt=$3
  shift 3
  req "$a_port" POST /v1/completions "$body"
  [ "$code" = 200 ] || { bad "$name: status $code: $(cat "$tmp/r.json")"; return; }
  cp "$tmp/r.json" "$tmp/$name.json"
  { printf '%s' "$prompt"; jq -j '.choices[0].text' "$tmp/$name.json"; echo; } >"$tmp/$name.served"
  "$bin" generate --model "$model" --text "$prompt" -q --threads 1 "$@" >"$tmp/$name.gen" 2>"$tmp/$name.err"
  "$bin" generate --model "$model" --text "$prompt" -q --threads 1 --json "$@" >"$tmp/$name.genjson" 2>>"$tmp/$name.err"
  if ! cmp -s "$tmp/$name.served" "$tmp/$name.gen"; then
    bad "$name: served text differs from generate: $(cat "$tmp/$name.served") VS $(cat "$tmp/$name.gen" "$tmp/$name.err")"
  elif [ "$(jq -c .lockstep.tokens "$tmp/$name.json")" != "$(jq -c .tokens "$tmp/$name.genjson")" ]; then
    bad "$name: token ids differ: $(jq -c .lockstep.tokens "$tmp/$name.json") VS $(jq -c .tokens "$tmp/$name.genjson")"
  else
    ok
  fi
}

# --- the command line ------------------------------------------------------
"$bin" serve --help >"$tmp/help" 2>&1 && grep -q "^Usage: .*lockstep serve \[OPTIONS\]" "$tmp/help" && ok || bad "serve --help: $(cat "$tmp/help")"
grep -q "POST /v1/completions" "$tmp/help" && ok || bad "serve --help lacks the routes"
out=$("$bin" serve --model tiny4 2>&1)
[ $? -eq 1 ] && grep -q "lockstep serve runs GPT-2 models; 'tiny4' is a tiny model" <<<"$out" && ok || bad "serve tiny4: $out"
out=$("$bin" serve --model "$model" --port 70000 2>&1)
[ $? -eq 2 ] && grep -q "port" <<<"$out" && ok || bad "serve --port 70000: $out"
out=$("$bin" serve --model "$model" --backend wasm 2>&1)
[ $? -eq 1 ] && grep -q "lockstep serve runs native backends" <<<"$out" && ok || bad "serve --backend wasm: $out"

# --- servers: cpu (2 sessions), reference, and a 1-session one for limits --
start_server a --model "$model" --sessions 2 --queue 8 --threads 1 --max-body 4
start_server b --model "$model" --backend reference --sessions 1
start_server c --model "$model" --backend reference --sessions 1 --queue 0
grep -q "listening on http://127.0.0.1:$a_port/v1 (model 'shakespeare-gpt2', payload sha256 [0-9a-f]\{64\}, backend cpu-[a-z0-9]* x1, 2 sessions, queue 8)" "$tmp/a.log" && ok || bad "listening line: $(cat "$tmp/a.log")"
payload=$("$bin" generate --model "$model" --text x --generate 1 --json -q | jq -r .payload_sha256)

# --- /v1/models --------------------------------------------------------------
req "$a_port" GET /v1/models
[ "$code" = 200 ] && [ "$(jqr '.object + " " + .data[0].id + " " + .data[0].lockstep.payload_sha256')" = "list shakespeare-gpt2 $payload" ] && ok || bad "/v1/models: $code $(cat "$tmp/r.json")"
[ "$(jqr '[.data[0].lockstep.n_ctx, .data[0].lockstep.n_vocab, .data[0].lockstep.sessions] | @csv')" = "512,50257,2" ] && ok || bad "/v1/models config: $(cat "$tmp/r.json")"
req "$a_port" GET /v1/models/shakespeare-gpt2
[ "$code" = 200 ] && [ "$(jqr .id)" = shakespeare-gpt2 ] && ok || bad "/v1/models/ID: $code"
req "$a_port" GET /v1/models/gpt-4
[ "$code" = 404 ] && [ "$(jqr .error.code)" = model_not_found ] && ok || bad "/v1/models/gpt-4: $code $(cat "$tmp/r.json")"

# --- completions equal to lockstep generate ---------------------------------
same_as_generate greedy '{"model":"shakespeare-gpt2","prompt":"ROMEO:","max_tokens":24,"temperature":0}' "ROMEO:" --generate 24
[ "$(jq -r '.choices[0].finish_reason + " " + .lockstep.finish + " " + (.usage.completion_tokens|tostring) + " " + (.lockstep.sampler.greedy|tostring)' "$tmp/greedy.json")" = "length length 24 true" ] && ok || bad "greedy fields: $(cat "$tmp/greedy.json")"
same_as_generate topp '{"prompt":"JULIET:","max_tokens":40,"temperature":0.8,"top_p":0.9,"seed":7}' "JULIET:" --generate 40 --temperature 0.8 --top-p 0.9 --seed 7
# OpenAI's default temperature is 1: sampling from the whole vocabulary.
same_as_generate default '{"prompt":"To be, or not to be","max_tokens":20,"seed":3}' "To be, or not to be" --generate 20 --top-k 50257 --seed 3
same_as_generate topk '{"prompt":"KING:","max_tokens":30,"top_k":40,"temperature":0.8,"seed":18446744073709551615}' "KING:" --generate 30 --top-k 40 --temperature 0.8 --seed 18446744073709551615
same_as_generate stop '{"prompt":"ROMEO:","max_tokens":48,"top_p":0.9,"seed":1,"stop":["\n\n","ROMEO"]}' "ROMEO:" --generate 48 --top-p 0.9 --seed 1 --stop $'\n\n' --stop ROMEO
[ "$(jq -r '.choices[0].finish_reason + " " + .lockstep.finish' "$tmp/stop.json")" = "stop stop_string" ] && ok || bad "stop: $(cat "$tmp/stop.json")"
same_as_generate stopone '{"prompt":"ROMEO:","max_tokens":48,"top_p":0.9,"seed":1,"stop":"\n"}' "ROMEO:" --generate 48 --top-p 0.9 --seed 1 --stop $'\n'
# A prompt of token ids (here the ids of "ROMEO:").
ids=$(jq -c .lockstep.prompt_tokens "$tmp/greedy.json")
req "$a_port" POST /v1/completions "{\"prompt\":$ids,\"max_tokens\":24,\"temperature\":0}"
[ "$code" = 200 ] && [ "$(jqr .choices[0].text)" = "$(jq -r .choices[0].text "$tmp/greedy.json")" ] && ok || bad "token-id prompt: $code $(cat "$tmp/r.json")"
# The context limit: the prompt fills all but 2 of the 512 positions.
long=$(python3 -c 'print(",".join(["198"] * 510))')
req "$a_port" POST /v1/completions "{\"prompt\":[$long],\"max_tokens\":10,\"temperature\":0}"
[ "$code" = 200 ] && [ "$(jqr '.choices[0].finish_reason + " " + .lockstep.finish + " " + (.lockstep.tokens|length|tostring)')" = "length context 2" ] && ok || bad "context limit: $code $(head -c 300 "$tmp/r.json")"

# The same request again: the same tokens and digests.
req "$a_port" POST /v1/completions '{"prompt":"JULIET:","max_tokens":40,"temperature":0.8,"top_p":0.9,"seed":7}'
[ "$(jq -c .lockstep "$tmp/r.json")" = "$(jq -c .lockstep "$tmp/topp.json")" ] && ok || bad "a second run differs"
# Another backend: the same tokens and digests (only the name differs).
req "$b_port" POST /v1/completions '{"prompt":"JULIET:","max_tokens":40,"temperature":0.8,"top_p":0.9,"seed":7}'
[ "$(jqr .lockstep.backend)" = reference ] && ok || bad "server b's backend: $(jqr .lockstep.backend)"
[ "$(jq -c '.lockstep | del(.backend)' "$tmp/r.json")" = "$(jq -c '.lockstep | del(.backend)' "$tmp/topp.json")" ] && ok || bad "the reference backend differs from cpu"

# Each step's digest is the SHA-256 of the logits row `lockstep logits`
# writes for that position (prompt + generated tokens but the last).
all=$(jq -r '(.lockstep.prompt_tokens + .lockstep.tokens[:-1]) | map(tostring) | join(",")' "$tmp/topp.json")
"$bin" logits --model "$model" --tokens "$all" --all-positions --out "$tmp/rows.f32" 2>/dev/null
python3 - "$tmp/rows.f32" "$tmp/topp.json" <<'EOF' && ok || bad "logits digests differ from lockstep logits"
import hashlib, json, sys
rows = open(sys.argv[1], "rb").read()
r = json.load(open(sys.argv[2]))["lockstep"]
row = 50257 * 4
n = len(r["prompt_tokens"])
want = [hashlib.sha256(rows[(n - 1 + i) * row:(n + i) * row]).hexdigest()
        for i in range(len(r["tokens"]))]
assert want == r["logits_sha256"], (want[:2], r["logits_sha256"][:2])
assert hashlib.sha256(rows[(n - 1) * row:]).hexdigest() == r["logits_sha256_all"]
EOF

# --- streams -------------------------------------------------------------------
curl -sN "http://127.0.0.1:$a_port/v1/completions" -d '{"prompt":"JULIET:","max_tokens":40,"temperature":0.8,"top_p":0.9,"seed":7,"stream":true}' >"$tmp/s.txt"
python3 - "$tmp/s.txt" "$tmp/topp.json" <<'EOF' && ok || bad "completion stream: $(head -c 600 "$tmp/s.txt")"
import json, sys
events = open(sys.argv[1]).read().split("\n\n")
assert events[-1] == "" and events[-2] == "data: [DONE]", events[-3:]
chunks = [json.loads(e[len("data: "):]) for e in events[:-2]]
whole = json.load(open(sys.argv[2]))
text = "".join(c["choices"][0]["text"] for c in chunks)
assert text == whole["choices"][0]["text"], (text, whole["choices"][0]["text"])
steps = chunks[:-1]
assert [c["lockstep"]["logits_sha256"] for c in steps] == whole["lockstep"]["logits_sha256"]
assert [c["lockstep"]["token"] for c in steps] == whole["lockstep"]["tokens"]
last = chunks[-1]
assert last["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
assert last["lockstep"]["logits_sha256_all"] == whole["lockstep"]["logits_sha256_all"]
assert last["usage"] == whole["usage"]
assert all(c["object"] == "text_completion" for c in chunks)
EOF
# A stream that ends at a stop string releases exactly the text before it.
curl -sN "http://127.0.0.1:$a_port/v1/completions" -d '{"prompt":"ROMEO:","max_tokens":48,"top_p":0.9,"seed":1,"stop":["\n\n","ROMEO"],"stream":true}' >"$tmp/s2.txt"
python3 - "$tmp/s2.txt" "$tmp/stop.json" <<'EOF' && ok || bad "stream with a stop string: $(head -c 600 "$tmp/s2.txt")"
import json, sys
events = open(sys.argv[1]).read().split("\n\n")[:-2]
chunks = [json.loads(e[len("data: "):]) for e in events]
whole = json.load(open(sys.argv[2]))
assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]
assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
EOF

# --- chat -------------------------------------------------------------------------
chat='{"model":"shakespeare-gpt2","messages":[{"role":"system","content":"A play."},{"role":"user","content":"Speak, ROMEO."}],"max_tokens":30,"seed":5}'
req "$a_port" POST /v1/chat/completions "$chat"
cp "$tmp/r.json" "$tmp/chat.json"
[ "$code" = 200 ] && [ "$(jqr '.object + " " + .choices[0].message.role')" = "chat.completion assistant" ] && ok || bad "chat: $code $(cat "$tmp/r.json")"
cprompt=$'System: A play.\nUser: Speak, ROMEO.\nAssistant:'
"$bin" generate --model "$model" --text "$cprompt" -q --generate 30 --top-k 50257 --seed 5 --stop $'\nUser:' >"$tmp/chat.gen" 2>&1
{ printf '%s' "$cprompt"; jq -j '.choices[0].message.content' "$tmp/chat.json"; echo; } >"$tmp/chat.served"
cmp -s "$tmp/chat.served" "$tmp/chat.gen" && ok || bad "chat differs from generate with the template: $(cat "$tmp/chat.served") VS $(cat "$tmp/chat.gen")"
[ "$(jq -c .lockstep.stop "$tmp/chat.json")" = '["\nUser:"]' ] && ok || bad "chat stop strings: $(jq -c .lockstep.stop "$tmp/chat.json")"
curl -sN "http://127.0.0.1:$a_port/v1/chat/completions" -d "${chat%\}},\"stream\":true}" >"$tmp/cs.txt"
python3 - "$tmp/cs.txt" "$tmp/chat.json" <<'EOF' && ok || bad "chat stream: $(head -c 600 "$tmp/cs.txt")"
import json, sys
events = open(sys.argv[1]).read().split("\n\n")
assert events[-2] == "data: [DONE]"
chunks = [json.loads(e[len("data: "):]) for e in events[:-2]]
whole = json.load(open(sys.argv[2]))
assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
assert text == whole["choices"][0]["message"]["content"]
assert all(c["object"] == "chat.completion.chunk" for c in chunks)
assert chunks[-1]["lockstep"]["tokens"] == whole["lockstep"]["tokens"]
EOF
# Content as an array of text parts is the same prompt.
req "$a_port" POST /v1/chat/completions '{"messages":[{"role":"system","content":[{"type":"text","text":"A "},{"type":"text","text":"play."}]},{"role":"user","content":"Speak, ROMEO."}],"max_tokens":30,"seed":5}'
[ "$(jq -c .lockstep.tokens "$tmp/r.json")" = "$(jq -c .lockstep.tokens "$tmp/chat.json")" ] && ok || bad "chat text parts: $(cat "$tmp/r.json")"

# --- logprobs ----------------------------------------------------------------------
req "$a_port" POST /v1/completions '{"prompt":"ROMEO:","max_tokens":8,"temperature":0,"logprobs":3}'
python3 - "$tmp/r.json" <<'EOF' && ok || bad "completion logprobs: $(head -c 600 "$tmp/r.json")"
import json, sys
r = json.load(open(sys.argv[1]))
lp = r["choices"][0]["logprobs"]
n = len(r["lockstep"]["tokens"])
assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == n == 8
for i in range(n):
    top = lp["top_logprobs"][i]
    assert len(top) == 3
    # Greedy: the chosen token is the most likely, its logprob the largest.
    assert lp["token_logprobs"][i] == max(top.values()) <= 0
    assert lp["tokens"][i] in top
assert lp["text_offset"][0] == len("ROMEO:")
EOF
req "$a_port" POST /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"seed":2,"logprobs":true,"top_logprobs":2}'
python3 - "$tmp/r.json" <<'EOF' && ok || bad "chat logprobs: $(head -c 600 "$tmp/r.json")"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["choices"][0]["logprobs"]["content"]
assert len(c) == len(r["lockstep"]["tokens"]) == 4
for e in c:
    assert e["logprob"] <= 0 and len(e["top_logprobs"]) == 2 and isinstance(e["bytes"], list)
    assert e["top_logprobs"][0]["logprob"] >= e["top_logprobs"][1]["logprob"] >= e["logprob"] or e["logprob"] >= e["top_logprobs"][1]["logprob"]
EOF

# --- errors: JSON messages naming the problem ---------------------------------------
C=/v1/completions
expect_error "$a_port" $C '{"prompt":' 400 "^the body is not valid JSON: "
expect_error "$a_port" $C '[1,2]' 400 "^the body must be a JSON object \(got an array\)$"
expect_error "$a_port" $C '{"max_tokens":4}' 400 "^prompt is required$"
expect_error "$a_port" $C '{"prompt":""}' 400 "^the prompt is empty"
expect_error "$a_port" $C '{"prompt":"x","temperature":"hot"}' 400 "^temperature must be a number in \[0, 2\] \(got a string\)$"
expect_error "$a_port" $C '{"prompt":"x","temperature":3}' 400 "^temperature must be a number in \[0, 2\] \(got 3\)$"
expect_error "$a_port" $C '{"prompt":"x","top_p":0}' 400 "^top_p must be a number in \(0, 1\] \(got 0\)$"
expect_error "$a_port" $C '{"prompt":"x","max_tokens":0}' 400 "^max_tokens must be an integer in \[1, 512\] \(got 0\)$"
expect_error "$a_port" $C '{"prompt":"x","max_tokens":2.5}' 400 "^max_tokens must be an integer in \[1, 512\] \(got a fractional number\)$"
expect_error "$a_port" $C '{"prompt":"x","seed":-1}' 400 "^seed must be an integer in \[0, 18446744073709551615\] \(got -1\)$"
expect_error "$a_port" $C '{"prompt":"x","seed":18446744073709551616}' 400 "^seed must be an integer in \[0, 18446744073709551615\] \(got a fractional number\)$"
expect_error "$a_port" $C '{"prompt":"x","stop":5}' 400 "^stop must be a string or an array of strings \(got an integer\)$"
expect_error "$a_port" $C '{"prompt":"x","stop":[""]}' 400 "^stop strings must not be empty$"
expect_error "$a_port" $C '{"prompt":"x","logprobs":21}' 400 "^logprobs must be an integer in \[0, 20\] \(got 21\)$"
expect_error "$a_port" $C '{"prompt":"x","stream":"yes"}' 400 "^stream must be true or false \(got a string\)$"
expect_error "$a_port" $C '{"prompt":"x","n":2}' 400 "^n 2 is not supported \(only 1\)$"
expect_error "$a_port" $C '{"prompt":"x","max_token":4}' 400 "^unknown field 'max_token'"
expect_error "$a_port" $C '{"prompt":["a","b"]}' 400 "^one prompt per request"
expect_error "$a_port" $C '{"prompt":[1,50257]}' 400 "^prompt\[1\] = 50257 is not a token id in \[0, 50257\)$"
expect_error "$a_port" $C "{\"prompt\":[$long,$long]}" 400 "^the prompt has 1020 tokens; the model's context is 512 positions$"
req "$a_port" POST $C "{\"prompt\":[$long,$long]}"
[ "$(jqr .error.code)" = context_length_exceeded ] && [ "$(jqr .error.param)" = prompt ] && ok || bad "context error fields: $(cat "$tmp/r.json")"
expect_error "$a_port" $C '{"prompt":"x","model":"gpt-4"}' 404 "^the model 'gpt-4' is not served here; this server serves 'shakespeare-gpt2'"
expect_error "$a_port" /v1/chat/completions '{"messages":[]}' 400 "^messages must be a non-empty array"
expect_error "$a_port" /v1/chat/completions '{"messages":[{"role":"tool","content":"x"}]}' 400 "^messages\[0\]\.role 'tool' is not system, developer, user or assistant$"
expect_error "$a_port" /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}' 400 "^top_logprobs needs logprobs: true$"
expect_error "$a_port" /v1/nothing '{}' 404 "^no route POST /v1/nothing"
big=$(head -c 5000 /dev/zero | tr '\0' 'a')
expect_error "$a_port" $C "{\"prompt\":\"$big\"}" 413 "^the body is over 4096 bytes \(--max-body\)$"
# Deep nesting is refused while parsing.
deep=$(python3 -c 'print("[" * 200 + "]" * 200)')
expect_error "$a_port" $C "{\"prompt\":$deep}" 400 "^the body is JSON nested deeper than 128 levels"
req "$a_port" GET /health
[ "$code" = 200 ] && [ "$(jqr '.status + " " + (.busy|tostring)')" = "ok 0" ] && ok || bad "health after errors: $code $(cat "$tmp/r.json")"

# --- concurrency: every answer equals the same request made alone -------------------
for s in 1 2 3 4 5 6; do
  curl -s "http://127.0.0.1:$a_port/v1/completions" -d "{\"prompt\":\"ROMEO:\",\"max_tokens\":24,\"top_p\":0.9,\"seed\":$s}" >"$tmp/alone$s.json"
done
pids=()
for s in 1 2 3 4 5 6; do
  curl -s "http://127.0.0.1:$a_port/v1/completions" -d "{\"prompt\":\"ROMEO:\",\"max_tokens\":24,\"top_p\":0.9,\"seed\":$s}" >"$tmp/together$s.json" &
  pids+=($!)
done
wait "${pids[@]}"
same=0
for s in 1 2 3 4 5 6; do
  [ -s "$tmp/alone$s.json" ] && [ "$(jq -c .lockstep "$tmp/alone$s.json")" = "$(jq -c .lockstep "$tmp/together$s.json")" ] && same=$((same + 1))
done
[ "$same" = 6 ] && ok || bad "concurrent answers differ from single ones ($same of 6 equal)"
[ "$(jq -c .lockstep.tokens "$tmp/alone1.json")" != "$(jq -c .lockstep.tokens "$tmp/alone2.json")" ] && ok || bad "seeds 1 and 2 gave the same tokens"

# --- limits: 429 when the one session is busy and the queue (0) is full;
# a client that disconnects mid-stream frees the session ------------------------------
longreq='{"prompt":"ROMEO:","max_tokens":480,"temperature":0,"stream":true}'
curl -sN "http://127.0.0.1:$c_port/v1/completions" -d "$longreq" >"$tmp/long.txt" &
long_pid=$!
busy=0
for _ in $(seq 1 100); do
  req "$c_port" GET /health
  [ "$(jqr .busy)" = 1 ] && { busy=1; break; }
  sleep 0.05
done
[ "$busy" = 1 ] && ok || bad "the long request never took the session"
expect_error "$c_port" $C '{"prompt":"x","max_tokens":2}' 429 "^the server is busy: all 1 sessions are generating and 0 requests are waiting"
[ "$(jqr .error.code)" = queue_full ] && ok || bad "429 code: $(cat "$tmp/r.json")"
wait $long_pid
tail -c 15 "$tmp/long.txt" | grep -q "data: \[DONE\]" && ok || bad "the long stream did not end with [DONE]"
# Now disconnect after the first events: the session must be free long
# before the 480 tokens could have been generated.
curl -sN "http://127.0.0.1:$c_port/v1/completions" -d "$longreq" 2>/dev/null | head -c 300 >/dev/null
freed=0
for _ in $(seq 1 100); do
  req "$c_port" GET /health
  [ "$(jqr .busy)" = 0 ] && { freed=1; break; }
  sleep 0.05
done
[ "$freed" = 1 ] && ok || bad "a disconnected stream kept its session"
req "$c_port" POST $C '{"prompt":"x","max_tokens":2}'
[ "$code" = 200 ] && ok || bad "after the disconnect: $code $(cat "$tmp/r.json")"
sleep 0.2
grep -Eq "^lockstep serve: POST /v1/completions 200 prompt=[0-9]+ generated=([0-9]|[1-9][0-9]|[1-3][0-9][0-9]) finish=cancelled stream=yes" "$tmp/c.log" && ok || bad "no log line for the cancelled stream: $(cat "$tmp/c.log")"

# --- the log: one line per request ----------------------------------------------------
grep -Eq "^lockstep serve: POST /v1/completions 200 prompt=[0-9]+ generated=24 finish=length stream=no queue_ms=[0-9.]+ prefill_ms=[0-9.]+ total_ms=[0-9.]+$" "$tmp/a.log" && ok || bad "completion log line: $(head -5 "$tmp/a.log")"
grep -Eq "^lockstep serve: POST /v1/completions 400 total_ms=[0-9.]+$" "$tmp/a.log" && ok || bad "error log line"
grep -Eq "^lockstep serve: GET /v1/models 200 total_ms=[0-9.]+$" "$tmp/a.log" && ok || bad "models log line"

# --- SIGTERM: the server stops and exits 0 ------------------------------------------
kill -TERM "$a_pid"
wait "$a_pid"
status=$?
[ "$status" = 0 ] && grep -q "lockstep serve: SIGTERM, stopping" "$tmp/a.log" && ok || bad "SIGTERM: status $status, $(tail -2 "$tmp/a.log")"

echo "serve: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
