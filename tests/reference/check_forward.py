"""Checks the engine's logits against reference_forward.py on a random-weight
checkpoint written by `vllm-cpp make-test-model`.

Usage: check_forward.py VLLM_CPP DUMP_LOGITS WORKDIR --arch A --dtype D [--shards N] [--tolerance T]
Exit status: 0 pass, 1 fail, 77 skipped (numpy missing)."""
import argparse
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed (Debian package python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward  # noqa: E402

NUM_TOKENS = 64
# Prefill at once, in uneven chunks (earlier chunks read back through the
# paged cache) and one token at a time (the decode path).
CHUNK_SIZES = (64, 7, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vllm_cpp")
    ap.add_argument("dump_logits")
    ap.add_argument("workdir")
    ap.add_argument("--arch", required=True)
    ap.add_argument("--dtype", required=True)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()

    model_dir = os.path.join(args.workdir, f"{args.arch}-{args.dtype}-{args.shards}")
    shutil.rmtree(model_dir, ignore_errors=True)
    subprocess.run([args.vllm_cpp, "make-test-model", "--arch", args.arch, "--preset", "tiny", "--dtype", args.dtype,
                    "--seed", str(args.seed), "--num-shards", str(args.shards), "--out", model_dir], check=True)
    vocab = reference_forward.json.load(open(os.path.join(model_dir, "config.json")))["vocab_size"]
    ids = np.random.default_rng(args.seed).integers(0, vocab, NUM_TOKENS).tolist()
    expected = reference_forward.forward(model_dir, ids)
    scale = np.abs(expected).max()
    failed = False
    for chunk in CHUNK_SIZES:
        out_path = os.path.join(model_dir, f"logits-{chunk}.f32")
        subprocess.run([args.dump_logits, model_dir, str(chunk), out_path], check=True,
                       input=" ".join(map(str, ids)).encode())
        ours = np.fromfile(out_path, dtype="<f4").reshape(NUM_TOKENS, vocab)
        error = np.abs(ours - expected).max() / scale
        status = "ok" if error <= args.tolerance else "FAIL"
        failed |= error > args.tolerance
        print(f"{args.arch} {args.dtype} shards={args.shards} chunk={chunk}: max |ours - ref| / max |ref| = "
              f"{error:.2e} (tolerance {args.tolerance:.0e}) {status}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
