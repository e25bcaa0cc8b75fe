#include "engine/runner/model_runner.h"

#include <algorithm>

#include "base/logging.h"

namespace vllm {

ModelRunner::ModelRunner(Model& model, ThreadPool& pool, const KVCacheShape& shape, int32_t num_blocks,
                         bool resident_kv_cache, std::optional<HiddenStateTap> tap)
    : model_(model),
      pool_(pool),
      block_size_(shape.block_size),
      storage_(shape, num_blocks, resident_kv_cache),
      tap_(std::move(tap)) {
  Communicator* group = model.parallel_group();
  if (group != nullptr && group->rank() == 0) {
    workers_ = std::make_unique<WorkerRunnerLink>(*group, shape, num_blocks, resident_kv_cache);
  }
}

Status ModelRunner::set_lora(int32_t slot, const PeftAdapter& adapter) {
  VLLM_RETURN_IF_ERROR(model_.set_lora(slot, &adapter));
  if (workers_ != nullptr) workers_->set_lora(slot, adapter);
  return Status::ok();
}

void ModelRunner::build_batch(std::span<const ForwardChunk> chunks) {
  token_ids_.clear();
  positions_.clear();
  prompt_lens_.clear();
  slot_mapping_.clear();
  query_start_loc_.assign(1, 0);
  seq_lens_.clear();
  logits_indices_.clear();
  lora_slots_.clear();
  logits_lora_slots_.clear();
  const bool with_lora =
      std::any_of(chunks.begin(), chunks.end(), [](const ForwardChunk& c) { return c.lora_slot >= 0; });
  max_blocks_per_seq_ = 0;
  for (const ForwardChunk& c : chunks) {
    max_blocks_per_seq_ = std::max(max_blocks_per_seq_, static_cast<int32_t>(c.block_table.size()));
  }
  block_tables_.assign(chunks.size() * static_cast<size_t>(max_blocks_per_seq_), 0);

  for (size_t s = 0; s < chunks.size(); ++s) {
    const ForwardChunk& c = chunks[s];
    const int32_t seq_len = c.num_computed_tokens + c.num_new_tokens();
    VLLM_CHECK(static_cast<int64_t>(c.block_table.size()) * block_size_ >= seq_len, "block table covers the chunk");
    VLLM_CHECK(c.num_logits >= 0 && c.num_logits <= c.num_new_tokens(), "logits rows lie within the chunk");
    std::copy(c.block_table.begin(), c.block_table.end(),
              block_tables_.begin() + static_cast<ptrdiff_t>(s * static_cast<size_t>(max_blocks_per_seq_)));
    const auto first_row = static_cast<int32_t>(token_ids_.size());
    for (int32_t i = 0; i < c.num_new_tokens(); ++i) {
      const int32_t pos = c.num_computed_tokens + i;
      token_ids_.push_back(c.new_token(i));
      positions_.push_back(pos);
      prompt_lens_.push_back(c.num_prompt_tokens);
      slot_mapping_.push_back(c.block_table[static_cast<size_t>(pos / block_size_)] * block_size_ + pos % block_size_);
    }
    for (int32_t i = c.num_new_tokens() - c.num_logits; i < c.num_new_tokens(); ++i) {
      logits_indices_.push_back(first_row + i);
    }
    if (with_lora) {
      lora_slots_.insert(lora_slots_.end(), static_cast<size_t>(c.num_new_tokens()), c.lora_slot);
      logits_lora_slots_.insert(logits_lora_slots_.end(), static_cast<size_t>(c.num_logits), c.lora_slot);
    }
    query_start_loc_.push_back(static_cast<int32_t>(token_ids_.size()));
    seq_lens_.push_back(seq_len);
  }
}

std::span<float> ModelRunner::execute(std::span<const ForwardChunk> chunks, const float* input_hidden,
                                      bool input_hidden_from_head) {
  VLLM_CHECK(in_flight_.empty(), "execute() runs a batch alone");
  if (workers_) {
    VLLM_CHECK(input_hidden == nullptr, "an EAGLE head does not run under tensor parallelism");
    workers_->execute(chunks);
  }
  build_batch(chunks);
  if (token_ids_.empty()) return {};
  run_forward(chunks, input_hidden, input_hidden_from_head);
  return collect();
}

void ModelRunner::submit(std::span<const ForwardChunk> chunks) {
  VLLM_CHECK(static_cast<int>(in_flight_.size()) < model_.pipeline_stages(), "a batch in flight per pipeline stage");
  if (workers_) workers_->execute(chunks);
  build_batch(chunks);
  VLLM_CHECK(!token_ids_.empty(), "a submitted batch has tokens");
  run_forward(chunks, nullptr, false);
}

std::span<float> ModelRunner::collect() {
  VLLM_CHECK(!in_flight_.empty(), "a batch was submitted");
  const InFlight batch = std::move(in_flight_.front());
  in_flight_.pop_front();
  // A later stage's rank computes a submitted batch's logits and sends them here.
  VLLM_CHECK(in_flight_.empty() || model_.pipeline_stages() > 1, "only pipeline stages keep batches in flight");
  logits_.resize(static_cast<size_t>(batch.num_logits) * static_cast<size_t>(model_.config().vocab_size));
  model_.compute_logits(batch.logits_hidden.data(), batch.num_logits, logits_.data(), pool_,
                        batch.logits_lora_slots.empty() ? nullptr : batch.logits_lora_slots.data());
  return logits_;
}

void ModelRunner::run_forward(std::span<const ForwardChunk> chunks, const float* input_hidden,
                              bool input_hidden_from_head) {
  ForwardBatch batch;
  batch.token_ids = token_ids_.data();
  batch.positions = positions_.data();
  batch.prompt_lens = prompt_lens_.data();
  batch.num_tokens = static_cast<int64_t>(token_ids_.size());
  batch.attention.num_seqs = static_cast<int32_t>(chunks.size());
  batch.attention.query_start_loc = query_start_loc_.data();
  batch.attention.seq_lens = seq_lens_.data();
  batch.attention.block_tables = block_tables_.data();
  batch.attention.max_blocks_per_seq = max_blocks_per_seq_;
  batch.attention.slot_mapping = slot_mapping_.data();
  batch.logits_indices = logits_indices_.data();
  batch.num_logits = static_cast<int64_t>(logits_indices_.size());
  batch.lora_slots = lora_slots_.empty() ? nullptr : lora_slots_.data();
  batch.input_hidden = input_hidden;
  batch.input_hidden_from_head = input_hidden_from_head;
  if (tap_) {
    hidden_states_.resize(token_ids_.size() * static_cast<size_t>(tap_->width(model_.config().hidden_size)));
    batch.hidden_states_out = hidden_states_.data();
    batch.tap = &*tap_;
  }
  logits_hidden_states_ = model_.forward(batch, storage_.view(), pool_);
  in_flight_.push_back(InFlight{batch.num_logits, logits_lora_slots_, logits_hidden_states_});
}

}  // namespace vllm
