// Tensor parallelism across processes: every rank of the group runs each
// forward pass of the model with its share of the layers.  Rank 0 runs the
// engine (scheduler, sampler, server); the other ranks, the workers, run
// run_worker(): rank 0's ModelRunners send them what to run -- a runner
// (its KV pool) opened, each step's chunks, the runner closed, a LoRA
// adapter put in a slot of the model -- and every worker's runner of the
// same number runs the same passes, so that the layers' collectives meet.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <cstdint>
#include <span>
#include <utility>

#include "base/status.h"
#include "base/thread_pool.h"
#include "distributed/communicator.h"
#include "engine/runner/forward_chunk.h"
#include "engine/runner/kv_cache_storage.h"
#include "model/model.h"

namespace vllm {

// Rank 0's side of one ModelRunner: opened with the KV pool every rank
// allocates for it (its layers' own heads, the same number of blocks),
// then each step's chunks, then closed.
class WorkerRunnerLink {
 public:
  WorkerRunnerLink(Communicator& group, const KVCacheShape& shape, int32_t num_blocks, bool resident);
  ~WorkerRunnerLink();
  WorkerRunnerLink(const WorkerRunnerLink&) = delete;
  WorkerRunnerLink& operator=(const WorkerRunnerLink&) = delete;

  void execute(std::span<const ForwardChunk> chunks);
  // The workers' models' slot `slot` takes `adapter`: its A and B matrices
  // go to every worker, which packs them for its share of each module.
  void set_lora(int32_t slot, const PeftAdapter& adapter);

 private:
  Communicator& group_;
  int32_t id_;
};

// A worker rank's loop: runs what rank 0 sends until it says stop.  The
// model is this rank's share (its parallel_group() the group).
Status run_worker(Model& model, ThreadPool& pool);

// Rank 0's hold on its workers: when dropped (after every runner), each
// worker's loop ends.
class WorkerStop {
 public:
  WorkerStop() = default;
  explicit WorkerStop(Communicator* group) : group_(group) {}
  WorkerStop(WorkerStop&& other) noexcept : group_(std::exchange(other.group_, nullptr)) {}
  WorkerStop& operator=(WorkerStop&& other) noexcept;
  ~WorkerStop();

 private:
  Communicator* group_ = nullptr;
};

}  // namespace vllm
