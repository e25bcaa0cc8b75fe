"""Runs `vllm-cpp tokenize`, `detokenize` and `chat-template` over the shared
fixture files as they are, and compares every output line with the record.
Usage: check_tokenizer_cli.py VLLM_CPP SHARED_DIR.  Exit 77 when the fixtures are absent."""
import json
import os
import subprocess
import sys


def run(cmd, lines):
    out = subprocess.run(cmd, input="".join(lines).encode(), stdout=subprocess.PIPE, check=True).stdout
    return [json.loads(line) for line in out.decode().split("\n") if line]


def main():
    binary, shared = sys.argv[1], sys.argv[2]
    fixtures = os.path.join(shared, "fixtures")
    if not os.path.isdir(fixtures):
        print("SKIPPED: no fixtures at", fixtures)
        return 77
    failures = 0

    def tokenizer_dir(family):
        if family == "stories260k":
            return os.path.join(shared, "models", "stories260k")
        return os.path.join(shared, "tokenizers", family)

    def expect(ok, what):
        nonlocal failures
        if not ok:
            failures += 1
            if failures <= 10:
                print("FAIL:", what)

    for name in sorted(os.listdir(os.path.join(fixtures, "tokenizers"))):
        family = name[:-len(".jsonl")]
        with open(os.path.join(fixtures, "tokenizers", name)) as f:
            lines = f.readlines()
        records = [json.loads(line) for line in lines]
        tok = tokenizer_dir(family)
        plain = run([binary, "tokenize", "--tokenizer", tok], lines)
        special = run([binary, "tokenize", "--tokenizer", tok, "--add-special-tokens"], lines)
        decoded = run([binary, "detokenize", "--tokenizer", tok], lines)
        with_special = [json.dumps({"ids": r["ids_with_special"]}) + "\n" for r in records]
        decoded_special = run([binary, "detokenize", "--tokenizer", tok], with_special)
        decoded_skip = run([binary, "detokenize", "--tokenizer", tok, "--skip-special-tokens"], with_special)
        for r, a, b, c, d, e in zip(records, plain, special, decoded, decoded_special, decoded_skip):
            where = f"{family} record {r['index']}"
            expect(a["ids"] == r["ids"], where + " ids")
            expect(b["ids"] == r["ids_with_special"], where + " ids_with_special")
            expect(c["text"] == r["decoded"], where + " decoded")
            expect(d["text"] == r["decoded_with_special"], where + " decoded_with_special")
            expect(e["text"] == r["decoded_with_special_skip_special"], where + " decoded_with_special_skip_special")
        expect(len(plain) == len(records), f"{family}: {len(plain)} output lines for {len(records)} records")

    for name in sorted(os.listdir(os.path.join(fixtures, "chat_templates"))):
        family = name[:-len(".jsonl")]
        with open(os.path.join(fixtures, "chat_templates", name)) as f:
            lines = f.readlines()
        records = [json.loads(line) for line in lines]
        outputs = run([binary, "chat-template", "--tokenizer", tokenizer_dir(family)], lines)
        expect(len(outputs) == len(records), f"{family}: {len(outputs)} output lines for {len(records)} records")
        for r, o in zip(records, outputs):
            where = f"{family} chat record {r['index']}"
            if "error" in r:
                expect(o.get("error") == r["error"], where + " error")
            else:
                expect(o.get("rendered") == r["rendered"] and o.get("ids") == r["ids"], where + " rendered/ids")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
