"""The chat templates of the new architectures' families through `serve`:
a tiny random model of the family with the family's real tokenizer
(../shared/tokenizers/), each conversation of ../shared/fixtures/chat_templates
/tokenized to the ids transformers gives and answered by
/v1/chat/completions with that many prompt tokens.

Usage: server_chat_families_test.py VLLM_CPP SHARED_DIR WORKDIR
Exit status: 0 pass, 1 fail, 77 skipped (the shared fixtures are missing)."""
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


def main():
    binary, shared, workdir = sys.argv[1:4]
    ran = [check_family(binary, shared, workdir, *family) for family in FAMILIES]
    if not any(ran):
        print(f"SKIPPED: no family's tokenizer and chat template fixture under {shared}")
        sys.exit(77)
    finish()


if __name__ == "__main__":
    main()
