"""Data parallelism under mpirun (ranks on this host): engine replicas behind
one front door, each request on one replica.

- `generate --input` of 64 mixed requests (greedy and seeded sampling, n=2,
  beam search, logprobs and prompt logprobs, stop strings, structured
  outputs, logit bias, bad words, allowed tokens, penalties, cache salts)
  gives byte for byte the single process's output lines with -dp 2 and
  -dp 4, and with -dp 2 over replicas of -tp 2 (or -pp 2) what -tp 2 (or
  the single process) gives;
- `serve -dp 2`: 64 concurrent completions each get the single process's
  text; /metrics shows every metric per replica (the `engine` label), both
  replicas served requests and together all 64; the requests of clients
  that leave mid-stream end (aborted, unless they finished first) and every
  replica's KV cache empties; a LoRA adapter loaded at run time serves its own
  output on both replicas and is gone from both once unloaded; SIGTERM
  ends every rank with status 0.
Usage: check_data_parallel.py VLLM_CPP STORIES260K_DIR SCRATCH_DIR"""
import json
import os
import random
import shutil
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
sys.path.insert(0, os.path.join(HERE, "..", "model", "lora"))
from mpi_env import mpi_env, rank_pid, run_job  # noqa: E402
from serve_harness import Server, check, failures, finish  # noqa: E402

binary, stories, scratch = sys.argv[1:4]
mpirun = shutil.which("mpirun")
if mpirun is None:
    print("SKIP: mpirun is not installed (Debian's openmpi-bin)")
    sys.exit(77)
if not os.path.isfile(os.path.join(stories, "config.json")):
    print(f"SKIP: no model at {stories}")
    sys.exit(77)
try:
    import numpy as np
    from peft_adapters import LINEAR_MODULES, lora_config, lora_tensors, random_linear, write_adapter
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)
os.makedirs(scratch, exist_ok=True)
env = mpi_env()
TIMEOUT = 180  # a hang is a failure, not a stuck CI job
WORDS = "once upon a time there was a little girl named lily she loved to play outside in the sun with her dog".split()


def run(args, ranks=None):
    return run_job(binary, args, ranks, env, TIMEOUT)


def mixed_requests(rng):
    """64 requests, each field the replicas' messages carry set by some."""
    out = []
    for i in range(64):
        r = {"prompt": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 24))),
             "max_tokens": rng.randint(1, 40), "temperature": 0}
        if i % 3 == 0:
            r.update(temperature=0.8, seed=i, top_p=0.9, top_k=20)
        if i % 4 == 0:
            r.update(logprobs=2)
        if i % 5 == 0:
            r.update(prompt_logprobs=1)
        if i % 6 == 0:
            r.update(stop=["the", "lily"], include_stop_str_in_output=i % 12 == 0)
        if i % 7 == 0:
            r.update(n=2, temperature=0.7, seed=i, presence_penalty=0.5, repetition_penalty=1.2)
        if i % 8 == 0:
            r.update(logit_bias={"100": 5.0, "200": -100}, min_tokens=min(2, r["max_tokens"]))
        if i % 9 == 0:
            r.update(structured_outputs={"choice": ["yes", "no way", "maybe"]})
        if i % 10 == 0:
            r.update(bad_words=["she"], cache_salt=f"salt{i % 20}")
        if i % 13 == 0:
            r.update(allowed_token_ids=list(range(300, 400)), frequency_penalty=0.3)
        if i % 17 == 0:
            r.update(structured_outputs={"regex": "[a-z]+( [a-z]+)*"}, ignore_eos=True)
        if i % 11 == 0:
            r = {"prompt_token_ids": [1] + [rng.randint(3, 500) for _ in range(rng.randint(1, 20))],
                 "max_tokens": 12, "use_beam_search": True, "n": 2, "temperature": 0}
        out.append(r)
    return out


def generate(requests, name, ranks=None, flags=()):
    path = f"{scratch}/{name}.jsonl"
    with open(path, "w") as f:
        for r in requests:
            f.write(json.dumps(r) + "\n")
    p = run(["generate", "--model", stories, "--input", path, "--output", f"{scratch}/{name}.out.jsonl",
             "--threads", "1", *flags], ranks)
    if p.returncode != 0:
        failures.append(f"{name}: exited {p.returncode}: {p.stderr.strip()[-600:]}")
        return None
    with open(f"{scratch}/{name}.out.jsonl") as f:
        return f.read()


rng = random.Random(5)
requests = mixed_requests(rng)
single = generate(requests, "single")
single_tp = generate(requests, "tp2", 2, ("-tp", "2"))
for name, ranks, flags, want in [("dp2", 2, ("-dp", "2"), single), ("dp4", 4, ("-dp", "4"), single),
                                 ("dp2_tp2", 4, ("-dp", "2", "-tp", "2"), single_tp),
                                 ("dp2_pp2", 4, ("-dp", "2", "-pp", "2"), single)]:
    got = generate(requests, name, ranks, flags)
    if got is not None and want is not None and got != want:
        differing = [i for i, (a, b) in enumerate(zip(got.splitlines(), want.splitlines())) if a != b]
        failures.append(f"generate {' '.join(flags)}: lines {differing[:8]} differ from the run without -dp")


def stop(server):
    """SIGTERM to rank 0 (mpirun would forward it to every rank): the whole job exits 0."""
    os.kill(rank_pid(server, 0), signal.SIGTERM)
    code = server.proc.wait(timeout=30)
    check(code == 0, f"SIGTERM to rank 0: the job exits {code}, expected 0")


def by_engine(m, name, extra=""):
    return {e: v for e in ("0", "1") for k, v in m.items() if k.startswith(name + "{") and f'engine="{e}"' in k
            and extra in k}


# serve -dp 2: 64 concurrent completions (greedy and seeded) against the single process's output lines.
served = [{k: v for k, v in r.items() if k not in ("use_beam_search", "prompt_logprobs")}
          for r in requests if "prompt" in r]
served = (served * 2)[:64]
want_lines = generate([{**r, "max_tokens": r["max_tokens"]} for r in served], "served_single")
want_texts = [[o["text"] for o in json.loads(line)["outputs"]] for line in (want_lines or "").splitlines()]
server = Server(binary, stories, "-dp", "2", "--threads", "1", launcher=(mpirun, "-np", "2"), env=env)
try:
    results = [None] * len(served)

    def complete(i):
        results[i] = server.json("POST", "/v1/completions", served[i])

    threads = [threading.Thread(target=complete, args=(i,)) for i in range(len(served))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (status, out) in enumerate(results):
        texts = [c["text"] for c in sorted(out["choices"], key=lambda c: c["index"])] if status == 200 else None
        check(i < len(want_texts) and texts == want_texts[i], f"served request {i}: {status} {texts} != single")
    m = server.idle_metrics()
    finished = {e: sum(v for k, v in m.items() if k.startswith("vllm:request_success_total{") and
                       f'engine="{e}"' in k) for e in ("0", "1")}
    check(sum(finished.values()) == sum(r.get("n", 1) for r in served) and min(finished.values()) >= 8,
          f"finished sequences by replica: {finished} (64 requests, spread over both)")
    queries = by_engine(m, "vllm:prefix_cache_queries_total")
    check(len(queries) == 2 and min(queries.values()) > 0, f"prefix cache queries by replica: {queries}")
    for family in ("vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds_count",
                   "vllm:generation_tokens_total"):
        check(len(by_engine(m, family)) == 2, f"{family} for each replica: {by_engine(m, family)}")

    # Clients leaving mid-stream: their requests end, by abort, and every KV block comes back.  On a loaded machine
    # a request can reach max_tokens before the server sees its client leave (a replica's outputs reach rank 0 in
    # bursts): it ends by length, never left running.  So some replica may abort none of its own (seen under the
    # sanitizer beside model_parallel); that aborts reach the replica that runs the request is
    # DataParallelEngineTest.AbortsReachTheReplicaThatRunsTheRequest's to show, deterministically.
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 400, "stream": True, "ignore_eos": True})
    m, ended = server.clients_leave(body, 16)
    aborted = by_engine(m, "vllm:request_success_total", 'finished_reason="abort"')
    check(ended == 16 and sum(aborted.values()) > 0, f"16 clients left: {ended} ended, aborted by replica: {aborted}")
    usage = by_engine(m, "vllm:kv_cache_usage_perc")
    check(usage == {"0": 0, "1": 0}, f"KV cache usage after the aborts: {usage}")
finally:
    stop(server)

# A LoRA adapter loaded and unloaded at run time, on both replicas.
base = f"{scratch}/llama"
run(["make-test-model", "--arch", "llama", "--preset", "tiny", "--out", base])
with open(os.path.join(base, "config.json")) as f:
    linear = random_linear(np.random.default_rng(3), json.load(f), LINEAR_MODULES, 8)
adapter = f"{scratch}/adapter"
write_adapter(adapter, lora_config(8, 16, list(LINEAR_MODULES)), lora_tensors(linear))
prompt = [int(t) for t in np.random.default_rng(7).integers(3, 500, 12)]
lines = [{"prompt_token_ids": prompt, "max_tokens": 16, "temperature": 0, "ignore_eos": True, **extra}
         for extra in ({}, {"lora": "alpha"})]
with open(f"{scratch}/lora.jsonl", "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in lines))
p = run(["generate", "--model", base, "--input", f"{scratch}/lora.jsonl", "--enable-lora", "--lora-modules",
         f"alpha={adapter}"])
want = [json.loads(line)["outputs"][0]["text"] for line in p.stdout.splitlines()] if p.returncode == 0 else []
check(len(want) == 2 and want[0] != want[1], f"the adapter changes the output: {p.returncode} {want} {p.stderr[-300:]}")
env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "1"
server = Server(binary, base, "-dp", "2", "--threads", "1", "--served-model-name", "base", "--enable-lora",
                launcher=(mpirun, "-np", "2"), env=env)
try:
    status, _, payload = server.request("POST", "/v1/load_lora_adapter", {"lora_name": "alpha", "lora_path": adapter})
    check(status == 200, f"load_lora_adapter: {status} {payload[:200]}")
    answers = [None] * 8
    threads = [threading.Thread(target=lambda i=i: answers.__setitem__(i, server.json("POST", "/v1/completions", {
        "model": "alpha", "prompt": prompt, "max_tokens": 16, "temperature": 0, "ignore_eos": True})))
        for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    texts = [out["choices"][0]["text"] if status == 200 else status for status, out in answers]
    check(len(want) == 2 and texts == [want[1]] * 8, f"the adapter's requests: {texts} != {want[1:]}")
    m = server.idle_metrics()
    finished = by_engine(m, "vllm:request_success_total", 'finished_reason="length"')
    check(min(finished.values(), default=0) > 0, f"the adapter's requests ran on both replicas: {finished}")
    status, _, payload = server.request("POST", "/v1/unload_lora_adapter", {"lora_name": "alpha"})
    check(status == 200, f"unload_lora_adapter: {status} {payload[:200]}")
    for _ in range(4):  # whichever replica it goes to
        status, out = server.json("POST", "/v1/completions", {"model": "alpha", "prompt": prompt, "max_tokens": 2})
        check(status == 404, f"the unloaded adapter: {status} {out}")
finally:
    stop(server)
finish()
