#include "cli/engine_flags.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "base/thread_pool.h"
#include "cli/human_readable.h"
#include "cli/lora_modules_flag.h"
#include "cli/speculative_config_flag.h"
#include "cli/step_budget.h"
#include "cli/tokenizer_source.h"
#include "distributed/world.h"
#include "engine/data_parallel/data_parallel_engine.h"
#include "engine/data_parallel/replica_server.h"
#include "kernels/kernels.h"

namespace vllm::cli {

void add_engine_flags(CLI::App& app, EngineFlags& f) {
  app.add_option("--max-model-len", f.max_model_len,
                 "Context length: prompt plus generated tokens (e.g. 2048, 4k, 4K; default: the model's)");
  app.add_option("--max-num-seqs", f.max_num_seqs, "Most sequences running in one step")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                 "Token budget of one step (default 2048; serve: what this machine prefills in about 150 ms)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--block-size", f.block_size, "KV cache block size in tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--kv-cache-memory-bytes", f.kv_cache_memory_bytes,
                 "Size of the KV cache (e.g. 4GiB); wins over VLLM_CPU_KVCACHE_SPACE (GiB). Default: room for "
                 "max-num-seqs full-length sequences, at most 4 GiB");
  app.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", f.enable_prefix_caching,
               "Reuse the KV blocks of prompts that share a prefix (default: on)");
  app.add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", f.enable_chunked_prefill,
               "Split long prompts across steps to fill the token budget (default: on)");
  app.add_option("--threads", f.threads, "Compute threads (default: the CPUs this process may use)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--max-logprobs", f.max_logprobs, "Most logprobs / prompt_logprobs a request may ask for")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--kv-cache-dtype", f.kv_cache_dtype,
                 "KV cache element type: auto (the model's: bfloat16 for a bfloat16 checkpoint, else float32), "
                 "bfloat16, float32, fp8 (= fp8_e4m3: scaled by the checkpoint's k_scale / v_scale, else 1)")
      ->capture_default_str();
  app.add_option("--quantization,-q", f.quantization,
                 "int8 | fp8: quantize an unquantized checkpoint's linear layers at load (int8: W8A8; fp8: "
                 "E4M3 weights per tensor); or the checkpoint's own method (gptq, awq, compressed-tensors, "
                 "fp8), checked");
  app.add_option("--cpu-isa", f.cpu_isa,
                 "Kernels' instruction set: auto (the fastest this CPU has), amx, avx512_bf16, avx512, avx2, scalar")
      ->capture_default_str();
  app.add_option("--speculative-config", f.speculative_config,
                 "Speculative decoding, as vLLM's JSON: {\"method\": \"ngram\", \"num_speculative_tokens\": k, "
                 "\"prompt_lookup_min\": 5, \"prompt_lookup_max\": 5, \"disable_by_batch_size\": 8}, or "
                 "{\"method\": \"draft_model\", \"model\": DIR, \"num_speculative_tokens\": k}");
  app.add_flag("--enable-lora", f.enable_lora, "Serve LoRA adapters over the model (PEFT directories)");
  app.add_option("--lora-modules", f.lora_modules,
                 "LoRA adapters to serve: NAME=PATH, or JSON {\"name\": ..., \"path\": ..., \"base_model_name\": "
                 "...} (several values; needs --enable-lora)");
  app.add_option("--max-loras", f.lora.max_loras, "Distinct LoRA adapters in one step")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--max-lora-rank", f.lora.max_lora_rank, "Highest LoRA rank served")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--max-cpu-loras", f.lora.max_cpu_loras,
                 "LoRA adapters kept loaded in memory, at least --max-loras (default: --max-loras)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--tensor-parallel-size", f.tensor_parallel_size,
                 "Ranks the layers are split across (-tp; run under mpirun -np N, one process per rank)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--pipeline-parallel-size", f.pipeline_parallel_size,
                 "Stages the layers are split into, each of --tensor-parallel-size ranks (-pp; under mpirun)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--data-parallel-size", f.data_parallel_size,
                 "Replicas of the engine, each of --tensor-parallel-size x --pipeline-parallel-size ranks, behind "
                 "one endpoint; each request runs on the least loaded (-dp; under mpirun)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_flag("--enable-expert-parallel", f.enable_expert_parallel,
               "Mixture-of-experts layers: each expert whole on one of the tensor-parallel ranks, instead of every "
               "expert split across them; with --data-parallel-size above 1 and replicas of one rank, on one of the "
               "replicas, each token sent to its experts' replicas (-ep)");
}

namespace {

// The job's ranks against the sizes asked for, before anything is loaded.
Status check_parallel_sizes(const EngineFlags& f, const EngineConfig& config) {
  const int64_t wanted = int64_t{f.tensor_parallel_size} * f.pipeline_parallel_size * f.data_parallel_size;
  const int ranks = world().size();
  if (wanted != ranks) {
    return invalid_argument(
        "--tensor-parallel-size " + std::to_string(f.tensor_parallel_size) + " x --pipeline-parallel-size " +
        std::to_string(f.pipeline_parallel_size) + " x --data-parallel-size " + std::to_string(f.data_parallel_size) +
        " = " + std::to_string(wanted) + " ranks, but the job has " + std::to_string(ranks) +
        (ranks == 1 ? " (start one process per rank: mpirun -np " + std::to_string(wanted) + ")" : " (mpirun -np)"));
  }
  auto not_yet = [](const std::string& what) { return unimplemented(what + " is not supported yet"); };
  if (f.enable_expert_parallel && f.tensor_parallel_size == 1) {
    if (f.data_parallel_size == 1) {
      return invalid_argument(
          "--enable-expert-parallel places experts on the tensor-parallel ranks, or across data-parallel replicas "
          "of one rank each: it needs --tensor-parallel-size or --data-parallel-size above 1");
    }
    if (f.pipeline_parallel_size > 1) {
      return not_yet("--enable-expert-parallel across data-parallel replicas of several pipeline stages");
    }
    if (!concurrent_calls_allowed()) {
      return unimplemented(
          "--enable-expert-parallel across data-parallel replicas needs an MPI library that lets two threads "
          "call it at once (MPI_THREAD_MULTIPLE)");
    }
  }
  if (f.data_parallel_size > 1 && f.tensor_parallel_size * f.pipeline_parallel_size > 1 &&
      !concurrent_calls_allowed()) {
    return unimplemented(
        "--data-parallel-size above 1 with replicas of several ranks needs an MPI library that lets two threads "
        "call it at once (MPI_THREAD_MULTIPLE)");
  }
  if (f.pipeline_parallel_size > 1) {
    if (config.lora) return not_yet("--enable-lora with --pipeline-parallel-size above 1");
    if (config.speculative && (config.speculative->method == SpeculativeMethod::kEagle ||
                               config.speculative->method == SpeculativeMethod::kEagle3)) {
      return not_yet("an EAGLE head (--speculative-config) with --pipeline-parallel-size above 1");
    }
  }
  return Status::ok();
}

}  // namespace

int engine_threads(const EngineFlags& flags) {
  return flags.threads > 0 ? flags.threads : ThreadPool::default_num_threads();
}

Result<EngineConfig> make_engine_config(const EngineFlags& f) {
  EngineConfig config;
  if (!f.max_model_len.empty()) {
    Result<int64_t> len = parse_human_readable_int(f.max_model_len);
    if (!len.is_ok()) return invalid_argument("--max-model-len: " + len.status().message());
    if (*len < 1 || *len > INT32_MAX) return invalid_argument("--max-model-len must be in [1, 2^31)");
    config.scheduler.max_model_len = static_cast<int32_t>(*len);
  }
  config.scheduler.max_num_seqs = f.max_num_seqs;
  config.scheduler.max_num_batched_tokens = f.max_num_batched_tokens.value_or(2048);
  config.scheduler.enable_chunked_prefill = f.enable_chunked_prefill;
  config.scheduler.max_queue_seconds = f.max_queue_seconds;
  config.cache.block_size = f.block_size;
  config.cache.enable_prefix_caching = f.enable_prefix_caching;
  if (!f.kv_cache_memory_bytes.empty()) {
    Result<int64_t> bytes = parse_human_readable_int(f.kv_cache_memory_bytes);
    if (!bytes.is_ok()) return invalid_argument("--kv-cache-memory-bytes: " + bytes.status().message());
    if (*bytes < 1) return invalid_argument("--kv-cache-memory-bytes must be positive");
    config.cache.kv_cache_memory_bytes = *bytes;
  } else if (const char* gib = std::getenv("VLLM_CPU_KVCACHE_SPACE"); gib != nullptr && *gib != '\0') {
    char* end = nullptr;
    const double value = std::strtod(gib, &end);
    if (*end != '\0' || !(value >= 0) || value > 1e6) {
      return invalid_argument(std::string("VLLM_CPU_KVCACHE_SPACE must be a number of GiB, got '") + gib + "'");
    }
    config.cache.kv_cache_memory_bytes = static_cast<int64_t>(value * 1073741824.0);
  }
  if (f.kv_cache_dtype == "bfloat16") {
    config.cache.kv_cache_dtype = DType::kBF16;
  } else if (f.kv_cache_dtype == "float32") {
    config.cache.kv_cache_dtype = DType::kF32;
  } else if (f.kv_cache_dtype == "fp8" || f.kv_cache_dtype == "fp8_e4m3") {
    config.cache.kv_cache_dtype = DType::kF8E4M3;
  } else if (f.kv_cache_dtype != "auto") {
    return invalid_argument("--kv-cache-dtype must be auto, bfloat16, float32, fp8 or fp8_e4m3, got '" +
                            f.kv_cache_dtype + "'");
  }
  config.num_threads = engine_threads(f);
  config.max_logprobs = f.max_logprobs;
  if (!f.speculative_config.empty()) {
    VLLM_ASSIGN_OR_RETURN(config.speculative, parse_speculative_config(f.speculative_config));
  }
  if (f.enable_lora) {
    config.lora = f.lora;
  } else if (!f.lora_modules.empty()) {
    return invalid_argument("--lora-modules needs --enable-lora");
  }
  return config;
}

Status one_engine_only(const EngineFlags& flags, const std::string& command) {
  if (flags.data_parallel_size == 1) return Status::ok();
  return invalid_argument(command +
                          " measures one engine: --data-parallel-size is for serve and generate (measure a served "
                          "job with bench serve)");
}

std::string spec_decoding_summary(const SpecDecodingStats& stats) {
  char head[160];
  std::snprintf(head, sizeof head, "speculative decoding: acceptance rate %.1f%%, mean acceptance length %.2f",
                100.0 * stats.acceptance_rate(), stats.mean_acceptance_length());
  std::string out = head;
  out += ", drafts " + std::to_string(stats.num_drafts) + ", draft tokens " + std::to_string(stats.num_draft_tokens) +
         ", accepted " + std::to_string(stats.num_accepted_tokens) + ", accepted per position [";
  for (size_t i = 0; i < stats.num_accepted_tokens_per_pos.size(); ++i) {
    out += (i > 0 ? ", " : "");
    out += std::to_string(stats.num_accepted_tokens_per_pos[i]);
  }
  out += "]";
  return out;
}

namespace {

// -dp N -ep over replicas of one rank: vLLM's expert group of every data-parallel rank.
bool experts_across_replicas(const EngineFlags& flags) {
  return flags.enable_expert_parallel && flags.data_parallel_size > 1 && flags.tensor_parallel_size == 1;
}

}  // namespace

Result<LoadedEngine> load_engine(const std::string& model_dir, const EngineFlags& flags,
                                 const std::string& tokenizer_dir, Workload workload) {
  VLLM_ASSIGN_OR_RETURN(EngineConfig config, make_engine_config(flags));
  VLLM_ASSIGN_OR_RETURN(std::vector<LoraModule> lora_modules, parse_lora_modules(flags.lora_modules));
  VLLM_RETURN_IF_ERROR(kernels::force_cpu_isa(flags.cpu_isa));
  VLLM_RETURN_IF_ERROR(check_parallel_sizes(flags, config));
  LoadedEngine loaded;
  LoadOptions load{.quantization = flags.quantization};
  // Ranks are laid out as vLLM's: tensor-parallel innermost, then pipeline
  // stages, then replicas.  Every rank makes every group (a collective).
  const int replica_size = flags.tensor_parallel_size * flags.pipeline_parallel_size;
  if (flags.data_parallel_size > 1) {
    Communicator& peers = peer_ranks(replica_size);
    if (world().rank() % replica_size == 0) loaded.replica_leaders = &peers;
  }
  if (experts_across_replicas(flags)) {
    loaded.expert_exchange = std::make_unique<ExpertExchange>(expert_ranks(replica_size), engine_threads(flags));
    load.expert_exchange = loaded.expert_exchange.get();
  }
  if (replica_size > 1) {
    load.world = &consecutive_ranks(replica_size);
    load.tensor_parallel = flags.tensor_parallel_size > 1 ? &consecutive_ranks(flags.tensor_parallel_size) : nullptr;
    load.pipeline_parallel_size = flags.pipeline_parallel_size;
    load.expert_parallel = flags.enable_expert_parallel;
    load.whole_vocabulary_on_rank0 = config.speculative && (config.speculative->method == SpeculativeMethod::kEagle ||
                                                            config.speculative->method == SpeculativeMethod::kEagle3);
  }
  VLLM_ASSIGN_OR_RETURN(loaded.model, load_model(model_dir, load));
  if (load.world != nullptr && load.world->rank() != 0) {
    ThreadPool pool(engine_threads(flags));
    VLLM_RETURN_IF_ERROR(run_worker(*loaded.model, pool));
    loaded.worker_finished = true;
    return loaded;
  }
  loaded.workers = WorkerStop(load.world);
  VLLM_ASSIGN_OR_RETURN(loaded.tokenizer, load_tokenizer(tokenizer_dir.empty() ? model_dir : tokenizer_dir));
  // Without chunked prefill a step must hold a whole prompt: no shorter
  // budget helps.  Replicas that exchange tokens run forward passes only
  // together, in their steps.
  if (!flags.max_num_batched_tokens && workload == Workload::kServing && flags.enable_chunked_prefill &&
      loaded.expert_exchange == nullptr) {
    VLLM_ASSIGN_OR_RETURN(config.scheduler.max_num_batched_tokens,
                          measure_step_token_budget(*loaded.model, *loaded.tokenizer, config));
  }
  config.cache.resident = workload == Workload::kServing;
  VLLM_ASSIGN_OR_RETURN(loaded.engine, LLMEngine::create(*loaded.model, *loaded.tokenizer, config));
  for (const LoraModule& module : lora_modules) {
    VLLM_RETURN_IF_ERROR(loaded.engine->loras()->add(module).with_context("--lora-modules " + module.name));
  }
  return loaded;
}

Result<std::unique_ptr<EngineClient>> start_engine_client(LoadedEngine& loaded, int32_t max_waiting_requests) {
  if (loaded.replica_leaders == nullptr) {
    return std::unique_ptr<EngineClient>(std::make_unique<AsyncEngine>(std::move(loaded.engine), max_waiting_requests));
  }
  if (loaded.replica_leaders->rank() == 0) {
    return std::unique_ptr<EngineClient>(std::make_unique<DataParallelEngine>(
        std::make_unique<AsyncEngine>(std::move(loaded.engine), 0, loaded.expert_exchange.get()),
        *loaded.replica_leaders, max_waiting_requests));
  }
  AsyncEngine replica(std::move(loaded.engine), 0, loaded.expert_exchange.get());
  VLLM_RETURN_IF_ERROR(serve_replica(replica, *loaded.replica_leaders));
  return std::unique_ptr<EngineClient>();
}

}  // namespace vllm::cli
