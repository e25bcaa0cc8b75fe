"""Tensor and pipeline parallelism under mpirun (ranks on this host).  Every
tiny architecture of the dense family split across two ranks by tensor
parallelism gives the single-process run's greedy tokens, and its prompt and
sampled logprobs within 1e-4 (the row-parallel sums change the order of a
few additions); split into two pipeline stages (and a mixture of experts
too) it gives the same bits; both at once (4 ranks) within 1e-4.  Each
request alone gives the bits it gives in a batch; stories260k's golden
continuations come out exactly under a KV pool small enough to preempt; and
a job that cannot run says why in one line and ends every rank.
Usage: check_model_parallel.py VLLM_CPP GOLDEN_JSON SCRATCH_DIR"""
import json
import os
import random
import shutil
import sys

from mpi_env import mpi_env
from parallel_runs import ParallelRuns

binary, golden_path, scratch = sys.argv[1:4]
mpirun = shutil.which("mpirun")
if mpirun is None:
    print("SKIP: mpirun is not installed (Debian's openmpi-bin)")
    sys.exit(77)
os.makedirs(scratch, exist_ok=True)
env = mpi_env()
TIMEOUT = 120  # a hang is a failure, not a stuck CI job
runs = ParallelRuns(binary, scratch, env, TIMEOUT)
failures, run, generate = runs.failures, runs.run, runs.generate
largest = [0.0]  # the largest relative logprob difference seen, for the record


def compare(name, want, got, tolerance):
    largest[0] = max(largest[0], runs.compare(name, want, got, tolerance))


rng = random.Random(7)
requests = [{"prompt_token_ids": [rng.randrange(3, 512) for _ in range(n)], "max_tokens": 8, "ignore_eos": True,
             "prompt_logprobs": 5, "logprobs": 5} for n in (1, 5, 17, 40)]

# Every dense architecture: attention biases (llama, granite), one KV head
# for two ranks (qwen2, gemma3: replicated), fused q/k/v and gate/up (phi3),
# an untied LM head (mistral, qwen3, phi3, stablelm), soft-capping (gemma2);
# and mixtures of experts (a shared expert with its gate: qwen2_moe; a q/k
# norm over the whole projection, whose squares the ranks sum: olmoe;
# multi-head latent attention, heads split over a latent every rank caches,
# with and without a low-rank query: deepseek_v3, deepseek_v2), their
# experts split across the ranks or (-ep) placed whole on them.
MIXTURES = ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3"]
for arch in ["llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "granite", "stablelm"] + MIXTURES:
    model = f"{scratch}/{arch}"
    p = run(["make-test-model", "--preset", "tiny", "--arch", arch, "--seed", "3", "--out", model])
    if p.returncode != 0:
        failures.append(f"make-test-model {arch}: {p.stderr.strip()}")
        continue
    single = generate(model, requests, f"{arch}_single")
    # Stages pass the residual stream on exactly as one process does: the same bits.
    compare(f"{arch} -pp 2", single, generate(model, requests, f"{arch}_pp2", pp=2), 0)
    split = generate(model, requests, f"{arch}_tp2", tp=2)
    compare(f"{arch} -tp 2", single, split, 1e-4)
    if arch in MIXTURES:
        compare(f"{arch} -tp 2 -ep", single, generate(model, requests, f"{arch}_ep2", tp=2, extra=("-ep",)), 1e-4)
        compare(f"{arch} -dp 2 -ep", single, generate(model, requests, f"{arch}_dp2_ep", dp=2, extra=("-ep",)), 1e-4)
    if arch in ("olmoe", "deepseek_v3"):  # olmoe's k norm over KV heads on two ranks each; one MLA head a rank
        compare(f"{arch} -tp 4", single, generate(model, requests, f"{arch}_tp4", tp=4), 1e-4)
    if arch == "llama":
        # Four ranks for two KV heads: ranks 0 and 1 hold the first, 2 and 3 the second.
        compare(f"{arch} -tp 4", single, generate(model, requests, f"{arch}_tp4", tp=4), 1e-4)
        compare(f"{arch} -tp 2 -pp 2", single, generate(model, requests, f"{arch}_tp2_pp2", tp=2, pp=2), 1e-4)
        # Speculative decoding verifies drafts in the split model's passes (the
        # drafter runs on rank 0 alone): the greedy tokens stay the single process's.
        for spec in ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1, "prompt_lookup_max": 2},
                     {"method": "draft_model", "model": model, "num_speculative_tokens": 3}):
            drafted = generate(model, requests, f"{arch}_tp2_{spec['method']}", tp=2,
                               extra=("--speculative-config", json.dumps(spec)))
            for i, (w, g) in enumerate(zip(single or [], drafted or [])):
                if w["outputs"][0]["token_ids"] != g["outputs"][0]["token_ids"]:
                    failures.append(f"{arch} -tp 2 with {spec['method']} drafts, request {i}: greedy tokens differ")
        # Batch invariance within the configuration: each request alone, bit for bit.
        for i, r in enumerate(requests):
            alone = generate(model, [r], f"{arch}_tp2_alone{i}", tp=2)
            if split is not None:
                compare(f"{arch} -tp 2 request {i} alone", split[i:i + 1], alone, 0)

# Experts across data-parallel replicas (-dp N -ep): each replica holds some of every layer's experts, and a
# token's row goes to the replicas that hold its experts.  A replica with nothing of its own to run still
# serves its experts (uneven lengths; one request alone); three replicas hold 2, 1 and 1 of the 4 experts.
mixtral = f"{scratch}/mixtral"
uneven = [dict(r, max_tokens=m) for r, m in zip(requests, (1, 24, 2, 12))]
single = generate(mixtral, uneven, "mixtral_uneven_single")
for dp, held in ((2, ["0-1", "2-3"]), (3, ["0-1", "2-2", "3-3"])):
    compare(f"mixtral -dp {dp} -ep, uneven lengths", single,
            generate(mixtral, uneven, f"mixtral_uneven_dp{dp}_ep", dp=dp, extra=("-ep",)), 1e-4)
    for rank, experts in enumerate(held):
        if f"rank {rank} of {dp} holds experts {experts} of each layer's 4" not in runs.last_stderr:
            failures.append(f"mixtral -dp {dp} -ep: rank {rank} does not say it holds experts {experts}")
compare("mixtral -dp 2 -ep, one request alone", single[1:2] if single else None,
        generate(mixtral, uneven[1:2], "mixtral_alone_dp2_ep", dp=2, extra=("-ep",)), 1e-4)

# stories260k's goldens, exact, with preemption forced by a 1 MiB KV pool.
golden = json.load(open(golden_path))
stories = os.path.dirname(os.path.dirname(os.path.abspath(golden_path)))
stories = os.path.join(os.path.dirname(stories), "..", "models", "stories260k")
cases = golden["cases"]
for tp, pp in [(2, 1), (1, 2)]:
    outs = generate(os.path.normpath(stories),
                    [{"prompt_token_ids": c["prompt_token_ids"], "max_tokens": c["max_new_tokens"], "ignore_eos": True}
                     for c in cases], f"stories260k_tp{tp}_pp{pp}", tp=tp, pp=pp,
                    extra=("--max-num-batched-tokens", "16", "--kv-cache-memory-bytes", "1MiB"))
    for c, o in zip(cases, outs or []):
        if o["outputs"][0]["token_ids"] != c["output_token_ids"]:
            failures.append(f"stories260k -tp {tp} -pp {pp} {c['name']}: tokens differ from the golden ones")

# Jobs that cannot run: one clear line, every rank ended, no hang.
llama = f"{scratch}/llama"
mixtral = f"{scratch}/mixtral"
run(["make-test-model", "--preset", "tiny", "--arch", "mixtral", "--out", mixtral])
refusals = [
    (None, ["-tp", "2"], llama, "= 2 ranks, but the job has 1 (start one process per rank: mpirun -np 2)"),
    (2, [], llama, "= 1 ranks, but the job has 2"),
    (3, ["-pp", "3"], llama, "pipeline stage 2 of 3 would hold none of the model's 2 layers"),
    (2, ["-dp", "2", "-tp", "2"], llama, "x --data-parallel-size 2 = 4 ranks, but the job has 2"),
    (3, ["-tp", "3"], llama, "tensor parallel size 3 does not divide the 4 attention heads"),
    (None, ["-ep"], mixtral, "--enable-expert-parallel places experts on the tensor-parallel ranks"),
    (4, ["-dp", "2", "-pp", "2", "-ep"], mixtral,
     "--enable-expert-parallel across data-parallel replicas of several pipeline stages is not supported yet"),
]
for ranks, flags, model, message in refusals:
    p = run(["generate", "--model", model, "--prompt", "a", "--max-tokens", "2", *flags], ranks)
    if p.returncode == 0 or message not in p.stderr:
        failures.append(f"{flags} on {ranks} ranks: exit {p.returncode}, expected {message!r} in {p.stderr[-400:]!r}")
p = run(["bench", "latency", "--model", llama, "--num-iters", "1", "-dp", "2"], 2)
if p.returncode == 0 or "bench latency measures one engine: --data-parallel-size is for serve" not in p.stderr:
    failures.append(f"bench latency -dp 2: exit {p.returncode}, {p.stderr[-400:]!r}")

runs.finish(f"tensor (2 ranks), expert and pipeline (2 stages) parallelism match the single process on 15 "
            f"architectures (largest logprob difference {largest[0]:.2e} relative) and the goldens")
