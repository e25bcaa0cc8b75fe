"""Data parallelism against one engine on the same machine: `bench serve`
(random prompts, all requests at once or at --request-rate) against `serve`
of make-test-model's random BF16 weights of a real model's shape (default:
smollm-135m), one process with --threads N against mpirun -np N with -dp N
and one thread per replica, alternating --pairs times.  Prints each run's
output tokens/s, requests/s and median TTFT / TPOT, their medians, the
median of the pairs' throughput ratios (dp / single), and how the last -dp
run spread its requests over the replicas (/metrics, engine label).  With
--expert-parallel (a mixture-of-experts preset: olmoe-1b-7b,
deepseek-v2-lite; --num-layers to fit the machine) the replicas also place
the experts across each other (-ep).
Usage: data_parallel.py VLLM_CPP [--preset smollm-135m] [--ranks 2] [--pairs 3]
                        [--num-prompts 64] [--input-len 64] [--output-len 64] [--request-rate inf]
                        [--expert-parallel] [--num-layers N] [--models /tmp/vllm-cpp-models]"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from mpi_jobs import mpirun_and_env, test_model

parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("--preset", default="smollm-135m")
parser.add_argument("--ranks", type=int, default=2)
parser.add_argument("--pairs", type=int, default=3)
parser.add_argument("--num-prompts", type=int, default=64)
parser.add_argument("--input-len", type=int, default=64)
parser.add_argument("--output-len", type=int, default=64)
parser.add_argument("--request-rate", default="inf")
parser.add_argument("--expert-parallel", action="store_true")
parser.add_argument("--num-layers", type=int)
parser.add_argument("--models", default="/tmp/vllm-cpp-models")
args = parser.parse_args()
mpirun, env = mpirun_and_env()



def start(model, replicas):
    cmd = [args.binary, "serve", model, "--host", "127.0.0.1", "--port", "0"]
    if replicas:
        cmd = [mpirun, "-np", str(args.ranks)] + cmd + ["-dp", str(args.ranks), "--threads", "1"]
        cmd += ["-ep"] if args.expert_parallel else []
    else:
        cmd += ["--threads", str(args.ranks)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stderr:
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if match:
            return proc, int(match.group(1))
    sys.exit(f"serve did not start: {' '.join(cmd)}")


def stop(proc, replicas):
    if replicas:  # SIGTERM to rank 0, which ends the replicas; mpirun then exits
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        for pid in children:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"OMPI_COMM_WORLD_RANK=0" in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def finished_by_engine(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    counts = {}
    for engine, value in re.findall(r'vllm:request_success_total\{engine="(\d+)"[^}]*\} (\S+)', text):
        counts[engine] = counts.get(engine, 0) + float(value)
    return counts


def serve_bench(model, replicas):
    proc, port = start(model, replicas)
    try:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run([args.binary, "bench", "serve", "--base-url", f"http://127.0.0.1:{port}", "--num-prompts",
                            str(args.num_prompts), "--input-len", str(args.input_len), "--output-len",
                            str(args.output_len), "--request-rate", args.request_rate, "--output-json", out.name],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            result = json.load(open(out.name))
        time.sleep(0.2)  # the replicas' last reports
        result["by_engine"] = finished_by_engine(port)
        return result
    finally:
        stop(proc, replicas)


model = test_model(args.binary, args.models, args.preset, args.num_layers)
dp_flags = f"-dp {args.ranks}" + (" -ep" if args.expert_parallel else "")
single, split = [], []
for i in range(args.pairs):
    for replicas in ([False, True] if i % 2 == 0 else [True, False]):
        (split if replicas else single).append(serve_bench(model, replicas))
    s, d = single[-1], split[-1]
    print(f"pair {i + 1}: output tokens/s single {s['output_throughput']:.1f} / {dp_flags} "
          f"{d['output_throughput']:.1f}; requests/s {s['request_throughput']:.2f} / {d['request_throughput']:.2f}; "
          f"median TTFT {s['median_ttft_ms']:.0f} / {d['median_ttft_ms']:.0f} ms; median TPOT "
          f"{s['median_tpot_ms']:.1f} / {d['median_tpot_ms']:.1f} ms; -dp requests by replica {d['by_engine']}",
          flush=True)
ratios = [d["output_throughput"] / s["output_throughput"] for s, d in zip(single, split)]
med = statistics.median
print(f"{args.preset}, {args.num_prompts} requests of {args.input_len} + {args.output_len} tokens at rate "
      f"{args.request_rate}: output tokens/s single ({args.ranks} threads) "
      f"{med(r['output_throughput'] for r in single):.1f}, {dp_flags} (1 thread a replica) "
      f"{med(r['output_throughput'] for r in split):.1f}; median pair ratio {med(ratios):.3f} "
      f"({min(ratios):.3f}-{max(ratios):.3f})")
