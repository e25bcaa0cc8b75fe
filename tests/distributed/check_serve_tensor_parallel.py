"""`serve` under mpirun with -tp 2 (two ranks on this host): completions give
stories260k's golden continuations; clients that leave mid-stream are
aborted and every KV block comes back; SIGTERM to rank 0 ends the job
cleanly (every rank exits 0); and a worker rank that dies ends the job,
with mpirun naming it, within 30 s.
Usage: check_serve_tensor_parallel.py VLLM_CPP GOLDEN_JSON"""
import json
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from serve_harness import Server, check, finish  # noqa: E402
from mpi_env import mpi_env, rank_pid  # noqa: E402

binary, golden_path = sys.argv[1:3]
mpirun = shutil.which("mpirun")
if mpirun is None:
    print("SKIP: mpirun is not installed (Debian's openmpi-bin)")
    sys.exit(77)
env = mpi_env()
stories = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(golden_path)), "..", "..", "..", "models",
                                        "stories260k"))
cases = json.load(open(golden_path))["cases"]


def start():
    return Server(binary, stories, "-tp", "2", "--threads", "1", launcher=(mpirun, "-np", "2"), env=env)


server = start()
try:
    for c in cases[:4]:
        request = {"prompt": c["prompt_token_ids"], "max_tokens": c["max_new_tokens"], "temperature": 0,
                   "ignore_eos": True}
        status, out = server.json("POST", "/v1/completions", request)
        text = out["choices"][0]["text"] if status == 200 else None
        check(status == 200 and text == c["output_text"], f"{c['name']}: status {status}, text {text!r}")
    # Clients leaving mid-stream.  On a loaded machine a request can reach max_tokens before the server sees its
    # client leave; it ends by length, never left running, and its KV blocks come back all the same.
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 400, "stream": True, "ignore_eos": True})
    m, ended = server.clients_leave(body, 20)
    usage = [v for k, v in m.items() if k.startswith("vllm:kv_cache_usage_perc")]
    check(usage == [0], f"KV cache usage after the aborts: {usage}")
    aborted = sum(v for k, v in m.items() if k.startswith("vllm:request_success_total") and 'reason="abort"' in k)
    check(ended == 20 and aborted > 0, f"20 clients left: {ended} ended, {aborted} of them aborted")
finally:
    os.kill(rank_pid(server, 0), signal.SIGTERM)
    code = server.proc.wait(timeout=30)
    check(code == 0, f"SIGTERM to rank 0: the job exits {code}, expected 0")

# A worker that dies ends the job (mpirun kills the rest) and says which.
server = start()
status, _ = server.json("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 4})
check(status == 200, f"a completion before the worker dies: {status}")
os.kill(rank_pid(server, 1), signal.SIGKILL)
killed_at = time.monotonic()
try:
    code = server.proc.wait(timeout=30)
    check(code != 0, "a job whose worker died exits non-zero")
except Exception:
    server.proc.kill()
    check(False, "the job did not end within 30 s of its worker's death")
server.log_reader.join(timeout=5)
log = "".join(server.log)
check("rank 1" in log and "signal 9" in log, f"mpirun names the dead rank: {log[-600:]!r}")
print(f"the job ended {time.monotonic() - killed_at:.1f} s after its worker died")
finish()
