"""Checks the engine's logits against reference_forward.py on a random-weight
checkpoint written by `vllm-cpp make-test-model`.

Usage: check_forward.py VLLM_CPP DUMP_LOGITS WORKDIR --arch A --dtype D [--shards N] [--tolerance T]
BF16 checkpoints are checked in both of the kernels' BF16 arithmetics where
the CPU has them: widened to float32 (avx512 or lower) against the plain
reference, and BF16 pairs (avx512_bf16) against the reference with
bfloat16-rounded matrix inputs; and over every KV cache dtype (float32,
exact; bfloat16, their default, and fp8, against a reference whose cache
rounds keys and values the same way).
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
    ap.add_argument("--bf16-tolerance", type=float, default=5e-3)
    ap.add_argument("--bf16-p90-tolerance", type=float, default=1e-5)
    # The BF16 pair pass of architectures that do not damp a rounding flip
    # (CMakeLists.txt says which and why); default: the two above.
    ap.add_argument("--bf16-pairs-tolerance", type=float)
    ap.add_argument("--bf16-pairs-p90-tolerance", type=float)
    # The FP8 KV cache pass of the same architectures (a flip is an E4M3 step there).
    ap.add_argument("--fp8-kv-tolerance", type=float)
    ap.add_argument("--fp8-kv-p90-tolerance", type=float)
    args = ap.parse_args()

    model_dir = os.path.join(args.workdir, f"{args.arch}-{args.dtype}-{args.shards}")
    shutil.rmtree(model_dir, ignore_errors=True)
    subprocess.run([args.vllm_cpp, "make-test-model", "--arch", args.arch, "--preset", "tiny", "--dtype", args.dtype,
                    "--seed", str(args.seed), "--num-shards", str(args.shards), "--out", model_dir], check=True)
    vocab = reference_forward.json.load(open(os.path.join(model_dir, "config.json")))["vocab_size"]
    ids = np.random.default_rng(args.seed).integers(0, vocab, NUM_TOKENS).tolist()
    # (ISA, KV cache dtype, reference with bf16-rounded activations?);
    # dump_logits exits 77 for an ISA this CPU lacks.  BF16 weights widen to
    # float32 on every ISA but avx512_bf16: the exact pass runs on the best of
    # those (auto where there is no AVX-512); then the BF16 KV cache that
    # bfloat16 checkpoints get by default, with widened weights and with the
    # BF16 pair kernels; and an FP8 cache (--kv-cache-dtype fp8) once per
    # architecture, on float32 weights.
    widened = "avx512" if args.dtype == "bf16" else "auto"
    passes = [(widened, "float32", False)]
    if args.dtype == "bf16":
        passes += [("avx512", "bfloat16", False), ("avx512_bf16", "bfloat16", True)]
    if args.dtype == "f32":
        passes.append((widened, "fp8", False))
    failed = False
    checked = 0
    for isa, kv_dtype, bf16_activations in passes:
        expected = reference_forward.forward(model_dir, ids, bf16_activations, kv_dtype)
        scale = np.abs(expected).max()
        for chunk in CHUNK_SIZES:
            out_path = os.path.join(model_dir, f"logits-{chunk}.f32")
            run = subprocess.run([args.dump_logits, model_dir, str(chunk), out_path, isa, kv_dtype],
                                 input=" ".join(map(str, ids)).encode())
            if run.returncode == 77 and isa == "avx512":  # no AVX-512: the lower ISAs widen too
                isa = "auto"
                run = subprocess.run([args.dump_logits, model_dir, str(chunk), out_path, isa, kv_dtype],
                                     input=" ".join(map(str, ids)).encode())
            if run.returncode == 77 and isa != "auto":
                print(f"{args.arch} {args.dtype}: no {isa} on this CPU, that pass skipped")
                break
            if run.returncode != 0:
                return 1
            checked += 1
            ours = np.fromfile(out_path, dtype="<f4").reshape(NUM_TOKENS, vocab)
            errors = np.abs(ours - expected) / scale
            error = errors.max()
            if bf16_activations or kv_dtype != "float32":
                # A value that float32 and float64 round to either side of a
                # bfloat16 (or E4M3) tie makes one input differ by a step, and
                # with it the logits of its position and of the later ones that
                # attend to it (causally, never earlier ones).  So the positions
                # before the first such flip (at least 4), or half of all
                # positions, must agree as closely as in float32 (the p90 of
                # each position's logits; unmodelled rounding moves every
                # position from the first by 5e-4 or more), and all within a
                # bound.
                p90_tolerance, bound = args.bf16_p90_tolerance, args.bf16_tolerance
                if bf16_activations:
                    p90_tolerance = args.bf16_pairs_p90_tolerance or p90_tolerance
                    bound = args.bf16_pairs_tolerance or bound
                if kv_dtype == "fp8":
                    p90_tolerance = args.fp8_kv_p90_tolerance or p90_tolerance
                    bound = args.fp8_kv_tolerance or bound
                agree = np.quantile(errors, 0.9, axis=1) <= p90_tolerance
                leading = NUM_TOKENS if agree.all() else int(np.argmin(agree))
                ok = (leading >= 4 or 2 * int(agree.sum()) >= NUM_TOKENS) and error <= bound
                bounds = (f"{int(agree.sum())}/{NUM_TOKENS} positions with p90 <= {p90_tolerance:.0e}, "
                          f"the first {leading} of them, bound {bound:.0e}")
            else:
                ok = error <= args.tolerance
                bounds = f"tolerance {args.tolerance:.0e}"
            failed |= not ok
            print(f"{args.arch} {args.dtype} shards={args.shards} {isa} kv {kv_dtype} chunk={chunk}: "
                  f"max |ours - ref| / max |ref| = "
                  f"{error:.2e} ({bounds}) {'ok' if ok else 'FAIL'}")
    if checked == 0:
        print("SKIPPED: no pass could run on this CPU")
        return 77
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
