#!/usr/bin/env python3
"""Soak test of `vllm-cpp serve` (a benchmark, not a test): it measures the
load the server sustains, then offers it a multiple of that for a few
minutes while attackers run beside the clients (disconnect storms,
slowloris connections, oversized and deeply nested bodies), and prints
what happened to every client request (served, refused with 503, or lost:
anything else), latency percentiles, and the server's RSS and queue over
time.

  bench/server/soak.py --binary build/src/vllm-cpp --model /tmp/smollm-135m \\
      --duration 180 --load 2 [--server-flag=--max-waiting-requests=32 ...]

Only the standard library; the server is started here, on a free port, so
that its RSS can be read from /proc."""
import argparse
import http.client
import json
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time


def percentile(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    k = (len(values) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


class Server:
    def __init__(self, binary, model, flags):
        self.proc = subprocess.Popen([binary, "serve", model, "--host", "127.0.0.1", "--port", "0",
                                      "--disable-log-requests", *flags], stderr=subprocess.PIPE, text=True)
        for _ in range(50):
            line = self.proc.stderr.readline()
            match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
            sys.stderr.write(line)
        else:
            sys.exit("serve did not start")
        threading.Thread(target=lambda: [None for _ in iter(self.proc.stderr.readline, "")], daemon=True).start()

    def rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))

    def metrics(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                out[re.sub(r"\{.*\}", "", key) + (re.search(r'(reason|finished_reason)="(\w+)"', key).group(2)
                                                  if "reason=" in key else "")] = float(value)
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.served = self.refused = self.lost = 0
        self.lost_examples = []
        self.ttft, self.e2e = [], []

    def add(self, outcome, ttft=None, e2e=None, detail=""):
        with self.lock:
            if outcome == "served":
                self.served += 1
                self.ttft.append(ttft)
                self.e2e.append(e2e)
            elif outcome == "refused":
                self.refused += 1
            else:
                self.lost += 1
                if len(self.lost_examples) < 5:
                    self.lost_examples.append(detail)


def one_request(port, body, results, timeout):
    """A streamed completion; served = 200 and [DONE], refused = 503, anything else is lost."""
    started = time.time()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status == 503:
            resp.read()
            return results.add("refused")
        if resp.status != 200:
            return results.add("lost", detail=f"status {resp.status}: {resp.read()[:100]!r}")
        # The client shares the server's cores: it reads in large pieces and
        # parses only the first event (TTFT) and the last two (an error, [DONE]).
        first = resp.read1(65536)
        ttft = time.time() - started
        events = (first + resp.read()).split(b"\n\n")
        conn.close()
        tail = [e for e in events if e.startswith(b"data: ")][-2:]
        if tail and tail[-1] == b"data: [DONE]" and len(tail) == 2:
            last = json.loads(tail[0][len(b"data: "):])
            if "error" in last:
                return results.add("refused" if last["error"].get("code") == 503 else "lost",
                                   detail=str(last["error"])[:100])
            results.add("served", ttft, time.time() - started)
        else:
            results.add("lost", detail=f"stream ended without [DONE]: {events[-2:]!r}"[:100])
    except Exception as e:  # noqa: BLE001: every failure is what we count
        results.add("lost", detail=repr(e)[:100])


def request_body(prompt_len, output_len):
    words = " ".join(random.choice("the a of cat dog ran sat big red sun".split()) for _ in range(prompt_len))
    return json.dumps({"prompt": words, "max_tokens": output_len, "ignore_eos": True, "temperature": 0.8,
                       "stream": True})


def measure_sustainable(port, concurrency, seconds, prompt_len, output_len):
    """Requests per second the server completes with `concurrency` clients always waiting on it."""
    results = Results()
    stop = time.time() + seconds

    def client():
        while time.time() < stop:
            one_request(port, request_body(prompt_len, output_len), results, timeout=600)

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    started = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results.served / (time.time() - started)


def disconnect_storm(port, n):
    body = request_body(16, 200)

    def leave():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
                s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n{body}"
                          .encode())
                s.recv(1024)
        except OSError:
            pass

    threads = [threading.Thread(target=leave) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def slowloris(port, stop_at, n):
    """n connections that send a header a byte every few seconds, reconnecting when dropped."""
    def one():
        while time.time() < stop_at:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
                    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
                    while time.time() < stop_at:
                        time.sleep(5)
                        s.sendall(b"X")
            except OSError:
                time.sleep(1)

    for _ in range(n):
        threading.Thread(target=one, daemon=True).start()


def oversized(port):
    """One of: a 16 MB body of '[', JSON nested 100,000 deep, a 1 MB request line."""
    payloads = [
        b"POST /v1/completions HTTP/1.1\r\nContent-Length: 16777000\r\n\r\n" + b"[" * 16777000,
        (lambda b: b"POST /tokenize HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b))(
            b'{"messages": [{"role": "user", "content": ' + b"[" * 100000 + b"]" * 100000 + b"}]}"),
        b"GET /" + b"a" * (1 << 20) + b" HTTP/1.1\r\n\r\n",
    ]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(random.choice(payloads))
            s.recv(1024)
    except OSError:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--server-flag", action="append", default=[],
                    help="a flag for serve, e.g. --server-flag=--max-waiting-requests=32 (repeatable)")
    ap.add_argument("--duration", type=float, default=180, help="seconds of soak")
    ap.add_argument("--load", type=float, default=2.0, help="offered load as a multiple of the sustainable rate")
    ap.add_argument("--rate", type=float, help="offered requests/s (default: --load x the measured rate)")
    ap.add_argument("--concurrency", type=int, default=16, help="clients when measuring the sustainable rate")
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--attackers", action=argparse.BooleanOptionalAction, default=True,
                    help="disconnect storms, slowloris, oversized bodies beside the clients")
    ap.add_argument("--request-timeout", type=float, default=600, help="client-side seconds before a request is lost")
    args = ap.parse_args()

    flags = [f for flag in args.server_flag for f in flag.split("=", 1)]
    server = Server(args.binary, args.model, flags)
    rate = args.rate
    if rate is None:
        sustainable = measure_sustainable(server.port, args.concurrency, 30, args.prompt_len, args.output_len)
        rate = args.load * sustainable
        print(f"sustainable: {sustainable:.2f} requests/s at concurrency {args.concurrency}; offering {rate:.2f}/s")
    rss_start = server.rss_mb()
    results = Results()
    stop_at = time.time() + args.duration
    threads = []
    if args.attackers:
        slowloris(server.port, stop_at, 50)

    def attackers():
        while time.time() < stop_at:
            time.sleep(10)
            disconnect_storm(server.port, 100)
            oversized(server.port)

    if args.attackers:
        threading.Thread(target=attackers, daemon=True).start()

    def arrivals():
        while time.time() < stop_at:
            t = threading.Thread(target=one_request, args=(server.port, request_body(args.prompt_len, args.output_len),
                                                          results, args.request_timeout))
            t.start()
            threads.append(t)
            time.sleep(random.expovariate(rate))

    arriving = threading.Thread(target=arrivals)
    arriving.start()
    print(f"{'t (s)':>6} {'RSS MB':>7} {'running':>7} {'waiting':>7} {'served':>7} {'refused':>7} {'lost':>5}")
    samples = []
    started = time.time()
    while arriving.is_alive() or any(t.is_alive() for t in threads):
        time.sleep(10)
        m = server.metrics()
        rss = server.rss_mb()
        samples.append(rss)
        print(f"{time.time() - started:6.0f} {rss:7.0f} {m['vllm:num_requests_running']:7.0f} "
              f"{m['vllm:num_requests_waiting']:7.0f} {results.served:7d} {results.refused:7d} {results.lost:5d}",
              flush=True)
    rss_end = server.rss_mb()
    m = server.metrics()
    code = server.stop()
    total = results.served + results.refused + results.lost
    print(f"\nrequests offered {total}: served {results.served}, refused (503) {results.refused}, "
          f"lost {results.lost} {results.lost_examples}")
    for name, values in (("TTFT", results.ttft), ("E2E", results.e2e)):
        print(f"{name} s: p50 {percentile(values, 50):.2f}, p90 {percentile(values, 90):.2f}, "
              f"p99 {percentile(values, 99):.2f}, max {max(values) if values else float('nan'):.2f}")
    print(f"RSS MB: start {rss_start:.0f}, max {max(samples, default=rss_end):.0f}, end {rss_end:.0f}; "
          f"median over the run {statistics.median(samples) if samples else rss_end:.0f}")
    print(f"server: rejected queue_full {m.get('vllm:request_rejected_totalqueue_full', 0):.0f}, "
          f"queue_timeout {m.get('vllm:request_rejected_totalqueue_timeout', 0):.0f}, "
          f"aborted {m.get('vllm:request_success_totalabort', 0):.0f}; exit status on SIGTERM {code}")


if __name__ == "__main__":
    main()
