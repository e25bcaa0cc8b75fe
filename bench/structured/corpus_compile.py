"""Compile time of every schema of the test corpus (tests/structured/schema_corpus.py) over a
real vocabulary: median, p99 and max over the schemas, each the median of 5 compiles.
Usage: corpus_compile.py MASK_BENCHMARK TOKENIZER_DIR   (e.g. build/bench/mask_benchmark ../shared/tokenizers/qwen3)"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "structured"))
import schema_corpus  # noqa: E402

with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as corpus:
    for schema in schema_corpus.SCHEMAS.values():
        corpus.write(json.dumps(schema) + "\n")
    corpus.flush()
    subprocess.run([sys.argv[1], sys.argv[2], "--corpus", corpus.name], check=True)
