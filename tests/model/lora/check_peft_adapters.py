"""PEFT LoRA adapters (peft_adapters.py's numpy writer of PEFT's layout)
read by load_peft_adapter through lora_adapter_dump, on a tiny random Llama
(tied embeddings: its LM head is a module an adapter may change too):

- the modules the model offers adapters, with their shapes;
- adapters vLLM serves are read exactly (values, ranks, vLLM's one scaling
  alpha / r or alpha / sqrt(r)); the base-weight copies PEFT saves beside an
  embedding adapter are skipped;
- adapters vLLM refuses are refused with one line naming why;
- logits at every position with an adapter on every module (the embedding
  and LM head too; F32, r 8, and rsLoRA r 16 on some) equal reference_forward's
  numpy pass over the merged weights W + scaling B A within 1e-4; over a
  bfloat16 model (the adapter in bfloat16 too, as vLLM's lora_dtype auto)
  within 2e-2, the rounding of the rank-r intermediate.

With STORIES260K_DIR, only the logits check, on that real model (r 4 on
every module), and greedy continuations through `generate` with the adapter
equal to the merged checkpoint's; exit 77 when the directory is missing.

Usage: check_peft_adapters.py VLLM_CPP LORA_ADAPTER_DUMP DUMP_LOGITS WORK_DIR [STORIES260K_DIR]"""
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "reference"))
import reference_forward  # noqa: E402
from lora_runs import equal_or_tie, generate, tokens  # noqa: E402
from peft_adapters import (LINEAR_MODULES, linear_shapes, lora_config, lora_tensors, merged_checkpoint,  # noqa: E402
                           random_lora, write_adapter)
from safetensors_io import Bf16  # noqa: E402

VLLM, DUMP, DUMP_LOGITS, WORK = sys.argv[1:5]
STORIES = sys.argv[5] if len(sys.argv) > 5 else None
MAX_RANK = 16
# make-test-model's tiny Llama: hidden 64, 4 heads of 16, 2 KV heads, MLP 128, vocab 512, 2 layers.
HIDDEN, KV, MLP, VOCAB, LAYERS = 64, 32, 128, 512, 2
SHAPES = {"q_proj": (HIDDEN, HIDDEN), "k_proj": (HIDDEN, KV), "v_proj": (HIDDEN, KV), "o_proj": (HIDDEN, HIDDEN),
          "gate_proj": (HIDDEN, MLP), "up_proj": (HIDDEN, MLP), "down_proj": (MLP, HIDDEN)}  # (in, out)
PARENT = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
          "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def module(layer, name):
    return f"model.layers.{layer}.{PARENT[name]}.{name}"


def expected_targets():
    targets = {"model.embed_tokens": [VOCAB, HIDDEN, True], "lm_head": [HIDDEN, VOCAB, False]}
    for layer in range(LAYERS):
        for name in LINEAR_MODULES:
            targets[module(layer, name)] = [*SHAPES[name], False]
    return targets


def dump(model, adapter):
    return subprocess.run([DUMP, model, adapter, str(MAX_RANK)], capture_output=True, text=True)


def read(model, adapter, label):
    result = dump(model, adapter)
    assert result.returncode == 0, f"{label}: refused: {result.stderr}"
    return json.loads(result.stdout)


def assert_refused(model, adapter, label, expected, status=1):
    result = dump(model, adapter)
    assert result.returncode == status, f"{label}: exit {result.returncode}, expected {status}: {result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], f"{label}: expected one line naming '{expected}': {lines}"
    print(f"ok   refused {label}: {lines[0]}")


def assert_read(got, linear, embedding, rank, scaling, label, widen=lambda x: x):
    """The dump holds exactly the adapter's matrices (widened as stored) and the scaling."""
    assert got["rank"] == rank, f"{label}: rank {got['rank']}"
    assert np.float32(got["scaling"]) == np.float32(scaling), f"{label}: scaling {got['scaling']} != {scaling}"
    want = {**linear, **(embedding or {})}
    assert set(got["modules"]) == set(want), f"{label}: modules {sorted(got['modules'])}"
    for name, (a, b) in want.items():
        m = got["modules"][name]
        assert m["rank"] == a.shape[0], f"{label}: {name} rank {m['rank']}"
        assert np.array_equal(np.array(m["a"], np.float32), widen(a).reshape(-1)), f"{label}: {name} A"
        assert np.array_equal(np.array(m["b"], np.float32), widen(b).reshape(-1)), f"{label}: {name} B"
    print(f"ok   read {label}: {len(want)} modules, scaling {got['scaling']}")


def all_linear(rng, rank, rank_of=lambda name: None):
    return {module(layer, name): random_lora(rng, rank_of(name) or rank, *SHAPES[name])
            for layer in range(LAYERS) for name in LINEAR_MODULES}


def embedding_lora(rng, rank):
    a = rng.standard_normal((rank, VOCAB)).astype(np.float32)
    b = rng.standard_normal((HIDDEN, rank)).astype(np.float32) * 0.1
    return {"model.embed_tokens": (a, b)}


def engine_logits(model, ids, chunk, out, *flags):
    run = subprocess.run([DUMP_LOGITS, *flags, model, str(chunk), out], input=" ".join(map(str, ids)),
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return np.fromfile(out, dtype="<f4").reshape(len(ids), VOCAB)


def check_logits(model, adapter_dir, scaling, linear, embedding, label, tolerance=1e-4, bf16=False):
    """Logits with the adapter vs numpy over the merged weights, every position, prefill in chunks of 5.
    `bf16`: a bfloat16 model, whose products round their inputs to bfloat16 (and the adapter's matrices
    are bfloat16 too: `tolerance` covers that rounding)."""
    merged = os.path.join(WORK, "merged_" + label)
    merged_checkpoint(model, scaling, linear, embedding, merged)
    ids = [int(i) for i in np.random.default_rng(7).integers(3, VOCAB, 24)]
    expected = reference_forward.forward(merged, ids, bf16_activations=bf16)
    ours = engine_logits(model, ids, 5, os.path.join(WORK, label + ".f32"), "--lora=" + adapter_dir)
    base = engine_logits(model, ids, 5, os.path.join(WORK, label + ".base.f32"))
    scale = np.abs(expected).max()
    error = np.abs(ours - expected).max() / scale
    moved = np.abs(base - expected).max() / scale
    assert error <= tolerance, f"{label}: logits {error:.2e} (of the largest) from the merged weights'"
    assert moved > 1e-2, f"{label}: the adapter barely moves the logits ({moved:.2e}): no test"
    print(f"ok   logits {label}: {error:.1e} from numpy over merged weights (the base model: {moved:.1e})")


def check_stories260k():
    if not os.path.isfile(os.path.join(STORIES, "config.json")):
        print(f"SKIP: {STORIES} is missing (../shared)")
        sys.exit(77)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    with open(os.path.join(STORIES, "config.json")) as f:
        config = json.load(f)
    assert config["vocab_size"] == VOCAB and config["hidden_size"] == HIDDEN, "stories260k's shape changed"
    shapes, rng = linear_shapes(config), np.random.default_rng(3)
    linear = {module(layer, name): random_lora(rng, 4, *shapes[name])
              for layer in range(config["num_hidden_layers"]) for name in LINEAR_MODULES}
    linear["lm_head"] = random_lora(rng, 4, HIDDEN, VOCAB)
    embedding = embedding_lora(rng, 4)
    adapter = os.path.join(WORK, "stories260k_adapter")
    write_adapter(adapter, lora_config(4, 8, [*LINEAR_MODULES, "embed_tokens", "lm_head"]),
                  lora_tensors(linear, embedding, {"model.embed_tokens": np.zeros((VOCAB, HIDDEN), np.float32)}))
    check_logits(STORIES, adapter, 8 / 4, linear, embedding, "stories260k")
    # Greedy continuations through the engine equal the merged checkpoint's.
    prompts = ["Once upon a time", "The little dog", "She was very happy because", "One day, Tom"]
    merged, _ = generate(VLLM, WORK, os.path.join(WORK, "merged_stories260k"),
                         [{"prompt": p, "max_tokens": 40, "temperature": 0, "logprobs": 2} for p in prompts],
                         "--tokenizer", STORIES)
    ours, _ = generate(VLLM, WORK, STORIES, [{"prompt": p, "max_tokens": 40, "temperature": 0, "lora": "s"}
                                             for p in prompts], "--enable-lora", "--lora-modules", "s=" + adapter)
    for i, (a, b) in enumerate(zip(ours, merged)):
        equal_or_tie(tokens(a), b, f"stories260k prompt {i}")
    print(f"ok   greedy continuations of {len(prompts)} prompts = the merged checkpoint's")
    print("stories260k PEFT adapter check passed")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    model = os.path.join(WORK, "llama")
    made = subprocess.run([VLLM, "make-test-model", "--arch", "llama", "--preset", "tiny", "--out", model],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    rng = np.random.default_rng(0)
    at = lambda name: os.path.join(WORK, name)  # noqa: E731

    # Every linear module, the embedding and the LM head; PEFT's base copies beside them.
    linear = {**all_linear(rng, 8), "lm_head": random_lora(rng, 8, HIDDEN, VOCAB)}
    embedding = embedding_lora(rng, 8)
    copies = {"model.embed_tokens": rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32),
              "lm_head": rng.standard_normal((VOCAB, HIDDEN)).astype(np.float32)}
    targets = [*LINEAR_MODULES, "embed_tokens", "lm_head"]
    write_adapter(at("full"), lora_config(8, 16, targets), lora_tensors(linear, embedding, copies))
    got = read(model, at("full"), "full")
    assert got["targets"] == expected_targets(), f"targets: {got['targets']}"
    print(f"ok   targets: {len(got['targets'])} modules")
    assert_read(got, linear, embedding, 8, 16 / 8, "every module, F32, alpha / r")
    check_logits(model, at("full"), 16 / 8, linear, embedding, "every_module")

    # BF16 tensors (an adapter trained in bf16), rsLoRA, target_modules as a regex.
    bf16 = lambda x: Bf16(x).values()  # noqa: E731
    linear = all_linear(rng, 16)
    write_adapter(at("rslora"), lora_config(16, 12, r".*\.(q|k|v|o)_proj", use_rslora=True),
                  lora_tensors(linear, dtype="bf16"))
    assert_read(read(model, at("rslora"), "rslora"), linear, None, 16, 12 / 4, "BF16, rsLoRA, regex targets", bf16)
    check_logits(model, at("rslora"), 12 / 4, {m: (bf16(a), bf16(b)) for m, (a, b) in linear.items()}, None,
                 "rslora_bf16")

    # Over a bfloat16 model the adapter computes in bfloat16 too (vLLM's lora_dtype "auto").
    model_bf16 = os.path.join(WORK, "llama_bf16")
    made = subprocess.run([VLLM, "make-test-model", "--arch", "llama", "--preset", "tiny", "--dtype", "bf16",
                           "--out", model_bf16], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    linear = all_linear(rng, 8)
    write_adapter(at("over_bf16"), lora_config(8, 16, list(LINEAR_MODULES)), lora_tensors(linear))
    # The reference merges A and scaling B rounded as the engine keeps them; the rank-r intermediate x A^T,
    # which the engine rounds to bfloat16 before the expand (the pair kernels' input), measured 6.9e-3 here
    # after two layers: the tolerance is 2e-2, against 1e0 for an adapter applied wrongly or not at all.
    as_computed = {m: (bf16(a), bf16(2.0 * b) / 2.0) for m, (a, b) in linear.items()}
    check_logits(model_bf16, at("over_bf16"), 16 / 8, as_computed, None, "over_bf16", tolerance=2e-2, bf16=True)

    # Mixed ranks (rank_pattern): each module keeps its tensors' rank; vLLM
    # scales every module by the config's alpha / r.
    ranks = {"q_proj": 4, "down_proj": 12}
    linear = all_linear(rng, 8, ranks.get)
    write_adapter(at("mixed"), lora_config(8, 8, list(LINEAR_MODULES), rank_pattern=ranks, alpha_pattern={"q_proj": 2}),
                  lora_tensors(linear))
    assert_read(read(model, at("mixed"), "mixed"), linear, None, 8, 1.0, "mixed ranks (rank_pattern)")
    check_logits(model, at("mixed"), 1.0, linear, None, "mixed_ranks")

    # Refusals.
    q0 = module(0, "q_proj")
    one = {q0: random_lora(rng, 8, HIDDEN, HIDDEN)}

    def refused(label, expected, config=None, tensors=None, status=1):
        path = at("refused_" + "".join(c if c.isalnum() else "_" for c in label))
        write_adapter(path, config or lora_config(8, 16, ["q_proj"]),
                      tensors if tensors is not None else lora_tensors(one))
        assert_refused(model, path, label, expected, status)

    # vLLM checks the config's r (here above the limit, its tensors' rank below it).
    refused("r above --max-lora-rank", "adapter_config.json: LoRA rank 32 is greater than max_lora_rank 16.",
            lora_config(32, 16, ["q_proj"]))
    refused("a module's rank above --max-lora-rank", "rank 32 is greater than max_lora_rank 16",
            lora_config(8, 16, ["q_proj"], rank_pattern={"q_proj": 32}),
            lora_tensors({q0: random_lora(rng, 32, HIDDEN, HIDDEN)}))
    refused("r = 0", "'r' must be positive", lora_config(0, 16, ["q_proj"]))
    refused("bias all", "Adapter bias is not supported", lora_config(8, 16, ["q_proj"], bias="all"))
    refused("bias lora_only", "Adapter bias is not supported", lora_config(8, 16, ["q_proj"], bias="lora_only"))
    refused("modules_to_save", "modules_to_save", lora_config(8, 16, ["q_proj"], modules_to_save=["lm_head"]))
    refused("DoRA", "DoRA", lora_config(8, 16, ["q_proj"], use_dora=True))
    config = lora_config(8, 16, ["q_proj"])
    del config["lora_alpha"], config["target_modules"]
    refused("missing fields", "missing required configuration fields: lora_alpha, target_modules", config)
    with_magnitude = lora_tensors(one)
    with_magnitude["base_model.model." + q0 + ".lora_magnitude_vector"] = np.ones(HIDDEN, np.float32)
    refused("a DoRA magnitude tensor", ".lora_magnitude_vector is unsupported LoRA weight", tensors=with_magnitude)
    with_bias = lora_tensors(one)
    with_bias["base_model.model." + q0 + ".lora_B.bias"] = np.ones(HIDDEN, np.float32)
    refused("lora_bias", ".lora_B.bias is unsupported LoRA weight", tensors=with_bias)
    with_full_weight = lora_tensors(one)
    with_full_weight["base_model.model.model.norm.weight"] = np.ones(HIDDEN, np.float32)
    refused("a base weight that is not a base_layer copy", "model.norm.weight is unsupported LoRA weight",
            tensors=with_full_weight)
    refused("a layer the model lacks", "expected target modules in",
            tensors=lora_tensors({module(7, "q_proj"): random_lora(rng, 8, HIDDEN, HIDDEN)}))
    refused("a module name the model lacks", "received [model.layers.0.self_attn.qkv]",
            tensors=lora_tensors({"model.layers.0.self_attn.qkv": random_lora(rng, 8, HIDDEN, HIDDEN)}))
    refused("a linear LoRA on the embedding", "received [model.embed_tokens]",
            tensors=lora_tensors({"model.embed_tokens": random_lora(rng, 8, VOCAB, HIDDEN)}))
    refused("A without B", "has only its lora_A matrix",
            tensors={k: v for k, v in lora_tensors(one).items() if "lora_B" not in k})
    refused("A of the wrong width", "does not fit " + q0,
            tensors=lora_tensors({q0: random_lora(rng, 8, HIDDEN - 1, HIDDEN)}))
    refused("B of the wrong height", "does not fit " + q0,
            tensors=lora_tensors({q0: random_lora(rng, 8, HIDDEN, HIDDEN + 1)}))
    refused("A and B of different ranks", "have ranks",
            tensors=lora_tensors({q0: (random_lora(rng, 8, HIDDEN, HIDDEN)[0],
                                       random_lora(rng, 4, HIDDEN, HIDDEN)[1])}))
    _, b = embedding_lora(rng, 8)["model.embed_tokens"]
    refused("an embedding adapter over a resized vocabulary", "vocabulary size (512)",
            tensors=lora_tensors({}, {"model.embed_tokens": (np.zeros((8, VOCAB + 16), np.float32), b)}))
    refused("an integer tensor", "must be F32, F16 or BF16",
            tensors={**lora_tensors(one), "base_model.model." + q0 + ".lora_A.weight": np.zeros((8, HIDDEN), np.int32)})

    pickle = at("pickle")
    write_adapter(pickle, lora_config(8, 16, ["q_proj"]), None)
    open(os.path.join(pickle, "adapter_model.bin"), "wb").write(b"\x80\x02}q\x00.")
    assert_refused(model, pickle, "adapter_model.bin only", "adapter_model.bin is a PyTorch pickle")
    no_tensors = at("no_tensors")
    write_adapter(no_tensors, lora_config(8, 16, ["q_proj"]), None)
    assert_refused(model, no_tensors, "no tensors", "doesn't contain tensors")
    assert_refused(model, at("nowhere"), "no adapter_config.json", "No adapter found for", status=3)
    print("all PEFT adapter checks passed")


if STORIES:
    check_stories260k()
else:
    main()
