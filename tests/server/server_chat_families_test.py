"""The chat templates of the new architectures' families through `serve`:
Phi-3's rendered on a tiny Phi-3; and a tiny random model of each family with the family's real tokenizer
(../shared/tokenizers/), each conversation of ../shared/fixtures/chat_templates
/tokenized to the ids transformers gives and answered by
/v1/chat/completions with that many prompt tokens.

Usage: server_chat_families_test.py VLLM_CPP SHARED_DIR WORKDIR
Exit status: 0 pass, 1 fail (families whose shared fixtures are missing are skipped, said so)."""
import json
import os
import subprocess
import sys

from serve_harness import Server, check, finish

# (architecture, tokenizer and fixture name, the tokenizer's vocabulary size).
FAMILIES = [("gemma3", "gemma3", 262144)]
MAX_MODEL_LEN = 256  # the tiny presets' max_position_embeddings


def check_family(binary, shared, workdir, arch, name, vocab_size):
    tokenizer_dir = os.path.join(shared, "tokenizers", name)
    fixture = os.path.join(shared, "fixtures", "chat_templates", f"{name}.jsonl")
    if not (os.path.isdir(tokenizer_dir) and os.path.exists(fixture)):
        return False
    model_dir = os.path.join(workdir, f"chat-{arch}")
    subprocess.run([binary, "make-test-model", "--arch", arch, "--preset", "tiny", "--dtype", "bf16",
                    "--vocab-size", str(vocab_size), "--tokenizer", tokenizer_dir, "--out", model_dir], check=True)
    server = Server(binary, "--model", model_dir, "--max-model-len", str(MAX_MODEL_LEN))
    try:
        for r in map(json.loads, open(fixture)):
            if r["add_generation_prompt"] and not r["context"].get("tools"):
                check_conversation(server, arch, r)
    finally:
        server.stop()
    return True


def check_conversation(server, arch, record):
    what = f"{arch} {record['name']}"
    body = {"messages": record["messages"], "max_tokens": 4, "temperature": 0}
    if "error" in record:  # the template raises: a 400, as vLLM answers
        status, chat = server.json("POST", "/v1/chat/completions", body)
        check(status == 400, f"{what}: the template's error should be a 400, got {status} {chat}")
        return
    status, tok = server.json("POST", "/tokenize", {"messages": record["messages"]})
    check(status == 200 and tok["tokens"] == record["ids"], f"{what}: /tokenize {status} {tok}")
    status, chat = server.json("POST", "/v1/chat/completions", body)
    if len(record["ids"]) + body["max_tokens"] > MAX_MODEL_LEN:
        check(status == 400 and chat["error"]["param"] == "input_tokens", f"{what}: beyond the context {status}")
        return
    check(status == 200 and chat["usage"]["prompt_tokens"] == len(record["ids"]) and
          chat["choices"][0]["message"]["role"] == "assistant", f"{what}: chat {status} {chat}")


# Phi-3-mini-4k-instruct's chat_template (tokenizer_config.json since its
# July 2024 update; no Phi-3 tokenizer fixture exists, so it is checked on
# the stories260k tokenizer through /tokenize and /detokenize): the text it
# renders, as transformers' apply_chat_template(add_generation_prompt=True) gives it.
PHI3_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n' + message['content'] + "
    "'<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}")
PHI3_MESSAGES = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hello"},
                 {"role": "assistant", "content": "Hi there"}, {"role": "user", "content": "How are you?"}]
PHI3_RENDERED = ("<|system|>\nYou are helpful.<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
                 "<|user|>\nHow are you?<|end|>\n<|assistant|>\n")


def check_phi3_template(binary, workdir):
    model_dir = os.path.join(workdir, "chat-phi3")
    subprocess.run([binary, "make-test-model", "--arch", "phi3", "--preset", "tiny", "--dtype", "bf16",
                    "--out", model_dir], check=True)
    config_path = os.path.join(model_dir, "tokenizer_config.json")
    config = json.load(open(config_path))
    config["chat_template"] = PHI3_TEMPLATE
    json.dump(config, open(config_path, "w"))
    server = Server(binary, "--model", model_dir, "--max-model-len", str(MAX_MODEL_LEN))
    try:
        status, tok = server.json("POST", "/tokenize", {"messages": PHI3_MESSAGES})
        check(status == 200, f"phi3: /tokenize {status} {tok}")
        status, text = server.json("POST", "/detokenize", {"tokens": tok["tokens"]})
        check(status == 200 and text["prompt"] == PHI3_RENDERED, f"phi3: rendered {status} {text}")
        body = {"messages": PHI3_MESSAGES, "max_tokens": 4, "temperature": 0}
        status, chat = server.json("POST", "/v1/chat/completions", body)
        check(status == 200 and chat["usage"]["prompt_tokens"] == tok["count"], f"phi3: chat {status} {chat}")
    finally:
        server.stop()


# Tools reach the template as the request sent them (key order kept), and an
# assistant's earlier call as an object: Qwen3's template (which prints both)
# rendered by jinja2 the way transformers' apply_chat_template renders it,
# tokenised, against /tokenize of the same messages and tools.
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city, in °C",
                                           "parameters": {"type": "object", "required": ["city"], "properties": {
                                               "city": {"type": "string"}, "days": {"type": "integer"}}}}},
         {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]
TOOL_CONVERSATIONS = [
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Weather in Paris?"}],
    [{"role": "user", "content": "Weather in Paris?"},
     {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
         "name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
     {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21"}],
]


def transformers_render(template, messages, tools, variables):
    import jinja2.ext
    import jinja2.sandbox
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    # What vLLM hands the template: content None as "", a call's arguments as the object they encode.
    messages = json.loads(json.dumps(messages))
    for m in messages:
        m["content"] = m["content"] if m["content"] is not None else ""
        for call in m.get("tool_calls", []):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return env.from_string(template).render(messages=messages, tools=tools, add_generation_prompt=True, **variables)


def check_tool_rendering(binary, shared, workdir):
    tokenizer_dir = os.path.join(shared, "tokenizers", "qwen3")
    try:
        import jinja2  # noqa: F401
    except ImportError:
        return False
    if not os.path.isdir(tokenizer_dir):
        return False
    config = json.load(open(os.path.join(tokenizer_dir, "tokenizer_config.json")))
    model_dir = os.path.join(workdir, "chat-qwen3-tools")
    subprocess.run([binary, "make-test-model", "--arch", "qwen3", "--preset", "tiny", "--dtype", "bf16",
                    "--vocab-size", "151669", "--tokenizer", tokenizer_dir, "--out", model_dir], check=True)
    server = Server(binary, "--model", model_dir, "--max-model-len", str(MAX_MODEL_LEN))
    try:
        for messages in TOOL_CONVERSATIONS:
            expected = transformers_render(config["chat_template"], messages, TOOLS,
                                           {"eos_token": config["eos_token"], "pad_token": config["pad_token"]})
            status, ref = server.json("POST", "/tokenize", {"prompt": expected, "add_special_tokens": False})
            status2, tok = server.json("POST", "/tokenize", {"messages": messages, "tools": TOOLS})
            check(status == status2 == 200 and tok["tokens"] == ref["tokens"],
                  f"qwen3 tools: {status2} {tok} != rendered {expected!r}")
            status, chat = server.json("POST", "/v1/chat/completions", {"messages": messages, "tools": TOOLS,
                                                                        "tool_choice": "none", "max_tokens": 2})
            check(status == 200 and chat["usage"]["prompt_tokens"] == ref.get("count"), f"qwen3 tools chat: {chat}")
    finally:
        server.stop()
    return True


def main():
    binary, shared, workdir = sys.argv[1:4]
    check_phi3_template(binary, workdir)
    if not check_tool_rendering(binary, shared, workdir):
        print(f"tools in chat templates: no qwen3 tokenizer under {shared} or no jinja2, skipped")
    for family in FAMILIES:
        if not check_family(binary, shared, workdir, *family):
            print(f"{family[0]}: no tokenizer and chat template fixture under {shared}, that family skipped")
    finish()


if __name__ == "__main__":
    main()
