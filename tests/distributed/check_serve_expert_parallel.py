"""`serve -dp 2 -ep` under mpirun (two ranks on this host): a tiny mixture of experts whose experts are
placed across the two replicas, so that every forward pass sends tokens to the other replica, and a
replica with no requests of its own keeps serving its experts in lockstep with the busy one.
- 16 concurrent completions of uneven lengths each give the single process's greedy text;
- clients that leave mid-stream end and both replicas' KV caches empty;
- idle, the ranks vote at most every millisecond, asleep while they wait: under 0.25 s of CPU a second;
- SIGTERM to rank 0 ends every rank with status 0 (the replicas stop together).
Usage: check_serve_expert_parallel.py VLLM_CPP SCRATCH_DIR"""
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from serve_harness import Server, check, finish  # noqa: E402
from mpi_env import rank_pid  # noqa: E402
from parallel_runs import ParallelRuns, skip_unless_mpirun  # noqa: E402

binary, scratch = sys.argv[1:3]
skip_unless_mpirun()
runs = ParallelRuns(binary, scratch)
model = f"{scratch}/mixtral"
made = runs.run(["make-test-model", "--preset", "tiny", "--arch", "mixtral", "--seed", "5", "--out", model])
if made.returncode != 0:
    sys.exit(f"FAIL: make-test-model: {made.stderr.strip()}")
requests = [{"prompt_token_ids": [3 + (7 * i + 11 * j) % 500 for j in range(1 + i % 9)], "max_tokens": 2 + 5 * (i % 5),
             "ignore_eos": True} for i in range(16)]
single = runs.generate(model, requests, "single")
if single is None:
    sys.exit("FAIL: " + "; ".join(runs.failures))


server = Server(binary, model, "-dp", "2", "-ep", "--threads", "1", launcher=("mpirun", "-np", "2"), env=runs.env)
try:
    texts = [None] * len(requests)

    def complete(i):
        r = requests[i]
        status, out = server.json("POST", "/v1/completions", {"prompt": r["prompt_token_ids"], "temperature": 0,
                                                               "max_tokens": r["max_tokens"], "ignore_eos": True})
        texts[i] = out["choices"][0]["text"] if status == 200 else f"status {status}"

    threads = [threading.Thread(target=complete, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (want, got) in enumerate(zip(single, texts)):
        check(got == want["outputs"][0]["text"], f"request {i}: {got!r}, expected {want['outputs'][0]['text']!r}")

    m, ended = server.clients_leave(json.dumps({"prompt": "a b c", "max_tokens": 200, "stream": True,
                                                "ignore_eos": True}), 8)
    usage = [v for k, v in m.items() if k.startswith("vllm:kv_cache_usage_perc")]
    check(ended == 8, f"8 clients left: {ended} ended")
    check(usage == [0, 0], f"KV cache usage of the two replicas after the aborts: {usage}")

    ranks = [rank_pid(server, r) for r in (0, 1)]
    before = [server.cpu_seconds(pid) for pid in ranks]
    time.sleep(2)
    idle = [(server.cpu_seconds(pid) - b) / 2 for pid, b in zip(ranks, before)]
    print(f"idle CPU per rank: {idle[0]:.3f} s/s, {idle[1]:.3f} s/s")
    check(max(idle) < 0.25, f"idle ranks use {idle} s of CPU a second")
finally:
    os.kill(rank_pid(server, 0), signal.SIGTERM)
    code = server.proc.wait(timeout=30)
    check(code == 0, f"SIGTERM to rank 0: the job exits {code}, expected 0")
    if code != 0:
        server.log_reader.join(timeout=5)
        sys.stdout.write("serve's last log lines:\n" + "".join(server.log[-40:]))
finish()
