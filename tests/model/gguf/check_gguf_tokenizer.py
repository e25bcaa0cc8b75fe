#!/usr/bin/env python3
"""A GGUF file's own vocabulary tokenizes as the Hugging Face tokenizer it came from.

Usage: check_gguf_tokenizer.py VLLM_CPP SHARED_DIR WORK_DIR

For the byte-level BPE tokenizers among the shared fixtures (gpt2, llama3,
qwen3) and stories260k's SentencePiece one (see gguf_sentencepiece_tokenizer),
writes the tokenizer.ggml.* metadata the way llama.cpp's converter does (every id's token string, "[PAD<id>]" for ids without one; token types
1 normal, 3 control for special added tokens and those that look it, 4
user-defined for the other added tokens, 5 unused; merges as "left right"; the pre-tokenizer name; BOS
and EOS ids; add_bos_token; the chat template) into a GGUF of no tensors.
`vllm-cpp tokenize`, `detokenize` and `chat-template` given that file must
then reproduce every fixture record exactly.
"""
import json
import os
import subprocess
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_gguf as gg  # noqa: E402  (the GGUF writer)

# The pre-tokenizer name llama.cpp's converter gives each of these tokenizers.
PRE = {"gpt2": "gpt-2", "llama3": "llama-bpe", "qwen3": "qwen2"}
NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5


def token_content(value):
    return value["content"] if isinstance(value, dict) else value


def gguf_tokenizer(tokenizer, config, records, pre):
    model = tokenizer["model"]
    by_id = {i: t for t, i in model["vocab"].items()}
    types = {i: NORMAL for i in by_id}
    for added in tokenizer["added_tokens"]:
        by_id[added["id"]] = added["content"]
        # The converter also makes control tokens of added tokens that look like them ("<|...|>").
        text = added["content"]
        looks_special = text.startswith("<|") and text.endswith("|>")
        types[added["id"]] = CONTROL if added["special"] or looks_special else USER_DEFINED
    size = max(by_id) + 1
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(size)]
    kinds = [types.get(i, UNUSED) for i in range(size)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    meta = [("general.architecture", "string", "llama"), ("tokenizer.ggml.model", "string", "gpt2"),
            ("tokenizer.ggml.pre", "string", pre), ("tokenizer.ggml.tokens", "array", ("string", tokens)),
            ("tokenizer.ggml.token_type", "array", ("int32", kinds)),
            ("tokenizer.ggml.merges", "array", ("string", merges))]
    ids = {t: i for i, t in enumerate(tokens)}
    for key in ("bos", "eos"):
        name = token_content(config.get(f"{key}_token"))
        if name in ids:
            meta.append((f"tokenizer.ggml.{key}_token_id", "uint32", ids[name]))
    # Whether the Hugging Face tokenizer wraps an encoding (in these fixtures, Llama 3's BOS).
    wraps = any(r["ids_with_special"] != r["ids"] for r in records)
    meta.append(("tokenizer.ggml.add_bos_token", "bool", int(wraps)))
    if isinstance(config.get("chat_template"), str):
        meta.append(("tokenizer.chat_template", "string", config["chat_template"]))
    return gg.gguf_bytes(meta, [])


def gguf_sentencepiece_tokenizer(tokenizer, config):
    """A SentencePiece vocabulary ("llama"), as the converter writes one from
    tokenizer.model: pieces with scores and types (2 unknown, 3 control, 6
    byte).  The fixture has no tokenizer.model, so each piece's score is
    the rank of the first merge in tokenizer.json that makes it (SentencePiece
    BPE scores pieces by merge order), below them the pieces no merge makes."""
    model = tokenizer["model"]
    tokens = [None] * len(model["vocab"])
    for t, i in model["vocab"].items():
        tokens[i] = t
    first_merge = {}
    for rank, m in enumerate(model["merges"]):
        left, right = m.split(" ", 1) if isinstance(m, str) else m
        first_merge.setdefault(left + right, rank)
    specials = {a["content"]: a for a in tokenizer["added_tokens"]}
    scores, kinds = [], []
    for i, t in enumerate(tokens):
        if t in specials:
            scores.append(0.0)
            kinds.append(2 if t == model.get("unk_token") else CONTROL)
        elif t.startswith("<0x") and t.endswith(">") and len(t) == 6:
            scores.append(0.0)
            kinds.append(6)
        else:
            scores.append(-float(first_merge.get(t, 1e6 + i)))
            kinds.append(NORMAL)
    ids = {t: i for i, t in enumerate(tokens)}
    meta = [("general.architecture", "string", "llama"), ("tokenizer.ggml.model", "string", "llama"),
            ("tokenizer.ggml.tokens", "array", ("string", tokens)),
            ("tokenizer.ggml.scores", "array", ("float32", scores)),
            ("tokenizer.ggml.token_type", "array", ("int32", kinds)),
            ("tokenizer.ggml.add_bos_token", "bool", int(config.get("add_bos_token", True))),
            ("tokenizer.ggml.add_eos_token", "bool", int(config.get("add_eos_token", False)))]
    for key in ("bos", "eos", "unk"):
        name = token_content(config.get(f"{key}_token"))
        if name in ids:
            meta.append((f"tokenizer.ggml.{'unknown' if key == 'unk' else key}_token_id", "uint32", ids[name]))
    if isinstance(config.get("chat_template"), str):
        meta.append(("tokenizer.chat_template", "string", config["chat_template"]))
    return gg.gguf_bytes(meta, [])


def run(cmd, lines):
    out = subprocess.run(cmd, input="".join(lines).encode(), stdout=subprocess.PIPE, check=True).stdout
    return [json.loads(line) for line in out.decode().split("\n") if line]


def main():
    vllm, shared, work = sys.argv[1], sys.argv[2], sys.argv[3]
    fixtures = os.path.join(shared, "fixtures")
    if not os.path.isdir(fixtures):
        print("SKIP: no fixtures at", fixtures)
        return 77
    os.makedirs(work, exist_ok=True)
    failures = []
    for family, pre in list(PRE.items()) + [("stories260k", None)]:
        source = os.path.join(shared, "models" if pre is None else "tokenizers", family)
        with open(os.path.join(source, "tokenizer.json")) as f:
            tokenizer = json.load(f)
        with open(os.path.join(source, "tokenizer_config.json")) as f:
            config = json.load(f)
        with open(os.path.join(fixtures, "tokenizers", family + ".jsonl")) as f:
            lines = f.readlines()
        records = [json.loads(line) for line in lines]
        path = os.path.join(work, family + ".gguf")
        with open(path, "wb") as f:
            if pre is None:
                f.write(gguf_sentencepiece_tokenizer(tokenizer, config))
            else:
                f.write(gguf_tokenizer(tokenizer, config, records, pre))
        # Hugging Face's Qwen tokenizers NFC-normalize first; a GGUF has no
        # normalizer, and llama.cpp tokenizes the text as given.  Texts that
        # NFC changes are therefore given already normalized: the rest of the
        # pipeline must still match.
        texts = lines
        if (tokenizer.get("normalizer") or {}).get("type") == "NFC":
            texts = [json.dumps({**r, "text": unicodedata.normalize("NFC", r["text"])}) + "\n" for r in records]
        plain = run([vllm, "tokenize", "--tokenizer", path], texts)
        special = run([vllm, "tokenize", "--tokenizer", path, "--add-special-tokens"], texts)
        decoded = run([vllm, "detokenize", "--tokenizer", path], lines)
        with_special = [json.dumps({"ids": r["ids_with_special"]}) + "\n" for r in records]
        decoded_special = run([vllm, "detokenize", "--tokenizer", path], with_special)
        decoded_skip = run([vllm, "detokenize", "--tokenizer", path, "--skip-special-tokens"], with_special)
        assert len(plain) == len(records), (family, len(plain), len(records))
        for r, a, b, c, d, e in zip(records, plain, special, decoded, decoded_special, decoded_skip):
            for what, got, want in [("ids", a["ids"], r["ids"]), ("ids_with_special", b["ids"], r["ids_with_special"]),
                                    ("decoded", c["text"], r["decoded"]),
                                    ("decoded_with_special", d["text"], r["decoded_with_special"]),
                                    ("decoded_skip_special", e["text"], r["decoded_with_special_skip_special"])]:
                if got != want:
                    failures.append(f"{family} record {r['index']} {what}: {got!r} != {want!r}")
        template_fixture = os.path.join(fixtures, "chat_templates", family + ".jsonl")
        chats = 0
        if os.path.isfile(template_fixture):
            with open(template_fixture) as f:
                chat_lines = f.readlines()
            outputs = run([vllm, "chat-template", "--tokenizer", path], chat_lines)
            for line, o in zip(chat_lines, outputs):
                r = json.loads(line)
                if "error" not in r and (o.get("rendered") != r["rendered"] or o.get("ids") != r["ids"]):
                    failures.append(f"{family} chat record {r['index']}: {o} != {r.get('rendered')!r}")
                chats += 1
        print(f"{family}: {len(records)} tokenizer records, {chats} chat records checked")
    for failure in failures[:10]:
        print("FAIL:", failure)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
