"""Structured outputs through `vllm-cpp serve` with the embedded stories260k,
sampled at temperature 0.8: regex, choice, GBNF grammar and json_object
constraints in every spelling vLLM accepts, checked with Python's own `re`
and `json` (independent of the C++ matcher), on both endpoints, streamed
and not, with n > 1, mixed into a batch with unconstrained requests, and
cut by max_tokens (the output is still complete).
Usage: server_structured_test.py VLLM_CPP"""
import json
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_harness  # noqa: E402
from serve_harness import check, expect_error  # noqa: E402

binary = sys.argv[1]
server = serve_harness.Server(binary)


def complete(body, path="/v1/completions"):
    status, out = server.json("POST", path, body)
    check(status == 200, f"{body}: status {status} {out}")
    return out if status == 200 else {"choices": []}


def balanced(text):
    """The language of the nested grammar below: ( inner ) pairs around a run of x or y."""
    depth = 0
    while text.startswith("("):
        text, depth = text[1:], depth + 1
    core = text[:len(text) - depth]
    return re.fullmatch(r"[xy]+", core) is not None and text[len(core):] == ")" * depth


def parses(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def whitespace_outside_strings(text):
    in_string = escaped = False
    for c in text:
        if in_string:
            in_string, escaped = (escaped or c != '"'), (not escaped and c == "\\")
        elif c == '"':
            in_string = True
        elif c in " \t\n\r":
            return True
    return False


try:
    prompts = ["Once upon a time", "The cat", "Lily and Tom went"]
    regexes = [r"[A-Z][a-z]+ (is|was) [0-9]{2,3}\.", r"(yes|no|maybe)", r"\d{3}-\d{4}", r"[a-z ]{5,20}!",
               r"(red|green|blue)( and (red|green|blue)){0,3}", r"[^0-9\n]{3,12}\?"]
    finished_by_stop = 0
    for i, pattern in enumerate(regexes):
        for seed in range(4):
            # Both spellings: structured_outputs (vLLM >= 0.11) and guided_regex (older).
            field = {"structured_outputs": {"regex": pattern}} if seed % 2 else {"guided_regex": pattern}
            body = {"prompt": prompts[seed % 3], "max_tokens": 40, "temperature": 0.8, "seed": seed, **field}
            for c in complete(body)["choices"]:
                check(re.fullmatch(pattern, c["text"]) is not None, f"regex {pattern!r}: {c['text']!r}")
                finished_by_stop += c["finish_reason"] == "stop"
    check(finished_by_stop > 12, f"most regex outputs end by completing the pattern ({finished_by_stop} of 24)")

    choices = ["happy", "sad", "very happy", "angry"]
    seen = set()
    for seed in range(12):
        field = {"guided_choice": choices} if seed % 2 else {"structured_outputs": {"choice": choices}}
        out = complete({"prompt": prompts[seed % 3], "max_tokens": 10, "temperature": 0.8, "seed": seed, **field})
        for c in out["choices"]:
            check(c["text"] in choices and c["finish_reason"] == "stop", f"choice: {c}")
            seen.add(c["text"])
    check(len(seen) >= 2, f"sampling reaches several choices: {seen}")

    nested = 'root ::= "(" root ")" | word\nword ::= [xy]+'
    for seed in range(8):
        field = {"guided_grammar": nested} if seed % 2 else {"structured_outputs": {"grammar": nested}}
        out = complete({"prompt": "Once", "max_tokens": 30, "temperature": 0.8, "seed": seed, **field})
        for c in out["choices"]:
            check(balanced(c["text"]), f"grammar: {c['text']!r}")

    # json_object on both endpoints, cut short by max_tokens: the text still parses as an object.
    for seed in range(10):
        max_tokens = 8 + 6 * seed
        body = {"prompt": prompts[seed % 3], "max_tokens": max_tokens, "temperature": 0.8, "seed": seed}
        if seed % 2:
            body["structured_outputs"] = {"json_object": True}
        else:
            body["response_format"] = {"type": "json_object"}
        for c in complete(body)["choices"]:
            try:
                check(isinstance(json.loads(c["text"]), dict), f"json_object gave {c['text']!r}")
            except json.JSONDecodeError:
                check(False, f"json_object with max_tokens {max_tokens} does not parse: {c['text']!r}")
        chat = complete({"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": max_tokens,
                         "temperature": 0.8, "seed": seed, "response_format": {"type": "json_object"}},
                        "/v1/chat/completions")
        for c in chat["choices"]:
            try:
                check(isinstance(json.loads(c["message"]["content"]), dict), f"chat json_object {c}")
            except json.JSONDecodeError:
                check(False, f"chat json_object does not parse: {c['message']['content']!r}")

    # n = 3: every sequence has its own matcher.
    out = complete({"prompt": "The cat", "max_tokens": 30, "temperature": 0.8, "seed": 1, "n": 3,
                    "structured_outputs": {"regex": regexes[4]}})
    check(len(out["choices"]) == 3 and all(re.fullmatch(regexes[4], c["text"]) for c in out["choices"]),
          f"n=3 under a regex: {out['choices']}")

    # Streaming concatenates to the non-streamed text of the same seed.
    body = {"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0.8, "seed": 3,
            "structured_outputs": {"regex": regexes[0]}}
    whole = complete(body)["choices"][0]["text"]
    events = server.stream(dict(body, stream=True))
    streamed = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
    check(streamed == whole, f"stream {streamed!r} != {whole!r}")

    # Batch invariance: greedy unconstrained requests give their solo output while constrained ones share the batch.
    solo = {p: complete({"prompt": p, "max_tokens": 24, "temperature": 0})["choices"][0]["text"] for p in prompts}
    results = {}

    def run(key, body):
        results[key] = server.json("POST", "/v1/completions", body)

    # The constrained half: regexes and, every other one, JSON schemas, each different.
    schemas = [{"type": "object", "properties": {"n": {"type": "integer", "minimum": k}}, "required": ["n"]}
               for k in range(8)]
    threads = []
    for k in range(16):
        if k % 2:
            body = {"prompt": prompts[k % 3], "max_tokens": 24, "temperature": 0}
        elif k % 4 == 0:
            body = {"prompt": prompts[k % 3], "max_tokens": 24, "temperature": 0.8, "seed": k,
                    "structured_outputs": {"regex": regexes[k % len(regexes)]}}
        else:
            body = {"prompt": prompts[k % 3], "max_tokens": 24, "temperature": 0.8, "seed": k,
                    "guided_json": schemas[k // 2]}
        threads.append(threading.Thread(target=run, args=(k, body)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, (status, out) in sorted(results.items()):
        text = out["choices"][0]["text"] if status == 200 else None
        if k % 2:
            check(text == solo[prompts[k % 3]], f"unconstrained request {k} changed in a mixed batch: {text!r}")
        elif k % 4 == 0:
            check(text is not None and re.fullmatch(regexes[k % len(regexes)], text), f"constrained {k}: {text!r}")
        else:
            try:
                value = json.loads(text)
                ok = isinstance(value, dict) and isinstance(value.get("n"), int) and value["n"] >= k // 2
            except (TypeError, ValueError):
                ok = False
            check(ok, f"schema-constrained {k}: {text!r}")

    # Errors: a 400 naming the field.
    expect_error(server, {"prompt": "x", "structured_outputs": {"regex": "(a"}}, 400, "structured_outputs.regex")
    expect_error(server, {"prompt": "x", "guided_regex": "a(?=b)"}, 400, "guided_regex")
    expect_error(server, {"prompt": "x", "guided_grammar": "root ::= root \"x\""}, 400, "guided_grammar")
    expect_error(server, {"prompt": "x", "guided_choice": []}, 400, "guided_choice")
    expect_error(server, {"prompt": "x", "guided_regex": "a", "guided_choice": ["a"]}, 400, "guided_regex",
                 what="two constraints")
    expect_error(server, {"prompt": "x", "structured_outputs": {"regex": "a", "choice": ["a"]}}, 400,
                 "structured_outputs.regex", what="two constraints in structured_outputs")
    expect_error(server, {"prompt": "x", "structured_outputs": {"whitespace_pattern": " "}}, 400,
                 "structured_outputs.whitespace_pattern")
    expect_error(server, {"prompt": "x", "structured_outputs": {"nonsense": 1}}, 400, "structured_outputs.nonsense")
    expect_error(server, {"prompt": "x", "response_format": {"type": "xml"}}, 400, "response_format")
    # disable_any_whitespace: compact JSON, whitespace only inside strings.
    for field in [{"json": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array",
                                                                                            "items": {"type": "string"}}},
                            "required": ["a", "b"]}}, {"json_object": True}]:
        for seed in range(3):
            out = complete({"prompt": prompts[seed], "max_tokens": 60, "temperature": 0.8, "seed": seed,
                            "structured_outputs": {**field, "disable_any_whitespace": True}})
            text = out["choices"][0]["text"] if out["choices"] else ""
            check(parses(text) and not whitespace_outside_strings(text), f"disable_any_whitespace {field}: {text!r}")

    # Beam search under a constraint: every beam matches (two beams may spell one text with different tokens).
    for field, valid in [({"guided_regex": regexes[0]}, lambda t: re.fullmatch(regexes[0], t)),
                         ({"guided_choice": choices}, lambda t: t in choices),
                         ({"response_format": {"type": "json_object"}}, lambda t: isinstance(json.loads(t), dict))]:
        for path in ["/v1/completions", "/v1/chat/completions"]:
            body = {"max_tokens": 24, "use_beam_search": True, "n": 3, "temperature": 0, **field}
            body.update({"prompt": prompts[0]} if path == "/v1/completions" else
                        {"messages": [{"role": "user", "content": prompts[0]}]})
            texts = [c["text"] if "text" in c else c["message"]["content"] for c in complete(body, path)["choices"]]
            try:
                ok = len(texts) == 3 and all(valid(t) for t in texts)
            except ValueError:
                ok = False
            check(ok, f"beam search under {field} on {path}: {texts}")
    check(complete({"prompt": "x", "max_tokens": 2, "response_format": {"type": "text"},
                    "guided_decoding_backend": "xgrammar"})["choices"] != [], "text format and a backend name pass")
finally:
    server.stop()
serve_harness.finish()
