// Turns a step's scheduled chunks into one flattened forward pass (vLLM V1's
// layout: token ids, positions, per-sequence query starts and lengths, block
// tables, slot mapping) and runs it over the paged KV cache.  Only the rows
// the chunks ask logits for reach the LM head.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "engine/runner/forward_chunk.h"
#include "engine/runner/kv_cache_storage.h"
#include "engine/runner/worker_ranks.h"
#include "model/model.h"

namespace vllm {

class ModelRunner {
 public:
  // `resident_kv_cache`: the KV pool's memory committed now (KVCacheStorage).
  // On rank 0 of a model split across ranks (Model::parallel_group), the
  // worker ranks open a runner of their own beside it and run its passes.
  // `tap`: the hidden states of every token it keeps, for an EAGLE head
  // that reads them (hidden_states()).
  ModelRunner(Model& model, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks,
              bool resident_kv_cache = false, std::optional<HiddenStateTap> tap = std::nullopt);

  // Runs every chunk; returns the logits of their wanted rows, chunk by chunk:
  // [sum of num_logits, vocab_size].  Valid until the next call.
  // `input_hidden`: an EAGLE head's, a hidden state per token of the chunks,
  // in order, its target's or (`from_head`) its own (ForwardBatch::input_hidden).
  std::span<float> execute(std::span<const ForwardChunk> chunks, const float* input_hidden = nullptr,
                           bool input_hidden_from_head = false);

  // execute() in two halves, for a model split into pipeline stages: submit()
  // runs this rank's stage and hands the batch on; collect() returns the
  // logits of the oldest batch submitted and not yet collected (valid until
  // the next collect or execute).  Up to pipeline_stages() batches may be in
  // flight at once, the first stage working on one while later ones work on
  // those before it.  Any other model computes its logits in collect().
  void submit(std::span<const ForwardChunk> chunks);
  std::span<float> collect();
  int pipeline_stages() const { return model_.pipeline_stages(); }

  // LoRA slot `slot` of the model takes `adapter` (Model::set_lora), and of
  // its workers' models too, before the passes that use it.
  Status set_lora(int32_t slot, const PeftAdapter& adapter);

  // Of the last execute(), valid until the next: the kept hidden states of
  // every token, chunk by chunk ([num_tokens, tap's width]), and those of
  // the rows whose logits it returned, as the model gave them.
  std::span<const float> hidden_states() const { return hidden_states_; }
  std::span<const float> logits_hidden_states() const { return logits_hidden_states_; }

  int32_t block_size() const { return block_size_; }

 private:
  void build_batch(std::span<const ForwardChunk> chunks);
  // The model's forward pass over the built batch; its logits are then in flight.
  void run_forward(std::span<const ForwardChunk> chunks, const float* input_hidden, bool input_hidden_from_head);

  Model& model_;
  ThreadPool& pool_;
  int32_t block_size_;
  KVCacheStorage storage_;
  std::unique_ptr<WorkerRunnerLink> workers_;  // rank 0 of a split model's: its workers' runners

  // The flattened batch, rebuilt each step (capacity kept).
  std::vector<int32_t> token_ids_;        // [num_tokens]
  std::vector<int32_t> positions_;        // [num_tokens]
  std::vector<int32_t> prompt_lens_;      // [num_tokens]
  std::vector<int32_t> slot_mapping_;     // [num_tokens]
  std::vector<int32_t> query_start_loc_;  // [num_seqs + 1]
  std::vector<int32_t> seq_lens_;         // [num_seqs]
  std::vector<int32_t> block_tables_;     // [num_seqs, max_blocks_per_seq]
  std::vector<int32_t> logits_indices_;   // [num_logits]
  // Each token's and each logits row's LoRA slot; empty when no chunk has one.
  std::vector<int32_t> lora_slots_, logits_lora_slots_;
  std::vector<float> logits_;  // [num_logits, vocab_size]
  // Submitted batches whose logits are not collected yet, oldest first.
  struct InFlight {
    int64_t num_logits = 0;
    std::vector<int32_t> logits_lora_slots;
    std::span<const float> logits_hidden;  // the model's: valid until its next forward
  };
  std::deque<InFlight> in_flight_;
  std::optional<HiddenStateTap> tap_;
  std::vector<float> hidden_states_;  // [num_tokens, tap's width] with a tap
  std::span<const float> logits_hidden_states_;
  int32_t max_blocks_per_seq_ = 0;
};

}  // namespace vllm
