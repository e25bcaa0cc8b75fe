"""Every schema of schema_corpus.py through `vllm-cpp serve` (temperature
0.8, several seeds, the three request spellings and both endpoints), on
stories260k and on a random-weight model with Qwen3's 151,669-token
vocabulary (from ../shared; skipped without it): each output parses and
validates with the jsonschema package (formats checked), or the schema is
refused up front with a 400 naming the keyword.  Prints the refusal rate.
Usage: check_schema_corpus.py VLLM_CPP [SHARED_DIR WORKDIR]"""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "server"))
try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed")
    sys.exit(77)
import schema_corpus  # noqa: E402
import serve_harness  # noqa: E402
from serve_harness import check  # noqa: E402

def request(name, schema, seed):
    """The request of one run, in one of the spellings, and the path and the way to read its text."""
    base = {"max_tokens": 160, "temperature": 0.8, "seed": seed}
    spelling = seed % 3
    if spelling == 0:
        return "/v1/completions", dict(base, prompt="Once upon a time", structured_outputs={"json": schema})
    if spelling == 1:
        return "/v1/completions", dict(base, prompt="The cat", guided_json=json.dumps(schema))
    return "/v1/chat/completions", dict(base, messages=[{"role": "user", "content": "Tell me a story"}],
                                        response_format={"type": "json_schema",
                                                         "json_schema": {"name": name, "schema": schema}})


def validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


# Under a sanitizer (VLLM_TEST_SANITIZED) a vocabulary walk is many times slower: one seed, one
# spelling per schema there, which still runs every schema through the matcher.
SEEDS = 1 if os.environ.get("VLLM_TEST_SANITIZED") else 3


def run_corpus(server, what):
    refused = 0
    outputs = 0
    for name, schema in schema_corpus.SCHEMAS.items():
        for seed in range(SEEDS):
            path, body = request(name, schema, seed)
            status, out = server.json("POST", path, body)
            if name in schema_corpus.REFUSED:
                keyword = schema_corpus.REFUSED[name]
                check(status == 400 and keyword in out["error"]["message"],
                      f"{what} {name}: expected a 400 naming {keyword}, got {status} {out}")
                continue
            if status != 200:
                check(False, f"{what} {name}: refused ({status} {out.get('error', {}).get('message')})")
                continue
            choice = out["choices"][0]
            text = choice["message"]["content"] if "message" in choice else choice["text"]
            outputs += 1
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                check(False, f"{what} {name} seed {seed}: does not parse ({e}): {text!r}")
                continue
            errors = [e.message for e in validator(schema).iter_errors(value)]
            check(not errors, f"{what} {name} seed {seed}: {errors[:2]} in {text!r}")
            # Properties come in the schema's order (the order a model should reason in).
            if isinstance(schema, dict) and isinstance(value, dict) and "properties" in schema:
                order = [k for k in schema["properties"] if k in value]
                check(list(value) == order, f"{what} {name} seed {seed}: keys {list(value)} not in schema order {order}")
        refused += name in schema_corpus.REFUSED
    print(f"{what}: {len(schema_corpus.SCHEMAS)} schemas: {refused} refused up front "
          f"({100.0 * refused / len(schema_corpus.SCHEMAS):.0f}%), {outputs} outputs validated")


def serve_and_run(what, *flags):
    server = serve_harness.Server(sys.argv[1], *flags)
    try:
        run_corpus(server, what)
    finally:
        server.stop()


serve_and_run("stories260k")
tokenizer = os.path.join(sys.argv[2], "tokenizers", "qwen3") if len(sys.argv) > 3 else ""
if os.path.isdir(tokenizer):
    model = os.path.join(sys.argv[3], "corpus-qwen3-vocab")
    subprocess.run([sys.argv[1], "make-test-model", "--arch", "qwen3", "--preset", "tiny", "--dtype", "bf16",
                    "--vocab-size", "151669", "--tokenizer", tokenizer, "--out", model], check=True,
                   capture_output=True)
    serve_and_run("random qwen3 tiny, 151,669 tokens", "--model", model)
else:
    print("the 151,669-token vocabulary run skipped: no qwen3 tokenizer under SHARED_DIR")
serve_harness.finish()
