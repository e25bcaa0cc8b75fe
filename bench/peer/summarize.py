"""The tables of compare_llamacpp.sh: medians (min-max) of the repeated,
interleaved runs, ours beside llama.cpp's, the limits measured in our runs,
the ratios and the targets of the performance issue.
Usage: summarize.py OUT_DIR REPEAT SHAPES PARTS LLAMA_BIN_DIR"""
import glob
import json
import os
import statistics
import subprocess
import sys

out, repeat, shapes, parts, llama_bin = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]


def load(pattern):
    runs = []
    for i in range(1, repeat + 1):
        path = os.path.join(out, pattern.format(i=i))
        if os.path.exists(path):
            with open(path) as f:
                runs.append(json.load(f))
    return runs


def med(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, "n/a"
    m = statistics.median(values)
    spread = f" ({min(values):.4g}-{max(values):.4g})" if len(values) > 1 else ""
    return m, f"{m:.4g}{spread}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def llama_bench(shape, n_prompt, n_gen):
    values = []
    for run in load(f"llama-bench-{shape}-{{i}}.json"):
        for test in run:
            if test["n_prompt"] == n_prompt and test["n_gen"] == n_gen:
                values.append(test["avg_ts"])
    return values


def llama_batched(pl):
    values = []
    for i in range(1, repeat + 1):
        path = os.path.join(out, f"llama-batched-{i}.log")
        if not os.path.exists(path):
            continue
        for line in open(path):
            if line.startswith('{"n_kv_max"'):
                record = json.loads(line)
                if record["pl"] == pl:
                    values.append(record["speed"])
    return values


try:
    commit = subprocess.run(["git", "-C", llama_bin, "rev-parse", "--short=8", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
except OSError:
    commit = ""
print(f"# vllm-cpp vs llama.cpp {commit or '(commit unknown)'}, 2 threads, BF16, median (min-max) of {repeat} "
      f"interleaved runs\n")

if "latency" in parts:
    print("| shape | vllm-cpp decode t/s | limit (bandwidth) t/s | of limit | llama.cpp tg128 | ratio "
          "| vllm-cpp prefill 512 t/s | FP32 limit t/s | of limit | llama.cpp pp512 | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in shapes:
        d, p = load(f"ours-decode-{s}-{{i}}.json"), load(f"ours-prefill-{s}-{{i}}.json")
        dm, ds = med([r["decode_tokens_per_s"] for r in d])
        _, dl = med([r["decode_limit_tokens_per_s"] for r in d])
        _, df = med([100 * r["decode_fraction_of_limit"] for r in d])
        tm, ts = med(llama_bench(s, 0, 128))
        pm, ps = med([r["prefill_tokens_per_s"] for r in p])
        _, pl = med([r["prefill_limit_tokens_per_s"] for r in p])
        _, pf = med([100 * r["prefill_fraction_of_limit"] for r in p])
        lm, ls = med(llama_bench(s, 512, 0))
        print(f"| {s} | {ds} | {dl} | {df}% | {ts} | {ratio(dm, tm)} | {ps} | {pl} | {pf}% | {ls} | {ratio(pm, lm)} |")
    limits = [r for s in shapes for r in load(f"ours-decode-{s}-{{i}}.json") + load(f"ours-prefill-{s}-{{i}}.json")]
    _, bw = med([r["bandwidth_gb_per_s"] for r in limits])
    _, fma = med([r["peak_gflops"] for r in limits])
    _, bf16 = med([r.get("peak_bf16_gflops") for r in limits])
    print(f"\nLimits measured in our runs: read bandwidth {bw} GB/s, FP32 FMA peak {fma} GFLOP/s, "
          f"BF16 dot peak {bf16} GFLOP/s.\n")

if "throughput" in parts:
    print("| smollm-135m, 128 in / 128 out | vllm-cpp total t/s | llama-batched-bench total t/s | ratio (target >= 3x) |")
    print("|---|---|---|---|")
    for n in (16, 64):
        om, os_ = med([r["total_tokens_per_s"] for r in load(f"ours-throughput-{n}-{{i}}.json")])
        lm, ls = med(llama_batched(n))
        print(f"| {n} requests / parallel sequences | {os_} | {ls} | {ratio(om, lm)} |")
    print()

if "serve" in parts:
    print("| smollm-135m, 64 requests at concurrency 16 | output tok/s | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms "
          "| ITL p50 ms | completed |")
    print("|---|---|---|---|---|---|---|")
    rows = {}
    names = {"ours": "vllm-cpp serve", "base": "vllm-cpp serve (--baseline-bin)", "llama": "llama-server -np 16"}
    for who, name in names.items():
        runs = load(f"{who}-serve-{{i}}.json")
        if not runs:
            continue
        rows[who] = [med([r[k] for r in runs]) for k in
                     ("output_throughput", "median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "median_itl_ms",
                      "completed")]
        print(f"| {name} | " + " | ".join(text for _, text in rows[who]) + " |")
    out_ratio = ratio(rows["ours"][0][0], rows["llama"][0][0])
    ours_ttft, llama_ttft = rows["ours"][1][0], rows["llama"][1][0]
    ttft_ratio = f"1/{llama_ttft / ours_ttft:.1f}" if ours_ttft and llama_ttft else "n/a"
    print(f"| ratio to llama-server | {out_ratio} (target >= 3x) | {ttft_ratio} (target <= 1/8) | | | | |")
    if "base" in rows:
        print(f"| ratio to the baseline | {ratio(rows['ours'][0][0], rows['base'][0][0])} (target >= 1) | "
              f"1/{rows['base'][1][0] / rows['ours'][1][0]:.1f} | | | | |")
