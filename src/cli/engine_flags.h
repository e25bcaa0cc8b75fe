// The engine's flags (shared by `generate` and `serve`), with vLLM's names,
// their translation into an EngineConfig, and loading a model to run.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "base/status.h"
#include "distributed/communicator.h"
#include "engine/engine_client.h"
#include "engine/engine_config.h"
#include "engine/llm_engine.h"
#include "engine/runner/worker_ranks.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {

struct EngineFlags {
  std::string max_model_len;  // human-readable; empty: the model's
  int32_t max_num_seqs = 128;
  // Unset: 2048 (vLLM's CPU default), or for serving what this machine prefills in ~150 ms.
  std::optional<int32_t> max_num_batched_tokens;
  int32_t block_size = 16;
  std::string kv_cache_memory_bytes;  // human-readable; empty: VLLM_CPU_KVCACHE_SPACE or automatic
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  int threads = 0;  // 0: one per CPU the process may use
  int32_t max_logprobs = 20;
  std::string cpu_isa = "auto";
  std::string kv_cache_dtype = "auto";
  std::string quantization;        // empty or "none": as the checkpoint is; "int8": W8A8 made at load
  double max_queue_seconds = 0;    // serve's --request-timeout; 0: requests wait as long as it takes
  std::string speculative_config;  // JSON; empty: no speculative decoding
  bool enable_lora = false;
  std::vector<std::string> lora_modules;  // NAME=PATH or JSON values (cli/lora_modules_flag.h)
  LoraConfig lora;                        // --max-loras, --max-lora-rank, --max-cpu-loras
  // The job's ranks (mpirun -np N, N = their product): tensor parallelism
  // splits the layers across them; pipeline and data parallelism are to come.
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  int data_parallel_size = 1;
  bool enable_expert_parallel = false;  // mixtures' experts placed whole on the tensor-parallel ranks
};

void add_engine_flags(CLI::App& app, EngineFlags& flags);

// The engine's compute threads under these flags.
int engine_threads(const EngineFlags& flags);

// Reads VLLM_CPU_KVCACHE_SPACE (GiB; 0 = automatic) when no explicit size is given.
Result<EngineConfig> make_engine_config(const EngineFlags& flags);

// A model directory loaded and its engine made: what generate and serve run.
struct LoadedEngine {
  WorkerStop workers;  // rank 0's, of a job with worker ranks; first, so that it outlives the engine
  // Experts placed across data-parallel replicas: the exchange the model's
  // layers and the engine's lockstep share (outlives both).
  std::unique_ptr<ExpertExchange> expert_exchange;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<LLMEngine> engine;
  // A worker rank's (engine null): it ran its share of rank 0's passes until
  // rank 0 stopped it; its command has nothing left to do.
  bool worker_finished = false;
  // With --data-parallel-size above 1, on each replica's leader (its rank
  // 0): the group of the leaders, whose rank 0 is the job's.
  Communicator* replica_leaders = nullptr;
};
// What the engine is loaded for, which sets two defaults.
enum class Workload {
  // A step's budget 2048 (vLLM's: the fewest steps) unless given; KV pages taken as blocks are first used.
  kOffline,
  // A step's budget measured (steps of about 150 ms, so that streams keep flowing) unless given;
  // the KV pool committed at start-up, so that its memory is there before the load is.
  kServing,
};

// Refuses --data-parallel-size above 1 for `command`, which measures one engine.
Status one_engine_only(const EngineFlags& flags, const std::string& command);

// "speculative decoding: acceptance rate ..., mean acceptance length ..., ..." for a run's final line.
std::string spec_decoding_summary(const SpecDecodingStats& stats);

// `tokenizer_dir` empty: the model's own.  On a worker rank of a job
// (mpirun), the model's share is loaded and run for rank 0 until it stops.
Result<LoadedEngine> load_engine(const std::string& model_dir, const EngineFlags& flags,
                                 const std::string& tokenizer_dir = "", Workload workload = Workload::kOffline);

// The loaded engine (taken) behind a server's front door: an AsyncEngine,
// or with data parallelism, on the job's rank 0, the DataParallelEngine
// over every replica.  On another replica's leader it runs rank 0's
// requests until rank 0 stops it, then returns null: its command is done.
// `max_waiting_requests` > 0 bounds the requests waiting (all replicas').
Result<std::unique_ptr<EngineClient>> start_engine_client(LoadedEngine& loaded, int32_t max_waiting_requests = 0);

}  // namespace vllm::cli
