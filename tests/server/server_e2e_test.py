"""`vllm-cpp serve` end to end over HTTP on a loopback port, with the
embedded stories260k: every endpoint, streaming against non-streaming,
concurrency, error envelopes, API keys, body limits and a clean SIGTERM.
Usage: server_e2e_test.py VLLM_CPP REPO_ROOT"""
import atexit
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_harness  # noqa: E402
from serve_harness import check, expect_error  # noqa: E402

binary, root = sys.argv[1:3]
golden = {c["name"]: c for c in json.load(open(f"{root}/tests/golden/stories260k/greedy.json"))["cases"]}


def Server(*flags):
    return serve_harness.Server(binary, *flags)


server = Server("--served-model-name", "stories260K", "alias")
try:
    # Liveness, version, models.
    status, ctype, payload = server.request("GET", "/health")
    check(status == 200 and payload == b"", f"/health {status} {payload!r}")
    check(server.json("GET", "/version") == (200, {"version": "0.1.0"}), "/version")
    status, models = server.json("GET", "/v1/models")
    check(status == 200 and [m["id"] for m in models["data"]] == ["stories260K", "alias"], f"/v1/models {models}")
    check(models["data"][0]["max_model_len"] == 512 and models["data"][0]["object"] == "model", "model card")

    # Greedy completions equal the golden text; the alias works; usage counts.
    case = golden["once_upon_64"]
    body = {"prompt": case["prompt"], "max_tokens": 64, "temperature": 0, "ignore_eos": True}
    status, out = server.json("POST", "/v1/completions", body)
    check(status == 200 and out["object"] == "text_completion" and out["model"] == "stories260K", f"completion {out}")
    check(out["id"].startswith("cmpl-") and isinstance(out["created"], int), "id and created")
    (choice,) = out["choices"]
    check(choice["text"] == case["output_text"] and choice["finish_reason"] == "length", "golden text")
    check(out["usage"] == {"prompt_tokens": len(case["prompt_token_ids"]), "completion_tokens": 64,
                           "total_tokens": len(case["prompt_token_ids"]) + 64, "prompt_tokens_details": None},
          f"usage {out['usage']}")
    status, aliased = server.json("POST", "/v1/completions", dict(body, model="alias"))
    check(status == 200 and aliased["model"] == "alias" and aliased["choices"][0]["text"] == choice["text"], "alias")

    # Streaming: the deltas concatenate to the non-streamed text; one finish per index; usage; [DONE].
    events = server.stream(dict(body, stream=True, stream_options={"include_usage": True}))
    check(events[-1] == "[DONE]", "stream ends with [DONE]")
    chunks = [json.loads(e) for e in events[:-1]]
    usage_chunk = chunks.pop()
    check(usage_chunk["choices"] == [] and usage_chunk["usage"]["completion_tokens"] == 64, "usage chunk")
    check(all(len(c["choices"]) == 1 and c["usage"] is None for c in chunks), "one choice per chunk, no usage")
    check(len({(c["id"], c["created"], c["model"]) for c in chunks}) == 1, "same id, created, model in every chunk")
    check("".join(c["choices"][0]["text"] for c in chunks) == case["output_text"], "streamed text")
    finishes = [c["choices"][0]["finish_reason"] for c in chunks]
    check(finishes[-1] == "length" and all(f is None for f in finishes[:-1]), f"finish reasons {finishes}")

    # continuous_usage_stats: every chunk counts its choice's tokens so far.
    events = server.stream(dict(body, max_tokens=5, stream=True,
                                stream_options={"include_usage": True, "continuous_usage_stats": True}))
    counts = [json.loads(e)["usage"]["completion_tokens"] for e in events[:-2]]
    check(counts == [1, 2, 3, 4, 5], f"continuous usage {counts}")

    # Stop strings stream exactly as they complete without streaming.
    stop_body = {"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0, "stop": ["le gi"]}
    status, stopped = server.json("POST", "/v1/completions", stop_body)
    check(stopped["choices"][0]["text"] == ", there was a litt" and stopped["choices"][0]["stop_reason"] == "le gi",
          f"stop string {stopped['choices']}")
    streamed = [json.loads(e) for e in server.stream(dict(stop_body, stream=True))[:-1]]
    check("".join(c["choices"][0]["text"] for c in streamed) == ", there was a litt", "streamed stop string")

    # Batched prompts with n = 2: choice index = prompt * n + i.
    status, batch = server.json("POST", "/v1/completions",
                                {"prompt": ["Once upon a time", [1, 403]], "n": 2, "max_tokens": 8, "seed": 3,
                                 "temperature": 0.8})
    check(status == 200 and [c["index"] for c in batch["choices"]] == [0, 1, 2, 3], f"batch indices {batch}")
    check(batch["usage"]["prompt_tokens"] == 5 + 2, f"prompt tokens counted once per prompt {batch['usage']}")
    events = server.stream({"prompt": ["Once upon a time", [1, 403]], "n": 2, "max_tokens": 8, "seed": 3,
                            "temperature": 0.8, "stream": True})
    texts = {}
    for e in events[:-1]:
        c = json.loads(e)["choices"][0]
        texts[c["index"]] = texts.get(c["index"], "") + c["text"]
    check(texts == {c["index"]: c["text"] for c in batch["choices"]}, "seeded streamed batch equals non-streamed")

    # Chat: the template's prompt (as /tokenize renders it) completed as a plain completion would be.
    messages = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me a story"}]
    status, tok = server.json("POST", "/tokenize", {"messages": messages})
    check(status == 200 and tok["count"] == len(tok["tokens"]) and tok["tokens"][0] == 1, f"chat tokenize {tok}")
    chat_body = {"messages": messages, "max_tokens": 24, "temperature": 0}
    status, chat = server.json("POST", "/v1/chat/completions", chat_body)
    check(status == 200 and chat["object"] == "chat.completion" and chat["id"].startswith("chatcmpl-"), f"chat {chat}")
    message = chat["choices"][0]["message"]
    check(message["role"] == "assistant" and chat["usage"]["prompt_tokens"] == tok["count"], f"chat message {chat}")
    status, plain = server.json("POST", "/v1/completions", {"prompt": tok["tokens"], "max_tokens": 24, "temperature": 0})
    check(message["content"] == plain["choices"][0]["text"], "chat content equals the completion of its prompt")
    events = server.stream(dict(chat_body, stream=True), "/v1/chat/completions")
    chunks = [json.loads(e) for e in events[:-1]]
    check(chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}, f"role chunk {chunks[0]}")
    check(all(c["object"] == "chat.completion.chunk" for c in chunks), "chat chunk objects")
    check("".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == message["content"], "chat stream")
    check([c["choices"][0]["finish_reason"] for c in chunks].count("length") == 1, "one chat finish")
    # max_completion_tokens overrides max_tokens, whichever comes first in the body.
    for capped_body in ({"messages": messages, "max_tokens": 9, "max_completion_tokens": 3, "ignore_eos": True},
                        {"max_completion_tokens": 3, "messages": messages, "max_tokens": 9, "ignore_eos": True}):
        status, capped = server.json("POST", "/v1/chat/completions", capped_body)
        check(status == 200 and capped["usage"]["completion_tokens"] == 3, f"max_completion_tokens {capped}")
    # Without max_tokens, chat may use the rest of the context.
    status, rest = server.json("POST", "/v1/chat/completions", {"messages": messages, "ignore_eos": True})
    check(rest["usage"]["completion_tokens"] == 512 - tok["count"], f"chat default max_tokens {rest['usage']}")
    check(rest["choices"][0]["finish_reason"] == "length", "chat runs to the context limit")
    expect_error(server, {"messages": []}, 400, "messages", path="/v1/chat/completions")
    expect_error(server, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400, "messages",
                 path="/v1/chat/completions", what="image part")
    expect_error(server, {"messages": [{"role": "user", "content": [{"type": 1, "text": "x"}]}]}, 400, "messages",
                 path="/v1/chat/completions", what="part type not a string")
    expect_error(server, {"messages": messages, "add_generation_prompt": True, "continue_final_message": True}, 400,
                 "continue_final_message", path="/v1/chat/completions")

    # Tokenize / detokenize: the same count as a completion's prompt_tokens; round trip.
    status, tok = server.json("POST", "/tokenize", {"prompt": case["prompt"], "return_token_strs": True})
    check(tok["tokens"] == case["prompt_token_ids"] and tok["max_model_len"] == 512, f"tokenize {tok}")
    check(tok["token_strs"][1] == "\u2581Once", f"token strings {tok['token_strs']}")
    status, tok_plain = server.json("POST", "/tokenize", {"prompt": "Lily went home.", "add_special_tokens": False})
    status, detok = server.json("POST", "/detokenize", {"tokens": tok_plain["tokens"]})
    check(detok == {"prompt": "Lily went home."}, f"detokenize round trip {detok}")
    check(server.json("POST", "/detokenize", {"tokens": []}) == (200, {"prompt": ""}), "empty detokenize")
    expect_error(server, {"tokens": [1, 100000]}, 400, "tokens", path="/detokenize")
    expect_error(server, {"prompt": "x", "return_token_strs": 1}, 400, "return_token_strs", path="/tokenize")

    # Logprobs in the OpenAI shapes, against the golden log-softmax values.
    top5 = next(c for c in json.load(open(f"{root}/tests/golden/stories260k/logprobs_top5.json"))["cases"]
                if c["name"] == "once_upon")
    lp_body = {"prompt": top5["prompt_token_ids"], "max_tokens": 8, "temperature": 0, "logprobs": 3}
    status, out = server.json("POST", "/v1/completions", lp_body)
    lp = out["choices"][0]["logprobs"]
    check("".join(lp["tokens"]) == out["choices"][0]["text"], f"logprob tokens concatenate to the text {lp['tokens']}")
    check(all(abs(a - p["logprob"]) < 1e-4 for a, p in zip(lp["token_logprobs"], top5["positions"])),
          "token_logprobs match the golden ones")
    check(all(len(t) == 3 for t in lp["top_logprobs"]), "greedy: exactly k top entries")
    check(lp["text_offset"] == [sum(len(t) for t in lp["tokens"][:i]) for i in range(8)], "text offsets")
    streamed = [json.loads(e)["choices"][0]["logprobs"] for e in server.stream(dict(lp_body, stream=True))[:-1]]
    check(sum((x["token_logprobs"] for x in streamed if x), []) == lp["token_logprobs"], "streamed logprobs")
    status, chat_lp = server.json("POST", "/v1/chat/completions",
                                  {"messages": messages, "max_tokens": 6, "temperature": 0, "logprobs": True,
                                   "top_logprobs": 2})
    content = chat_lp["choices"][0]["logprobs"]["content"]
    check("".join(c["token"] for c in content) == chat_lp["choices"][0]["message"]["content"], "chat logprob tokens")
    check(all(len(c["top_logprobs"]) == 2 and bytes(c["bytes"]).decode() == c["token"] for c in content), "chat top")
    expect_error(server, {"messages": messages, "top_logprobs": 2}, 400, "top_logprobs", path="/v1/chat/completions")
    # prompt_logprobs (vLLM's extra): null, then per prompt token its logprob, rank and text and the top k.
    ids = top5["prompt_token_ids"]
    for n in (1, 2):
        status, out = server.json("POST", "/v1/completions", {"prompt": ids, "max_tokens": 2, "prompt_logprobs": 3,
                                                               "n": n, "temperature": 0.5, "seed": 1})
        for c in out["choices"] if status == 200 else [{}]:
            plp = c.get("prompt_logprobs") or [0]
            check(len(plp) == len(ids) and plp[0] is None and
                  all(abs(plp[i][str(ids[i])]["logprob"] - top5["prompt_logprobs"][i]) < 1e-4 and
                      len(plp[i]) in (3, 4) and plp[i][str(ids[i])]["decoded_token"] for i in range(1, len(ids))),
                  f"prompt_logprobs n={n}: {status} {str(out)[:300]}")
    status, chat_plp = server.json("POST", "/v1/chat/completions", {"messages": messages, "max_tokens": 2,
                                                                    "prompt_logprobs": 0})
    plp = chat_plp.get("prompt_logprobs") or []
    check(status == 200 and plp[0] is None and len(plp) == chat_plp["usage"]["prompt_tokens"] and
          all(len(p) == 1 and list(p.values())[0]["rank"] >= 1 for p in plp[1:]), f"chat prompt_logprobs {chat_plp}")
    expect_error(server, {"prompt": "x", "prompt_logprobs": 1, "stream": True}, 400, "prompt_logprobs")
    expect_error(server, {"prompt": "x", "logprobs": 21}, 400, "logprobs", what="logprobs beyond --max-logprobs")

    # Echo.
    status, echoed = server.json("POST", "/v1/completions", dict(body, echo=True, max_tokens=4))
    check(echoed["choices"][0]["text"].startswith(case["prompt"] + ", there"), f"echo {echoed['choices']}")

    # 64 concurrent streams: each greedy one equals its solo output.
    prompts = [f"Once upon a time {i}" for i in range(64)]
    solo = {}
    for i in range(64):
        s, o = server.json("POST", "/v1/completions", {"prompt": prompts[i], "max_tokens": 24, "temperature": 0})
        solo[i] = o["choices"][0]["text"]
    results = {}

    def run(i):
        ev = server.stream({"prompt": prompts[i], "max_tokens": 24, "temperature": 0, "stream": True})
        results[i] = "".join(json.loads(e)["choices"][0]["text"] for e in ev[:-1])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(len(results) == 64, f"{len(results)} of 64 concurrent streams completed")
    check(all(results[i] == solo[i] for i in solo), "concurrent greedy streams equal their solo outputs")

    # Errors: envelope, status, param; validation before any stream starts.
    expect_error(server, "{not json", 400, None, what="malformed JSON")
    expect_error(server, "[1, 2]", 400, None, what="not an object")
    expect_error(server, {"max_tokens": 3}, 400, "prompt", what="missing prompt")
    expect_error(server, {"prompt": "x", "max_tokens": "3"}, 400, "max_tokens", what="wrong type")
    expect_error(server, {"prompt": "x", "temperature": 3}, 400, "temperature", what="out of range")
    expect_error(server, {"prompt": "x", "temperature": 3, "stream": True}, 400, "temperature", what="stream error")
    expect_error(server, {"prompt": "x", "n": 2, "temperature": 0}, 400, "n", what="greedy n")
    expect_error(server, {"prompt": "x", "model": "gpt-4"}, 404, "model", what="unknown model")
    expect_error(server, {"prompt": "x", "max_tokens": 600}, 400, "max_tokens", what="beyond the context")
    expect_error(server, {"prompt": [1] * 600}, 400, "input_tokens", what="prompt too long")
    expect_error(server, {"prompt": [1, 99999]}, 400, "prompt", what="id outside the vocabulary")
    expect_error(server, {"prompt": []}, 400, "prompt", what="empty prompt list")
    expect_error(server, {"prompt": "x", "suffix": "y"}, 400, "suffix", what="suffix")
    expect_error(server, {"prompt": "x", "stream_options": {"include_usage": True}}, 400, "stream_options")
    # Fields of features to come: a 400 naming them, unless at their default; advisory fields pass.
    for field, value in [("structural_tag", {"type": "x"}), ("priority", 1), ("logits_processors", ["x"]),
                         ("return_token_ids", True), ("vllm_xargs", {"a": 1})]:
        expect_error(server, {"prompt": "x", field: value}, 400, field, what=f"{field}={value}")
    for field, value in [("response_format", {"type": "text"}), ("guided_json", None), ("priority", 0),
                         ("bad_words", []), ("user", "me"), ("request_id", "r1"), ("tool_choice", "none")]:
        check(server.json("POST", "/v1/completions", {"prompt": "x", "max_tokens": 1, field: value})[0] == 200,
              f"{field}={value} is accepted")
    # allowed_token_ids and bad_words (vLLM's sampling fields).
    ids = case["prompt_token_ids"]
    status, allowed = server.json("POST", "/v1/completions", {"prompt": case["prompt"], "max_tokens": 12,
                                                               "temperature": 0.9, "seed": 1, "logprobs": 0,
                                                               "allowed_token_ids": ids[1:4]})
    pieces = {server.json("POST", "/detokenize", {"tokens": [i]})[1]["prompt"] for i in ids[1:4]}
    check(status == 200 and all(t.strip() in {p.strip() for p in pieces} for t in allowed["choices"][0]["logprobs"]["tokens"]),
          f"allowed_token_ids {allowed}")
    expect_error(server, {"prompt": "x", "allowed_token_ids": [99999]}, 400, "allowed_token_ids")
    expect_error(server, {"prompt": "x", "allowed_token_ids": []}, 400, "allowed_token_ids")
    status, banned = server.json("POST", "/v1/completions", {"prompt": case["prompt"], "max_tokens": 64,
                                                              "temperature": 0, "ignore_eos": True, "bad_words": ["there"]})
    check(status == 200 and "there" not in banned["choices"][0]["text"].split() and " there" in case["output_text"],
          f"bad_words {banned}")
    # truncate_prompt_tokens keeps the last k prompt tokens: usage counts k, and the text is that of those k.
    ids = case["prompt_token_ids"]
    status, truncated = server.json("POST", "/v1/completions", {"prompt": case["prompt"], "max_tokens": 8,
                                                                 "temperature": 0, "truncate_prompt_tokens": 3})
    status_ids, by_ids = server.json("POST", "/v1/completions", {"prompt": ids[-3:], "max_tokens": 8, "temperature": 0})
    check(status == 200 and truncated["usage"]["prompt_tokens"] == 3 and
          truncated["choices"][0]["text"] == by_ids["choices"][0]["text"], f"truncate_prompt_tokens {truncated}")
    status, chat_truncated = server.json("POST", "/v1/chat/completions",
                                         {"messages": [{"role": "user", "content": "x " * 700}], "ignore_eos": True,
                                          "truncate_prompt_tokens": 100})
    check(status == 200 and chat_truncated["usage"]["prompt_tokens"] == 100 and
          chat_truncated["usage"]["completion_tokens"] == 412, f"chat truncate_prompt_tokens {chat_truncated['usage']}")
    expect_error(server, {"prompt": "x", "truncate_prompt_tokens": 0}, 400, "truncate_prompt_tokens")
    expect_error(server, {"prompt": "x", "truncate_prompt_tokens": 513}, 400, "truncate_prompt_tokens")
    status, missing = server.json("GET", "/v1/nothing")
    check(status == 404 and missing["error"]["code"] == 404, f"unknown route {status} {missing}")
    # A path that is not UTF-8 still gets its 404 envelope (the message carries U+FFFD).
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 404") and json.loads(body)["error"]["code"] == 404, f"non-UTF-8 path {raw!r}")
    status, wrong = server.json("GET", "/v1/completions")
    check(status == 405 and wrong["error"]["code"] == 405, f"wrong method {status} {wrong}")
    check(server.request("GET", "/health")[0] == 200, "still healthy after the errors")

    # Metrics: vLLM's names and labels, counts that add up.
    long_prompt = golden["long_300_tokens_64"]["prompt"]
    for _ in range(2):  # the second finds the first's blocks cached
        check(server.json("POST", "/v1/completions", {"prompt": long_prompt, "max_tokens": 2})[0] == 200, "long")
    m = server.metrics()
    labels = 'engine="0",model_name="stories260K"'
    for name in ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:num_preemptions_total",
                 "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                 "vllm:time_to_first_token_seconds_count", "vllm:inter_token_latency_seconds_count",
                 "vllm:e2e_request_latency_seconds_count", "vllm:request_prompt_tokens_count"]:
        check(f"{name}{{{labels}}}" in m, f"metric {name}")
    finished = sum(m.get(f'vllm:request_success_total{{{labels},finished_reason="{r}"}}', 0)
                   for r in ("stop", "length", "abort"))
    check(finished == m.get(f"vllm:e2e_request_latency_seconds_count{{{labels}}}"), "one e2e latency per finish")
    check(m.get(f"vllm:time_to_first_token_seconds_count{{{labels}}}") == finished, "one TTFT per sequence")
    check(m.get(f"vllm:request_queue_time_seconds_count{{{labels}}}") == finished, "one queue time per sequence")
    check(m.get(f'vllm:time_to_first_token_seconds_bucket{{{labels},le="+Inf"}}') == finished, "+Inf bucket")
    check(m.get(f"vllm:prefix_cache_hits_total{{{labels}}}", 0) > 0, "prefix cache hits counted")

    # 200 clients leave mid-stream: their requests are aborted and every KV block comes back.
    aborted_before = m.get(f'vllm:request_success_total{{{labels},finished_reason="abort"}}', 0)
    finished_before = finished  # from the same scrape
    request = json.dumps({"prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": True,
                          "temperature": 0.8, "stream": True})

    for start in range(0, 200, 50):
        threads = [threading.Thread(target=server.leave_mid_stream, args=(request,)) for _ in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    deadline = time.time() + 60
    while time.time() < deadline:
        m = server.metrics()
        finished = sum(m[f'vllm:request_success_total{{{labels},finished_reason="{r}"}}']
                       for r in ("stop", "length", "abort"))
        # The engine's counts can reach 0 before the last job, on its connection's strand, counts its finish.
        if (m[f"vllm:num_requests_running{{{labels}}}"] == 0 and m[f"vllm:num_requests_waiting{{{labels}}}"] == 0
                and finished - finished_before >= 200):
            break
        time.sleep(0.2)
    check(m[f"vllm:num_requests_running{{{labels}}}"] == 0, "no request left running after the disconnects")
    check(m[f"vllm:kv_cache_usage_perc{{{labels}}}"] == 0, f"KV usage {m[f'vllm:kv_cache_usage_perc{{{labels}}}']}")
    aborted = m[f'vllm:request_success_total{{{labels},finished_reason="abort"}}'] - aborted_before
    check(aborted == 200, f"{aborted} of 200 disconnected requests counted as aborted")
    check(server.request("GET", "/health")[0] == 200, "still healthy after 200 disconnects")

    # The load generator against this server; its files go to a scratch folder removed at exit.
    scratch = tempfile.mkdtemp(prefix="vllm-bench-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    run = subprocess.run([binary, "bench", "serve", "--base-url", f"http://127.0.0.1:{server.port}",
                          "--num-prompts", "12", "--max-concurrency", "4", "--input-len", "20", "--output-len", "10",
                          "--request-rate", "40",
                          "--output-json", f"{scratch}/bench-serve.json"],
                         capture_output=True, text=True, timeout=120)
    check(run.returncode == 0 and "Successful requests:" in run.stdout, f"bench serve: {run.returncode} {run.stderr}")
    report = json.load(open(f"{scratch}/bench-serve.json"))
    check(report["completed"] == 12 and report["failed"] == 0 and report["total_output_tokens"] == 120
          and report["total_input_tokens"] == 240, f"bench serve report {report}")
    check(all(f"{s}_{m}_ms" in report for s in ("mean", "median", "p90", "p99")
              for m in ("ttft", "tpot", "itl", "e2el")), "bench serve keys")
    # Text prompts of one-token words (for servers that refuse token ids): exact token counts.
    text_report = f"{scratch}/bench-text.json"
    run = subprocess.run([binary, "bench", "serve", "--base-url", f"http://127.0.0.1:{server.port}", "--num-prompts",
                          "3", "--input-len", "16", "--output-len", "4", "--tokenizer", f"{root}/models/stories260k",
                          "--output-json", text_report], capture_output=True, text=True, timeout=120)
    report = json.load(open(text_report))
    check(run.returncode == 0 and report["completed"] == 3 and report["total_input_tokens"] == 48,
          f"bench serve --tokenizer {run.stderr} {report}")
    dataset = f"{scratch}/bench-dataset.jsonl"
    with open(dataset, "w") as f:
        f.write(json.dumps({"prompt": "Once upon a time", "output_len": 7}) + "\n")
        f.write(json.dumps({"prompt": [1, 403, 407], "output_len": 5}) + "\n")
    run = subprocess.run([binary, "bench", "serve", "--base-url", f"http://127.0.0.1:{server.port}", "--dataset",
                          dataset, "--output-json", dataset + ".json"], capture_output=True, text=True, timeout=120)
    report = json.load(open(dataset + ".json"))
    check(run.returncode == 0 and report["completed"] == 2 and report["total_output_tokens"] == 12,
          f"bench serve --dataset {report}")
    # One log line per request: method, path, status, tokens, latency.
    check(any(re.search(r"POST /v1/completions 200 prompt_tokens=\d+ completion_tokens=\d+ \d+ ms", l)
              for l in server.log), "request log lines")
    check(any("GET /\\xff\\xfe 404" in l for l in server.log), "a path that is not UTF-8 is escaped in the log")
finally:
    server.stop()

# SIGTERM with requests in flight: their streams end (finish_reason "abort", then [DONE]) and serve exits 0.
# One sequence at a time and many queued requests (stories260k writes 500 tokens in well under a second, so a
# few would all be done before the signal): those still waiting when it comes must end with "abort".
server = Server("--max-num-seqs", "1", "--served-model-name", "stories260K")
body = json.dumps({"prompt": "Once", "max_tokens": 500, "ignore_eos": True, "temperature": 0.8, "stream": True})
sockets = []
for _ in range(48):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    sockets.append(sock)
labels = 'engine="0",model_name="stories260K"'
deadline = time.time() + 30
waiting = 0
while time.time() < deadline and waiting < 8:
    waiting = server.metrics().get(f"vllm:num_requests_waiting{{{labels}}}", 0)
check(waiting >= 8, f"requests queued behind the running one before the signal: {waiting}")
started = time.time()
server.stop()
received = [b"" for _ in sockets]
for i, sock in enumerate(sockets):
    while not received[i].endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        received[i] += chunk
    sock.close()
check(time.time() - started < 10, "SIGTERM ends in-flight requests within seconds")
aborted = 0
for i, raw in enumerate(received):
    # A request still in the input workers' queue at the signal (or handed to the engine just after it stopped
    # taking requests) never reached the engine: it is refused with 503, "the server is shutting down" or "the
    # engine is shutting down" (a client or balancer may send it elsewhere), not given a stream it never started.
    if raw.startswith(b"HTTP/1.1 503 ") and re.search(rb"the (server|engine) is shutting down", raw):
        continue
    events = re.findall(r"data: (.*?)\n\n", raw.decode(errors="replace"))
    finishes = [json.loads(e)["choices"][0]["finish_reason"] for e in events[:-1]]
    check(events and events[-1] == "[DONE]" and finishes and finishes[-1] in ("abort", "length"),
          f"stream {i} ends with a finish reason, then [DONE]: {events[-2:] if events else raw[:200]}")
    aborted += bool(finishes) and finishes[-1] == "abort"
# A 500-token request takes tens of milliseconds, far more than the signal takes to arrive after the last /metrics.
check(aborted >= waiting - 1, f"requests waiting at the signal end with abort: {aborted} of {waiting}")

# API keys and the body limit.
server = Server("--api-key", "sekret", "--max-request-body-bytes", "2000")
try:
    body = {"prompt": "Once", "max_tokens": 2}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic sekret"}):
        status, payload = server.json("POST", "/v1/completions", body, headers)
        check(status == 401 and payload == {"error": "Unauthorized"}, f"auth {headers}: {status} {payload}")
    status, _ = server.json("POST", "/v1/completions", body, {"Authorization": "bearer sekret"})
    check(status == 200, f"right key (scheme in any case): {status}")
    check(server.request("GET", "/health")[0] == 200, "/health needs no key")
    expect_error(server, {"prompt": "x" * 5000}, 413, None, headers={"Authorization": "Bearer sekret"},
                 what="body too large")
finally:
    server.stop()

# vLLM's command line carries over: no-effect flags are accepted, features to come only at their defaults,
# unknown flags exit 2; a bad model directory is one error line.
server = Server("--chat-template", "{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}")
try:
    status, tok = server.json("POST", "/tokenize", {"messages": [{"role": "user", "content": "Hi"}],
                                                    "add_special_tokens": False})
    status, plain = server.json("POST", "/tokenize", {"prompt": "[user] Hi", "add_special_tokens": False})
    check(tok["tokens"] == plain["tokens"], f"--chat-template renders the messages {tok} {plain}")
finally:
    server.stop()
server = Server("--dtype", "bfloat16", "--trust-remote-code", "--enforce-eager", "-tp", "1", "--seed", "3",
                "--gpu-memory-utilization", "0.5", "--max-loras", "1", "--scheduling-policy", "fcfs",
                "--response-role", "narrator", "--disable-uvicorn-access-log", "--max-logprobs", "5")
try:
    # --seed: requests without a seed draw from one server-wide generator, so a fresh server repeats them.
    first = server.json("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 12})[1]["choices"][0]["text"]
    status, chat = server.json("POST", "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3})
    check(status == 200 and chat["choices"][0]["message"]["role"] == "narrator", f"--response-role {chat}")
    expect_error(server, {"prompt": "x", "logprobs": 6}, 400, "logprobs", what="--max-logprobs 5")
finally:
    server.stop()
server = Server("--seed", "3")
try:
    again = server.json("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 12})[1]["choices"][0]["text"]
    check(again == first, f"--seed makes unseeded requests repeatable: {first!r} vs {again!r}")
finally:
    server.stop()
for flags, code, message in [(["--tensor-parallel-size", "2"], 1, "one process per rank: mpirun -np 2"),
                             (["--no-such-flag"], 2, "--no-such-flag"),
                             (["/nonexistent"], 1, "/nonexistent")]:
    run = subprocess.run([binary, "serve", "--port", "0", *flags], capture_output=True, text=True, timeout=60)
    check(run.returncode == code and message in run.stderr and len(run.stderr.strip().splitlines()) == 1,
          f"serve {flags}: exit {run.returncode}, stderr {run.stderr!r}")

serve_harness.finish()
