"""A `vllm-cpp serve` process on a free loopback port, and the checks the
server tests share."""
import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def finish():
    """Prints the failures and exits 1 if there were any."""
    for f in failures:
        print("FAIL:", f)
    print(f"{'FAILED' if failures else 'all server checks passed'}")
    sys.exit(1 if failures else 0)


class Server:
    def __init__(self, binary, *flags, preexec_fn=None, launcher=(), env=None):
        """`launcher`: what starts the binary (mpirun -np 2), with `env` its environment."""
        self.proc = subprocess.Popen([*launcher, binary, "serve", "--host", "127.0.0.1", "--port", "0", *flags],
                                     stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn, env=env)
        lines = []
        match = None
        while match is None and len(lines) < 20:  # warnings may come first
            line = self.proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            sys.exit(f"FAIL: no listening line from serve: {lines!r}")
        self.port = int(match.group(1))
        # Keep reading the log (a line per request), so that a full pipe never blocks the server.
        self.log = []
        self.log_reader = threading.Thread(target=lambda: self.log.extend(iter(self.proc.stderr.readline, "")),
                                           daemon=True)
        self.log_reader.start()

    def request(self, method, path, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        conn.request(method, path, body=data, headers=headers or {})
        resp = conn.getresponse()
        payload = resp.read()
        conn.close()
        return resp.status, resp.getheader("Content-Type"), payload

    def json(self, method, path, body=None, headers=None):
        status, _, payload = self.request(method, path, body, headers)
        return status, json.loads(payload) if payload else None

    def stream(self, body, path="/v1/completions"):
        """The data: payloads of an SSE response, in order."""
        status, ctype, payload = self.request("POST", path, body)
        check(status == 200 and ctype == "text/event-stream", f"stream status {status} {ctype}")
        events = payload.decode().split("\n\n")
        check(events[-1] == "", "the stream ends with a blank line")
        check(all(e.startswith("data: ") for e in events[:-1]), "every event is one data: line")
        return [e[len("data: "):] for e in events[:-1]]

    def raw(self, data, timeout=10):
        """Sends `data` on a new connection and returns every byte the server sends until it closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.sendall(data)
            received = b""
            try:
                while chunk := s.recv(65536):
                    received += chunk
            except (ConnectionResetError, socket.timeout):
                pass
        return received

    def leave_mid_stream(self, body):
        """Starts a streamed request with `body` (JSON text) and closes the connection at its first event."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            s.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                       f"Content-Type: application/json\r\n\r\n{body}").encode())
            received = b""
            while b"data: " not in received:
                chunk = s.recv(4096)
                if not chunk:
                    break
                received += chunk

    def clients_leave(self, body, count):
        """`count` clients start streamed requests with `body` (JSON text) at once and leave at their first
        event; returns /metrics once the server is idle and those requests have ended, and how many ended."""
        def ended(m):
            return sum(v for k, v in m.items() if k.startswith("vllm:request_success_total{"))

        before = ended(self.idle_metrics())
        clients = [threading.Thread(target=self.leave_mid_stream, args=(body,)) for _ in range(count)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        m = self.idle_metrics(lambda m: ended(m) >= before + count)
        return m, ended(m) - before

    def metrics(self):
        """{name{labels}: value} from /metrics."""
        status, ctype, payload = self.request("GET", "/metrics")
        check(status == 200 and ctype.startswith("text/plain"), f"/metrics {status} {ctype}")
        values = {}
        for line in payload.decode().splitlines():
            if line and not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                values[key] = float(value)
        return values

    def idle_metrics(self, settled=lambda m: True):
        """/metrics once no request runs or waits on any engine (each updates them after its last step) and
        `settled` holds of them: the request counters of clients that left are observed when their last
        output is drained, which may come just after the engine's counters say idle."""
        for _ in range(100):
            m = self.metrics()
            busy = sum(v for k, v in m.items()
                       if k.startswith(("vllm:num_requests_running{", "vllm:num_requests_waiting{")))
            if busy == 0 and settled(m):
                return m
            time.sleep(0.1)
        return m

    def rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0

    def cpu_seconds(self, pid=None):
        """CPU time of the server process, or of process `pid` (a rank of an mpirun job)."""
        with open(f"/proc/{pid or self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=20)
        check(code == 0, f"serve exits 0 on SIGTERM, got {code}")
        if code != 0:  # what it said last (a sanitizer's report, a leak) is what explains it
            self.log_reader.join(timeout=5)
            sys.stdout.write("serve's last log lines:\n" + "".join(self.log[-60:]))


def expect_error(server, body, status, param, path="/v1/completions", headers=None, what=""):
    got, payload = server.json("POST", path, body, headers)
    ok = got == status and isinstance(payload, dict) and set(payload["error"]) == {"message", "type", "param", "code"}
    check(ok and payload["error"]["code"] == status and payload["error"]["param"] == param,
          f"{what or body}: expected {status}/{param}, got {got} {payload}")
    return payload
