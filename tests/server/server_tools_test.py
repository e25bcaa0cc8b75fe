"""Tool calling and reasoning output through `vllm-cpp serve` with the
embedded stories260k, sampled at temperature 0.8.  A tiny model never
chooses a tool by itself, so what is checked here is what the server
guarantees: "required" and named choices always return calls whose
arguments validate against the function's parameters (checked by the
jsonschema package, independent of the C++ grammar engine), streamed calls
assemble (as the OpenAI SDK assembles them) into the whole answer's, "none"
and an unchosen "auto" give plain content, the errors vLLM gives, and
--reasoning-parser moving an unclosed thought into reasoning_content.
The parsers of models' own call formats are tested on recorded outputs in
tests/api/chat_output_parser_test.cpp.
Usage: server_tools_test.py VLLM_CPP"""
import json
import os
import sys

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_harness  # noqa: E402
from serve_harness import check, expect_error  # noqa: E402

binary = sys.argv[1]
CHAT = "/v1/chat/completions"

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 16},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}},
            "required": ["city", "days"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "parameters": {"type": "object", "properties": {
            "tz": {"type": "string", "enum": ["UTC", "CET", "PST"]}}, "required": ["tz"]}}},
    {"type": "function", "function": {
        "name": "search", "description": "Search with filters",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "maxLength": 24},
            "filters": {"type": "array", "items": {"$ref": "#/$defs/filter"}, "maxItems": 2}},
            "required": ["query", "filters"],
            "$defs": {"filter": {"type": "object", "properties": {
                "field": {"type": "string", "enum": ["date", "author"]},
                "value": {"type": "string", "maxLength": 10}}, "required": ["field", "value"]}}}}},
    {"type": "function", "function": {"name": "ping"}},  # no parameters: an empty object
]
PARAMETERS = {t["function"]["name"]: t["function"].get("parameters", {"type": "object"}) for t in TOOLS}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris tomorrow?"}]


def chat(server, **fields):
    body = {"messages": MESSAGES, "max_tokens": 160, "temperature": 0.8, **fields}
    status, out = server.json("POST", CHAT, body)
    check(status == 200, f"{fields}: status {status} {out}")
    return out if status == 200 else {"choices": []}


def check_calls(calls, what, names=None):
    """Every call names a tool (of `names` if given) and its arguments validate against its parameters."""
    check(len(calls) > 0, f"{what}: no tool calls")
    for call in calls:
        name = call["function"]["name"]
        check(call["type"] == "function" and call["id"].startswith("chatcmpl-tool-") and len(call["id"]) == 46,
              f"{what}: call shape {call}")
        check(name in PARAMETERS and (names is None or name in names), f"{what}: name {name}")
        try:
            jsonschema.validate(json.loads(call["function"]["arguments"]), PARAMETERS.get(name, {}))
        except (ValueError, jsonschema.ValidationError) as e:
            check(False, f"{what}: arguments {call['function']['arguments']!r} of {name}: {e}")


def assemble(events):
    """Per choice: content, reasoning and tool calls assembled from stream deltas as the OpenAI SDK does."""
    choices = {}
    for e in events:
        if e == "[DONE]":
            continue
        for c in json.loads(e)["choices"]:
            s = choices.setdefault(c["index"], {"content": "", "reasoning": "", "calls": {}, "finish": None})
            d = c["delta"]
            s["content"] += d.get("content") or ""
            s["reasoning"] += d.get("reasoning_content") or ""
            check(d.get("reasoning") == d.get("reasoning_content"), f"both names of the reasoning agree: {d}")
            for t in d.get("tool_calls", []):
                call = s["calls"].setdefault(t["index"], {"id": None, "name": "", "arguments": ""})
                call["id"] = t.get("id") or call["id"]
                call["name"] += t.get("function", {}).get("name") or ""
                call["arguments"] += t.get("function", {}).get("arguments") or ""
            s["finish"] = c["finish_reason"] or s["finish"]
    return choices


def whole_calls(message):
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]


server = serve_harness.Server(binary, "--enable-auto-tool-choice", "--tool-call-parser", "hermes")
try:
    # "required": at least one call of any tool, arguments valid; n = 3 too.
    names = set()
    for seed in range(6):
        out = chat(server, tools=TOOLS, tool_choice="required", seed=seed, n=3 if seed % 2 else 1)
        for c in out["choices"]:
            m = c["message"]
            check_calls(m["tool_calls"], f"required seed {seed}")
            check(m["content"] == "" and c["finish_reason"] in ("tool_calls", "length"), f"required {c}")
            check(c["finish_reason"] == "tool_calls" or c["finish_reason"] == "length", f"required finish {c}")
            names.update(t["function"]["name"] for t in m["tool_calls"])
    check(len(names) >= 2, f"sampling reaches several tools: {names}")
    out = chat(server, tools=TOOLS, tool_choice="required", parallel_tool_calls=False, seed=7, n=3)
    for c in out["choices"]:
        check(len(c["message"]["tool_calls"]) == 1, f"parallel_tool_calls false: one call, got {c['message']}")

    # A named function: one call of it, finish_reason the model's own.
    for tool in TOOLS:
        name = tool["function"]["name"]
        for seed in range(3):
            out = chat(server, tools=TOOLS, tool_choice={"type": "function", "function": {"name": name}}, seed=seed)
            for c in out["choices"]:
                check_calls(c["message"]["tool_calls"], f"named {name} seed {seed}", names={name})
                check(len(c["message"]["tool_calls"]) == 1 and c["finish_reason"] in ("stop", "length"),
                      f"named {name}: {c}")

    # Streamed calls assemble into the whole answer's (same seed), finish_reason included.
    for choice in ["required", {"type": "function", "function": {"name": "search"}}]:
        body = {"messages": MESSAGES, "max_tokens": 160, "temperature": 0.8, "seed": 11, "tools": TOOLS,
                "tool_choice": choice}
        whole = chat(server, **{k: v for k, v in body.items() if k != "messages"})["choices"][0]
        streamed = assemble(server.stream({**body, "stream": True}, path=CHAT))[0]
        calls = [(c["name"], c["arguments"]) for _, c in sorted(streamed["calls"].items())]
        check(calls == whole_calls(whole["message"]) and streamed["finish"] == whole["finish_reason"] and
              all(c["id"] for c in streamed["calls"].values()), f"stream {choice}: {streamed} vs {whole}")

    # "none" and an "auto" the model does not take: plain content, no calls.
    plain = chat(server, temperature=0, max_tokens=24)["choices"][0]
    for fields in [{"tools": TOOLS, "tool_choice": "none"}, {"tools": TOOLS}, {"tools": TOOLS, "tool_choice": "auto"}]:
        c = chat(server, temperature=0, max_tokens=24, **fields)["choices"][0]
        check(c["message"]["tool_calls"] == [] and c["finish_reason"] in ("stop", "length") and
              isinstance(c["message"]["content"], str) and c["message"]["content"], f"{fields}: {c}")
    streamed = assemble(server.stream({"messages": MESSAGES, "max_tokens": 24, "temperature": 0, "tools": TOOLS,
                                       "stream": True}, path=CHAT))[0]
    whole = chat(server, temperature=0, max_tokens=24, tools=TOOLS)["choices"][0]
    check(streamed["content"] == whole["message"]["content"] and not streamed["calls"], f"auto stream {streamed}")

    # Hermes' markers are special tokens in some tokenizers, so "auto" keeps special tokens in the
    # text (vLLM): the BOS this sample draws mid-story shows, and only it differs.
    story = [{"role": "user", "content": "Tell me a story"}]
    kept = chat(server, messages=story, tools=TOOLS, max_tokens=400, seed=0)["choices"][0]["message"]["content"]
    skipped = chat(server, messages=story, tools=TOOLS, tool_choice="none", max_tokens=400,
                   seed=0)["choices"][0]["message"]["content"]
    check("<s>" in kept and kept.replace("<s>", "") == skipped, f"auto keeps special tokens: {kept!r} vs {skipped!r}")

    # A conversation that went through a call: the assistant's call and the tool's answer render and run.
    history = MESSAGES + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 1}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}]
    status, out = server.json("POST", CHAT, {"messages": history, "tools": TOOLS, "max_tokens": 8})
    check(status == 200 and out["choices"][0]["message"]["role"] == "assistant", f"history with a call: {out}")

    # Errors, as vLLM words them, naming the field.
    expect_error(server, {"messages": MESSAGES, "tool_choice": "required"}, 400, "tool_choice", path=CHAT)
    expect_error(server, {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "sometimes"}, 400, "tool_choice",
                 path=CHAT)
    expect_error(server, {"messages": MESSAGES, "tools": TOOLS,
                          "tool_choice": {"type": "function", "function": {"name": "nope"}}}, 400, "tool_choice",
                 path=CHAT)
    expect_error(server, {"messages": MESSAGES, "tools": [{"type": "function", "function": {}}]}, 400, "tools",
                 path=CHAT)
    expect_error(server, {"messages": MESSAGES, "tools": TOOLS, "tool_choice": "required",
                          "response_format": {"type": "json_object"}}, 400, "tool_choice", path=CHAT)
    bad_schema = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "patternProperties": {"^a": {"type": "string"}}}}}]
    error = expect_error(server, {"messages": MESSAGES, "tools": bad_schema, "tool_choice": "required"}, 400, "tools",
                         path=CHAT)
    check("patternProperties" in error.get("error", {}).get("message", ""), f"the refused keyword is named: {error}")
    # Beam search under the calls' schema: every beam is valid calls.
    out = chat(server, tools=TOOLS, tool_choice="required", use_beam_search=True, n=3, temperature=0, max_tokens=60)
    check(len(out["choices"]) == 3, f"beam search: {out}")
    for c in out["choices"]:
        check_calls(c["message"]["tool_calls"], "beam search under required")
    # "required" of no tools is "none" (OpenAI's reading, and vLLM's).
    c = chat(server, tools=[], tool_choice="required", max_tokens=8)["choices"][0]
    check(c["message"]["tool_calls"] == [] and c["message"]["content"], f"required of no tools: {c}")
finally:
    server.stop()

# Without --enable-auto-tool-choice, "auto" (the default with tools) is refused; forced choices work.
server = serve_harness.Server(binary)
try:
    error = expect_error(server, {"messages": MESSAGES, "tools": TOOLS}, 400, "tool_choice", path=CHAT)
    check("--enable-auto-tool-choice" in error["error"]["message"], f"the flag is named: {error}")
    c = chat(server, tools=TOOLS, tool_choice="none", temperature=0, max_tokens=24)["choices"][0]
    check(c["message"]["content"] == plain["message"]["content"], f"none = no tools: {c} vs {plain}")
    c = chat(server, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}}, seed=1)
    check_calls(c["choices"][0]["message"]["tool_calls"], "named without the auto flag", names={"get_time"})
finally:
    server.stop()

# --reasoning-parser qwen3: stories260k never closes a thought, so a thinking answer is all reasoning,
# whole and streamed; with enable_thinking false it is all content.
server = serve_harness.Server(binary, "--reasoning-parser", "qwen3")
try:
    c = chat(server, temperature=0, max_tokens=24)["choices"][0]
    m = c["message"]
    check(m["content"] is None and m["reasoning_content"] == plain["message"]["content"] == m["reasoning"],
          f"reasoning: {m} vs {plain}")
    streamed = assemble(server.stream({"messages": MESSAGES, "max_tokens": 24, "temperature": 0, "stream": True},
                                      path=CHAT))[0]
    check(streamed["reasoning"] == m["reasoning_content"] and streamed["content"] == "", f"streamed: {streamed}")
    c = chat(server, temperature=0, max_tokens=24, chat_template_kwargs={"enable_thinking": False})["choices"][0]
    check(c["message"]["content"] == plain["message"]["content"] and c["message"]["reasoning_content"] is None,
          f"thinking off: {c}")
    expect_error(server, {"messages": MESSAGES, "response_format": {"type": "json_object"}}, 400, "response_format",
                 path=CHAT)
finally:
    server.stop()
serve_harness.finish()
