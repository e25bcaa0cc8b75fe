"""Pipeline parallelism against one process on the same machine: `bench
throughput` (all requests at once) of make-test-model's random BF16 weights
of a real model's shape (default: llama-3.2-1b), one process with --threads
N against mpirun -np N with -pp N and one thread per stage, alternating
--pairs times; with --other BINARY, that binary's -pp N too (the same
machine minutes, for a before / after).  Prints each run's tokens/s (prompt
and output tokens over the wall time),
their medians and the median of the pairs' ratios (pp / single).
Usage: pipeline_parallel.py VLLM_CPP [--preset llama-3.2-1b] [--ranks 2] [--pairs 3] [--num-prompts 16]
                            [--input-len 16] [--output-len 32] [--other BINARY] [--models /tmp/vllm-cpp-models]"""
import argparse
import json
import statistics
import subprocess
import tempfile

from mpi_jobs import mpirun_and_env, test_model

parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("--preset", default="llama-3.2-1b")
parser.add_argument("--ranks", type=int, default=2)
parser.add_argument("--pairs", type=int, default=3)
parser.add_argument("--num-prompts", type=int, default=16)
parser.add_argument("--input-len", type=int, default=16)
parser.add_argument("--output-len", type=int, default=32)
parser.add_argument("--other")
parser.add_argument("--models", default="/tmp/vllm-cpp-models")
args = parser.parse_args()
mpirun, env = mpirun_and_env()

model = test_model(args.binary, args.models, args.preset)


def throughput(binary, stages):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [binary, "bench", "throughput", "--model", model, "--num-prompts", str(args.num_prompts),
               "--input-len", str(args.input_len), "--output-len", str(args.output_len), "--output-json", out.name]
        if stages > 1:
            cmd = [mpirun, "-np", str(stages)] + cmd + ["-pp", str(stages), "--threads", "1"]
        else:
            cmd += ["--threads", str(args.ranks)]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = json.load(open(out.name))
    return args.num_prompts * (args.input_len + args.output_len) / result["elapsed_time"]


runs = {"single": [], "pp": [], "other": []}
configs = [("single", args.binary, 1), ("pp", args.binary, args.ranks)]
if args.other:
    configs.append(("other", args.other, args.ranks))
for i in range(args.pairs):
    for name, binary, stages in (configs if i % 2 == 0 else configs[::-1]):
        runs[name].append(throughput(binary, stages))
    print(f"round {i + 1}: tokens/s " + ", ".join(f"{n} {runs[n][-1]:.1f}" for n, _, _ in configs), flush=True)
med = statistics.median
ratios = [p / s for s, p in zip(runs["single"], runs["pp"])]
line = (f"{args.preset}, {args.num_prompts} requests of {args.input_len} + {args.output_len} tokens: tokens/s "
        f"single ({args.ranks} threads) {med(runs['single']):.1f}, -pp {args.ranks} (1 thread a stage) "
        f"{med(runs['pp']):.1f}; median pair ratio {med(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
if args.other:
    other = [o / s for s, o in zip(runs["single"], runs["other"])]
    line += f"; --other's -pp {args.ranks} {med(runs['other']):.1f}, ratio {med(other):.3f}"
print(line)
