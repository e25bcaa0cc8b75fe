"""A constrained answer after a reasoning model's thinking, as vLLM serves
it: with --reasoning-parser qwen3 and a response_format, the thought is
free and only the answer after </think> (one token of Qwen3's vocabulary)
follows the schema.  On a random-weight Qwen3 with the real tokenizer:
- a logit_bias on </think> makes it the first token; the answer after it
  parses and validates against the schema (jsonschema, independent of the
  C++ grammar engine), streamed and whole alike;
- without it the greedy model never closes its thought: the reasoning is
  the same text as the unconstrained answer, so the thought was not
  constrained;
- beam search with such a constraint is a 400.
Usage: server_reasoning_structured_test.py VLLM_CPP SHARED_DIR WORK_DIR
Exit status: 0 pass, 1 fail, 77 skipped (no Qwen3 tokenizer under SHARED_DIR)."""
import json
import os
import subprocess
import sys

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_harness  # noqa: E402
from serve_harness import check, expect_error  # noqa: E402

binary, shared, work = sys.argv[1:4]
tokenizer = os.path.join(shared, "tokenizers", "qwen3")
if not os.path.isdir(tokenizer):
    print(f"skipped: no Qwen3 tokenizer at {tokenizer}")
    sys.exit(77)
model = os.path.join(work, "reasoning-qwen3")
subprocess.run([binary, "make-test-model", "--arch", "qwen3", "--preset", "tiny", "--dtype", "bf16",
                "--vocab-size", "151669", "--tokenizer", tokenizer, "--out", model], check=True, capture_output=True)

CHAT = "/v1/chat/completions"
SCHEMA = {"type": "object", "properties": {"count": {"type": "integer", "minimum": 0, "maximum": 99},
                                           "mood": {"enum": ["calm", "tense"]}},
          "required": ["count", "mood"], "additionalProperties": False}
FORMAT = {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}
MESSAGES = [{"role": "user", "content": "How many birds, and how do they feel?"}]


def chat(server, **fields):
    body = {"messages": MESSAGES, "max_tokens": 40, "temperature": 0, **fields}
    status, out = server.json("POST", CHAT, body)
    check(status == 200, f"{fields}: status {status} {out}")
    return out["choices"][0] if status == 200 else {"message": {}, "finish_reason": None}


def streamed(server, **fields):
    body = {"messages": MESSAGES, "max_tokens": 40, "temperature": 0, "stream": True, **fields}
    content, reasoning = "", ""
    for event in server.stream(body, path=CHAT):
        if event == "[DONE]":
            continue
        for c in json.loads(event)["choices"]:
            content += c["delta"].get("content") or ""
            reasoning += c["delta"].get("reasoning_content") or ""
    return content, reasoning


server = serve_harness.Server(binary, "--model", model, "--reasoning-parser", "qwen3")
try:
    status, tokens = server.json("POST", "/tokenize", {"model": model, "prompt": "</think>",
                                                        "add_special_tokens": False})
    check(status == 200 and len(tokens["tokens"]) == 1, f"</think> is one token: {tokens}")
    end_of_thinking = tokens["tokens"][0]
    bias = {str(end_of_thinking): 100}

    for seed in (1, 2, 3):
        c = chat(server, response_format=FORMAT, logit_bias=bias, temperature=0.8, seed=seed)
        m = c["message"]
        check(not m.get("reasoning_content"), f"seed {seed}: the thought ends at once: {m}")
        try:
            jsonschema.validate(json.loads(m.get("content") or ""), SCHEMA)
        except (ValueError, jsonschema.ValidationError) as e:
            check(False, f"seed {seed}: the answer after </think> follows the schema: {m} ({e})")

    whole = chat(server, response_format=FORMAT, logit_bias=bias)["message"]
    content, reasoning = streamed(server, response_format=FORMAT, logit_bias=bias)
    check(content == whole.get("content") and reasoning == "", f"streamed {content!r} vs whole {whole}")

    # Never closing its thought, the greedy model thinks what it would have answered unconstrained.
    free = chat(server)["message"]
    thought = chat(server, response_format=FORMAT)
    check(thought["message"].get("reasoning_content") == free.get("reasoning_content")
          and free.get("reasoning_content") and not thought["message"].get("content")
          and thought["finish_reason"] == "length", f"the thought is free: {thought} vs {free}")

    expect_error(server, {"messages": MESSAGES, "response_format": FORMAT, "use_beam_search": True, "n": 2,
                          "temperature": 0}, 400, "response_format", path=CHAT)
finally:
    server.stop()
serve_harness.finish()
