#!/usr/bin/env python3
"""A bounded load test of `lockstep serve` on loopback (docs/serve.md "Load").

First each distinct request is sent alone, one after another (its answer
is the reference); then CLIENTS threads send REQUESTS requests in all,
drawn in a fixed order from the distinct ones, each thread one request at
a time over its own keep-alive connection. Every answer under load must
equal the reference answer for the same request: the generated token ids,
the text, every step's logits digest, the finish reason. Prints (and with
--json writes) throughput and latency percentiles. Exit status 1 when any
answer differs or any request fails.
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time


def request_bodies(distinct, max_tokens):
    """Distinct completion and chat requests (seeded, sampled, some
    streamed), deterministic in their index."""
    prompts = ["ROMEO:", "JULIET:", "KING HENRY:", "To be, or not to be",
               "First Citizen:\nBefore we proceed", "O Romeo, Romeo!"]
    bodies = []
    for i in range(distinct):
        body = {"max_tokens": max_tokens, "seed": 1000 + i,
                "temperature": 0.8, "top_p": 0.95}
        stream = i % 4 == 3
        if i % 3 == 2:
            path = "/v1/chat/completions"
            body["messages"] = [{"role": "user",
                                 "content": prompts[i % len(prompts)]}]
        else:
            path = "/v1/completions"
            body["prompt"] = prompts[i % len(prompts)]
        if stream:
            body["stream"] = True
        bodies.append((path, body))
    return bodies


def answer_of(path, body, raw):
    """What must be equal: tokens, text, per-step digests, finish."""
    if not body.get("stream"):
        r = json.loads(raw)
        c = r["choices"][0]
        text = c["message"]["content"] if "message" in c else c["text"]
        return (r["lockstep"]["tokens"], text, r["lockstep"]["logits_sha256"],
                c["finish_reason"])
    events = raw.decode().split("\n\n")
    if len(events) < 2 or events[-2] != "data: [DONE]":
        raise ValueError("stream without [DONE]")
    chunks = [json.loads(e[len("data: "):]) for e in events[:-2]]
    text, digests = "", []
    for ch in chunks:
        c = ch["choices"][0]
        text += c.get("text", "") if "text" in c else \
            c.get("delta", {}).get("content", "")
        if c["finish_reason"] is None and "lockstep" in ch:
            digests.append(ch["lockstep"]["logits_sha256"])
    last = chunks[-1]
    return (last["lockstep"]["tokens"], text, digests,
            last["choices"][0]["finish_reason"])


def send(conn, path, body):
    data = json.dumps(body).encode()
    conn.request("POST", path, body=data,
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    raw = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {raw[:200]!r}")
    return raw


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="127.0.0.1:8080", help="host:port")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--distinct", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    host, port = a.url.rsplit(":", 1)
    bodies = request_bodies(a.distinct, a.max_tokens)

    conn = http.client.HTTPConnection(host, int(port), timeout=600)
    reference = []
    t0 = time.monotonic()
    for path, body in bodies:
        reference.append(answer_of(path, body, send(conn, path, body)))
    alone_s = time.monotonic() - t0
    conn.close()

    lock = threading.Lock()
    next_index = [0]
    latencies, tokens, failures = [], [0], []

    def client():
        c = http.client.HTTPConnection(host, int(port), timeout=600)
        while True:
            with lock:
                i = next_index[0]
                if i >= a.requests:
                    break
                next_index[0] += 1
            k = (i * 7) % len(bodies)  # a fixed interleaving of the bodies
            path, body = bodies[k]
            start = time.monotonic()
            try:
                got = answer_of(path, body, send(c, path, body))
            except Exception as e:  # noqa: BLE001 -- counted and reported
                with lock:
                    failures.append(f"request {i} ({path} #{k}): {e}")
                c.close()
                c = http.client.HTTPConnection(host, int(port), timeout=600)
                continue
            ms = (time.monotonic() - start) * 1e3
            with lock:
                latencies.append(ms)
                tokens[0] += len(got[0])
                if got != reference[k]:
                    failures.append(f"request {i} ({path} #{k}) differs from "
                                    "the same request alone")
        c.close()

    threads = [threading.Thread(target=client) for _ in range(a.clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0

    lat = sorted(latencies)

    def pct(p):
        return lat[min(len(lat) - 1, int(round(p / 100 * (len(lat) - 1))))] \
            if lat else float("nan")
    figures = {
        "clients": a.clients, "requests": a.requests,
        "distinct": a.distinct, "max_tokens": a.max_tokens,
        "ok": len(latencies), "failures": len(failures),
        "equal_to_alone": len(latencies) - sum(
            1 for f in failures if "differs" in f),
        "wall_s": round(wall, 3),
        "requests_per_s": round(len(latencies) / wall, 2),
        "tokens_per_s": round(tokens[0] / wall, 1),
        "latency_ms": {"p50": round(pct(50), 1), "p90": round(pct(90), 1),
                       "p99": round(pct(99), 1), "max": round(lat[-1], 1)
                       if lat else None,
                       "mean": round(statistics.fmean(lat), 1)
                       if lat else None},
        "alone_s": round(alone_s, 3),
    }
    print(json.dumps(figures, indent=2))
    for f in failures[:10]:
        print("FAIL:", f, file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=2)
            f.write("\n")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
