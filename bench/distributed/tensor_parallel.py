"""Tensor parallelism against one process on the same machine: `bench
latency` of make-test-model's random BF16 weights of real models' shapes
(default: llama-3.2-1b), single process with --threads N against mpirun -np N
with -tp N and one thread per rank, alternating --pairs times.  Prints each
run's decode and prefill tokens/s, their medians, the median of the pairs'
decode ratios (tp / single), and the communication share of a decode step
that rank 0 measured (time inside collectives, waits for the other rank
included), so that the cost on machines with more sockets or nodes can be
extrapolated from the bytes and the collectives per step.
With --quantization int8|fp8 both quantize the weights as they load.
Usage: tensor_parallel.py VLLM_CPP [--presets llama-3.2-1b] [--ranks 2] [--pairs 3]
                          [--input-len 8] [--output-len 64] [--models /tmp/vllm-cpp-models]
                          [--quantization int8|fp8]"""
import argparse
import json
import statistics
import subprocess
import tempfile

from mpi_jobs import mpirun_and_env, test_model

parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("--presets", default="llama-3.2-1b")
parser.add_argument("--ranks", type=int, default=2)
parser.add_argument("--pairs", type=int, default=3)
parser.add_argument("--input-len", type=int, default=8)
parser.add_argument("--output-len", type=int, default=64)
parser.add_argument("--models", default="/tmp/vllm-cpp-models")
parser.add_argument("--quantization", choices=("int8", "fp8"))
args = parser.parse_args()
mpirun, env = mpirun_and_env()



def latency(model, split):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [args.binary, "bench", "latency", "--model", model, "--batch-size", "1", "--input-len",
               str(args.input_len), "--output-len", str(args.output_len), "--num-iters", "3", "--output-json", out.name]
        if args.quantization:
            cmd += ["--quantization", args.quantization]
        if split:
            cmd = [mpirun, "-np", str(args.ranks)] + cmd + ["--tensor-parallel-size", str(args.ranks), "--threads", "1"]
        else:
            cmd += ["--threads", str(args.ranks)]
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return json.load(open(out.name))


for preset in args.presets.split(","):
    model = test_model(args.binary, args.models, preset)
    single, split = [], []
    for i in range(args.pairs):
        order = [False, True] if i % 2 == 0 else [True, False]
        for s in order:
            (split if s else single).append(latency(model, s))
        print(f"{preset} pair {i + 1}: decode single {single[-1]['decode_tokens_per_s']:.1f} / "
              f"-tp {args.ranks} {split[-1]['decode_tokens_per_s']:.1f} tokens/s; prefill "
              f"{single[-1]['prefill_tokens_per_s']:.1f} / {split[-1]['prefill_tokens_per_s']:.1f}; "
              f"communication {split[-1]['decode_communication_ms_per_step']:.2f} of "
              f"{split[-1]['decode_time_per_step_ms']:.2f} ms a step", flush=True)
    ratios = [t["decode_tokens_per_s"] / s["decode_tokens_per_s"] for s, t in zip(single, split)]
    med = statistics.median
    print(f"{preset}: decode tokens/s single ({args.ranks} threads) {med(r['decode_tokens_per_s'] for r in single):.1f}"
          f", -tp {args.ranks} (1 thread a rank) {med(r['decode_tokens_per_s'] for r in split):.1f}; median pair ratio "
          f"{med(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}); prefill {args.input_len} tokens "
          f"{med(r['prefill_tokens_per_s'] for r in single):.1f} / {med(r['prefill_tokens_per_s'] for r in split):.1f}")
    share = [t["decode_communication_ms_per_step"] / t["decode_time_per_step_ms"] for t in split]
    print(f"{preset}: a -tp {args.ranks} decode step: {split[0]['decode_collectives_per_step']:.0f} collectives, "
          f"{split[0]['decode_communication_bytes_per_step'] / 1e3:.1f} KB of rank 0's own, communication "
          f"{100 * med(share):.1f}% of the step (median; {100 * min(share):.1f}-{100 * max(share):.1f}%)")
