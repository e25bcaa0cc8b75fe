// Turns a step's scheduled chunks into one flattened forward pass (vLLM V1's
// layout: token ids, positions, per-sequence query starts and lengths, block
// tables, slot mapping) and runs it over the paged KV cache.  Only the rows
// the chunks ask logits for reach the LM head.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "engine/runner/kv_cache_storage.h"
#include "engine/sched/scheduler_output.h"
#include "model/model.h"

namespace vllm {

class ModelRunner {
 public:
  // `resident_kv_cache`: the KV pool's memory committed now (KVCacheStorage).
  ModelRunner(Model& model, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks,
              bool resident_kv_cache = false);

  // Runs every chunk; returns the logits of their wanted rows, chunk by chunk:
  // [sum of num_logits, vocab_size].  Valid until the next call.
  std::span<float> execute(std::span<const ScheduledChunk> chunks);

  int32_t block_size() const { return block_size_; }

 private:
  void build_batch(std::span<const ScheduledChunk> chunks);

  Model& model_;
  ThreadPool& pool_;
  int32_t block_size_;
  KVCacheStorage storage_;

  // The flattened batch, rebuilt each step (capacity kept).
  std::vector<int32_t> token_ids_;        // [num_tokens]
  std::vector<int32_t> positions_;        // [num_tokens]
  std::vector<int32_t> prompt_lens_;      // [num_tokens]
  std::vector<int32_t> slot_mapping_;     // [num_tokens]
  std::vector<int32_t> query_start_loc_;  // [num_seqs + 1]
  std::vector<int32_t> seq_lens_;         // [num_seqs]
  std::vector<int32_t> block_tables_;     // [num_seqs, max_blocks_per_seq]
  std::vector<int32_t> logits_indices_;   // [num_logits]
  std::vector<float> logits_;             // [num_logits, vocab_size]
  int32_t max_blocks_per_seq_ = 0;
};

}  // namespace vllm
