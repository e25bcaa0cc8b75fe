"""Multi-LoRA through `vllm-cpp serve --enable-lora`, as vLLM serves it, on
a tiny random Llama with PEFT adapters written by tests/model/lora's numpy
writer (their numerics against merged checkpoints are lora_generate's test;
here `generate --input` with a "lora" field gives each adapter's expected
output):

- /v1/models lists the base model, then each adapter (root its path,
  parent its base_model_name or the served name); a request's "model"
  picks the adapter (completions, streamed or not, and chat), and the
  response names it; 15 requests at once over the base model and four
  adapters with --max-loras 2 each get their model's answer; an unknown
  model is vLLM's 404;
- without VLLM_ALLOW_RUNTIME_LORA_UPDATING the load/unload routes do not
  exist; with it: load (200, vLLM's text), use, a duplicate load, a load
  in place (load_inplace: later requests get the new weights), a
  directory with no adapter (404), an adapter above --max-lora-rank, empty
  names (400s with vLLM's messages), unload, use after unload (404),
  unload again (404);
- an adapter unloaded while a request of it streams: the request ends
  with all its tokens, and they are the adapter's;
- vllm:lora_requests_info (max_lora, waiting and running adapters);
- 200 load / use / unload cycles while other requests run: every answer
  right, no KV block held afterwards, resident memory flat;
- serve refuses a bad --lora-modules adapter at start-up with one line.

Usage: server_lora_test.py VLLM_CPP WORK_DIR"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
import time

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "model", "lora"))
import lora_runs  # noqa: E402
import serve_harness  # noqa: E402
from peft_adapters import LINEAR_MODULES, lora_config, lora_tensors, random_linear, write_adapter  # noqa: E402
from serve_harness import check, expect_error  # noqa: E402

binary, work = sys.argv[1:3]
SANITIZED = bool(os.environ.get("VLLM_TEST_SANITIZED"))


def write_random_adapter(path, rng, rank):
    with open(os.path.join(base, "config.json")) as f:
        linear = random_linear(rng, json.load(f), LINEAR_MODULES, rank)
    write_adapter(path, lora_config(rank, 2 * rank, list(LINEAR_MODULES)), lora_tensors(linear))
    return path


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
base = os.path.join(work, "llama")
subprocess.run([binary, "make-test-model", "--arch", "llama", "--preset", "tiny", "--out", base], check=True,
               capture_output=True)
rng = np.random.default_rng(7)
adapters = {name: write_random_adapter(os.path.join(work, name), rng, rank)
            for name, rank in (("alpha", 4), ("beta", 8), ("gamma", 8), ("delta", 16))}
too_big = write_random_adapter(os.path.join(work, "rank32"), rng, 32)
PROMPT = [int(t) for t in rng.integers(3, 500, 12)]
LONG = 240  # the tiny model's context is 256


def expected(max_tokens):
    """Each model's greedy text for PROMPT, from generate --input."""
    lines = [{"prompt_token_ids": PROMPT, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
              **({"lora": name} if name else {})} for name in (None, *adapters)]
    outputs, _ = lora_runs.generate(binary, work, base, lines, "--enable-lora", "--max-loras", "4",
                                    "--lora-modules", *[f"{n}={p}" for n, p in adapters.items()])
    return dict(zip(("base", *adapters), (out["outputs"][0]["text"] for out in outputs)))


want = expected(16)
want_long = expected(LONG)
assert len(set(want.values())) == len(want), "every adapter changes the output: else no test"


def complete(server, model, max_tokens=16, **fields):
    return server.json("POST", "/v1/completions", {"model": model, "prompt": PROMPT, "max_tokens": max_tokens,
                                                   "temperature": 0, "ignore_eos": True, **fields})


def answers(server, model, text, label, max_tokens=16):
    status, out = complete(server, model, max_tokens)
    check(status == 200 and out["choices"][0]["text"] == text and out["model"] == model,
          f"{label}: {status} {out}")


def post(server, path, body):
    status, ctype, payload = server.request("POST", path, json.dumps(body))
    return status, payload.decode()


def error_message(payload):
    return json.loads(payload)["error"]["message"]


# Refused at start-up, one line.
run = subprocess.run([binary, "serve", base, "--port", "0", "--enable-lora", "--max-lora-rank", "16",
                      "--lora-modules", f"big={too_big}"], capture_output=True, text=True, timeout=60)
errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
check(run.returncode != 0 and len(errors) == 1 and "LoRA rank 32 is greater than max_lora_rank 16." in errors[0]
      and "big" in errors[0], f"a bad --lora-modules adapter: {run.returncode} {run.stderr}")

# Without VLLM_ALLOW_RUNTIME_LORA_UPDATING.
os.environ.pop("VLLM_ALLOW_RUNTIME_LORA_UPDATING", None)
server = serve_harness.Server(binary, base, "--served-model-name", "base", "--enable-lora", "--max-lora-rank", "16",
                              "--max-loras", "2", "--lora-modules", f"alpha={adapters['alpha']}",
                              json.dumps({"name": "beta", "path": adapters["beta"], "base_model_name": "tiny-base"}),
                              f"gamma={adapters['gamma']}", f"delta={adapters['delta']}")
try:
    status, models = server.json("GET", "/v1/models")
    cards = {m["id"]: m for m in models["data"]}
    check([m["id"] for m in models["data"]] == ["base", "alpha", "beta", "gamma", "delta"], f"/v1/models: {models}")
    check(cards["base"]["parent"] is None and cards["base"]["root"] == base, f"base card {cards['base']}")
    check(cards["alpha"]["root"] == adapters["alpha"] and cards["alpha"]["parent"] == "base", f"{cards['alpha']}")
    check(cards["beta"]["parent"] == "tiny-base" and cards["beta"]["object"] == "model", f"{cards['beta']}")
    answers(server, "base", want["base"], "the base model")
    answers(server, "alpha", want["alpha"], "alpha")
    streamed = "".join(json.loads(e)["choices"][0]["text"] for e in server.stream(
        {"model": "beta", "prompt": PROMPT, "max_tokens": 16, "temperature": 0, "ignore_eos": True, "stream": True})
        if e != "[DONE]")
    check(streamed == want["beta"], f"beta streamed: {streamed!r}")
    status, chat = server.json("POST", "/v1/chat/completions", {"model": "gamma", "max_tokens": 4, "messages": [
        {"role": "user", "content": "hi"}]})
    check(status == 200 and chat["model"] == "gamma", f"chat under an adapter: {status} {chat}")
    # 15 at once over the base model and four adapters, two slots: each gets its model's answer.
    models = ["base", *adapters] * 3
    results = [None] * len(models)
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, complete(server, models[i])))
               for i in range(len(models))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for model, (status, out) in zip(models, results):
        check(status == 200 and out["choices"][0]["text"] == want[model], f"{model} among 15 at once: {out}")
    expect_error(server, {"model": "epsilon", "prompt": PROMPT}, 404, "model", what="an adapter not served")
    status, payload = post(server, "/v1/load_lora_adapter", {"lora_name": "epsilon", "lora_path": adapters["gamma"]})
    check(status == 404, f"the load route without VLLM_ALLOW_RUNTIME_LORA_UPDATING: {status} {payload}")
    # Once the engine has counted the 15 out (a client can read its answer before the step's counters are
    # published: seen under the sanitizer, running_lora_adapters="alpha,delta").
    metrics = server.idle_metrics()
    info = [k for k in metrics if k.startswith("vllm:lora_requests_info{")]
    check(info == ['vllm:lora_requests_info{max_lora="2",waiting_lora_adapters="",running_lora_adapters=""}'],
          f"vllm:lora_requests_info: {info}")
finally:
    server.stop()

# With it.
os.environ["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
server = serve_harness.Server(binary, base, "--served-model-name", "base", "--enable-lora", "--max-lora-rank", "16",
                              "--max-loras", "2", "--lora-modules", f"alpha={adapters['alpha']}")
try:
    gamma = {"lora_name": "gamma", "lora_path": adapters["gamma"]}
    status, payload = post(server, "/v1/load_lora_adapter", gamma)
    check((status, payload) == (200, "Success: LoRA adapter 'gamma' added successfully."), f"load: {status} {payload}")
    answers(server, "gamma", want["gamma"], "gamma once loaded")
    status, models = server.json("GET", "/v1/models")
    check([m["id"] for m in models["data"]] == ["base", "alpha", "gamma"], f"/v1/models after a load: {models}")
    status, payload = post(server, "/v1/load_lora_adapter", gamma)
    check(status == 400 and error_message(payload) == "The lora adapter 'gamma' has already been loaded. If you want "
          "to load the adapter in place, set 'load_inplace' to True.", f"a duplicate load: {status} {payload}")
    status, payload = post(server, "/v1/load_lora_adapter", {**gamma, "lora_path": adapters["delta"],
                                                             "load_inplace": True})
    check((status, payload) == (200, "Success: LoRA adapter 'gamma' added successfully."), f"in place: {payload}")
    answers(server, "gamma", want["delta"], "gamma replaced in place by delta's weights")
    post(server, "/v1/load_lora_adapter", {**gamma, "load_inplace": True})
    answers(server, "gamma", want["gamma"], "gamma's own weights back in place")
    status, payload = post(server, "/v1/load_lora_adapter", {"lora_name": "nowhere", "lora_path": work + "/none"})
    check(status == 404 and "No adapter found for" in error_message(payload), f"no adapter there: {status} {payload}")
    status, payload = post(server, "/v1/load_lora_adapter", {"lora_name": "big", "lora_path": too_big})
    check(status == 400 and error_message(payload).endswith("LoRA rank 32 is greater than max_lora_rank 16."),
          f"rank above --max-lora-rank: {status} {payload}")
    status, payload = post(server, "/v1/load_lora_adapter", {"lora_name": "", "lora_path": adapters["delta"]})
    check(status == 400 and error_message(payload) == "Both 'lora_name' and 'lora_path' must be provided.",
          f"an empty name: {status} {payload}")
    status, payload = post(server, "/v1/unload_lora_adapter", {"lora_name": ""})
    check(status == 400 and error_message(payload) == "'lora_name' needs to be provided to unload a LoRA adapter.",
          f"unload without a name: {status} {payload}")
    status, payload = post(server, "/v1/load_lora_adapter", {**gamma, "adapter_dtype": "bf16"})
    check(status == 400 and json.loads(payload)["error"]["param"] == "adapter_dtype", f"an unknown field: {payload}")
    status, payload = post(server, "/v1/unload_lora_adapter", {"lora_name": "gamma"})
    check((status, payload) == (200, "Success: LoRA adapter 'gamma' removed successfully."), f"unload: {status}")
    expect_error(server, {"model": "gamma", "prompt": PROMPT}, 404, "model", what="gamma after its unload")
    status, payload = post(server, "/v1/unload_lora_adapter", {"lora_name": "gamma"})
    check(status == 404 and error_message(payload) == "The lora adapter 'gamma' cannot be found.",
          f"unload again: {status} {payload}")

    # Unloaded while one of its requests streams: that request ends, with the adapter's tokens.
    post(server, "/v1/load_lora_adapter", {"lora_name": "delta", "lora_path": adapters["delta"]})
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions", json.dumps({"model": "delta", "prompt": PROMPT, "max_tokens": LONG,
                                                        "temperature": 0, "ignore_eos": True, "stream": True}))
    response = conn.getresponse()
    events = [response.readline()]  # its first token is out: the request runs
    # The step's counters are published just after its tokens go out: wait (bounded) for them.
    in_use = 'vllm:lora_requests_info{max_lora="2",waiting_lora_adapters="",running_lora_adapters="delta"}'
    running, deadline = server.metrics(), time.monotonic() + 10
    while in_use not in running and time.monotonic() < deadline:
        time.sleep(0.01)
        running = server.metrics()
    status, payload = post(server, "/v1/unload_lora_adapter", {"lora_name": "delta"})
    check(status == 200, f"unload while in use: {status} {payload}")
    events += response.readlines()
    conn.close()
    text = "".join(json.loads(e[len(b"data: "):])["choices"][0]["text"] for e in events
                   if e.startswith(b"data: ") and e.strip() != b"data: [DONE]")
    check(text == want_long["delta"], f"a request of an adapter unloaded meanwhile: {text!r}")
    check(running.get(in_use, 0) > 0,
          f"vllm:lora_requests_info while delta runs: {[k for k in running if 'lora' in k]}")
    expect_error(server, {"model": "delta", "prompt": PROMPT}, 404, "model", what="delta after its unload")

    # 200 cycles under traffic.
    stop = threading.Event()
    wrong = []

    def traffic():
        while not stop.is_set():
            for model in ("base", "alpha"):
                status, out = complete(server, model)
                if status != 200 or out["choices"][0]["text"] != want[model]:
                    wrong.append((model, status, out))
    workers = [threading.Thread(target=traffic) for _ in range(2)]
    for w in workers:
        w.start()
    rss = []
    for cycle in range(200):
        name = f"beta{cycle}"
        status, payload = post(server, "/v1/load_lora_adapter", {"lora_name": name, "lora_path": adapters["beta"]})
        check(status == 200, f"cycle {cycle} load: {status} {payload}")
        answers(server, name, want["beta"], f"cycle {cycle}")
        status, payload = post(server, "/v1/unload_lora_adapter", {"lora_name": name})
        check(status == 200, f"cycle {cycle} unload: {status} {payload}")
        if cycle in (20, 199):
            rss.append(server.rss_mb())
    stop.set()
    for w in workers:
        w.join()
    check(not wrong, f"requests answered wrongly during the cycles: {wrong[:3]}")
    # The last answer leaves before the engine thread records that step's stats: wait (bounded) for them.
    deadline = time.monotonic() + 10
    metrics = server.metrics()
    while metrics['vllm:num_requests_running{engine="0",model_name="base"}'] > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
        metrics = server.metrics()
    check(metrics['vllm:kv_cache_usage_perc{engine="0",model_name="base"}'] == 0, "KV blocks held after the cycles")
    info = [k for k in metrics if k.startswith("vllm:lora_requests_info{")]
    check(info == ['vllm:lora_requests_info{max_lora="2",waiting_lora_adapters="",running_lora_adapters=""}'],
          f"vllm:lora_requests_info when idle: {info}")
    if not SANITIZED:  # a sanitizer's shadow memory makes RSS meaningless
        check(rss[1] - rss[0] < 16, f"resident memory grew {rss[1] - rss[0]:.1f} MB over 180 load/unload cycles")
    status, models = server.json("GET", "/v1/models")
    check([m["id"] for m in models["data"]] == ["base", "alpha"], f"/v1/models after the cycles: {models}")
    print(f"200 load/use/unload cycles under traffic; RSS {rss[0]:.1f} -> {rss[1]:.1f} MB")
finally:
    server.stop()
serve_harness.finish()
