// A decoder-only transformer as the architectures we run have it: a token
// embedding (optionally scaled; an EAGLE head fuses it with its target's
// hidden state), layers of [norm, attention, optional
// post-norm, residual add; norm, feed-forward, optional post-norm, residual
// add], a final norm and an LM head (tied to the embedding or not), with
// optional logit soft-capping and scaling.  An architecture (model/arch/)
// fills it in, layer by layer, with the layers of its choosing.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "model/layers/layer.h"
#include "model/layers/linear.h"
#include "model/layers/norm.h"
#include "model/layers/pipeline_stage.h"
#include "model/layers/rotary.h"
#include "model/layers/tensor_parallel.h"

namespace vllm {

struct DecoderLayer {
  Norm input_norm;
  std::unique_ptr<SequenceMixer> mixer;
  std::optional<Norm> post_mixer_norm;  // on the attention's output before the residual add (Gemma)
  Norm ffn_norm;                        // Llama's post_attention_layernorm; Gemma's pre_feedforward_layernorm
  std::unique_ptr<FeedForward> ffn;
  std::optional<Norm> post_ffn_norm;  // on the feed-forward's output before the residual add (Gemma)
};

struct DecoderParts {
  std::shared_ptr<const kernels::PackedMatrix> embed_tokens;  // [vocab, hidden]
  std::string embed_tokens_module;                            // its checkpoint name, for adapters
  float embedding_scale = 1.0f;                               // Gemma: sqrt(hidden); Granite: embedding_multiplier
  float residual_scale = 1.0f;                                // Granite's residual_multiplier on each sub-layer
  std::vector<RotaryEmbedding> ropes;                         // the attention layers' rope indexes point here
  // An EAGLE head's: the layers' input is fc([embedding | input hidden state])
  // of each token (ForwardBatch::input_hidden).
  std::optional<Linear> input_fc;
  std::vector<DecoderLayer> layers;
  Norm final_norm;
  Linear lm_head;  // [vocab, hidden]: its own matrix, or the embedding's
  // Under tensor parallelism: the rows of embed_tokens and lm_head this rank
  // holds, and the group the layers are split across.
  VocabShard vocab;
  // With TensorParallel::whole_vocabulary_on_rank0, on rank 0: the whole
  // table and LM head as well, which an EAGLE head there reads and computes.
  struct WholeVocabulary {
    std::shared_ptr<const kernels::PackedMatrix> embed_tokens;
    Linear lm_head;
  };
  std::optional<WholeVocabulary> whole_vocabulary;
  // Under pipeline parallelism, this rank's stage: `layers` are its range
  // (embed_tokens only on the first stage, or the last when lm_head is tied
  // to it; final_norm and lm_head only on the last).
  PipelineStage stage;
  float logit_softcap = 0;   // Gemma 2: logits = cap * tanh(logits / cap); 0: none
  float logit_scale = 1.0f;  // Granite: 1 / logits_scaling
};

class DecoderModel : public Model {
 public:
  DecoderModel(ModelConfig config, DecoderParts parts) : config_(std::move(config)), p_(std::move(parts)) {}

  const ModelConfig& config() const override { return config_; }
  std::vector<LayerKVSpec> kv_cache_spec() const override;
  std::span<const float> forward(const ForwardBatch& batch, const KVCacheView& kv_cache, ThreadPool& pool) override;
  void compute_logits(const float* hidden, int64_t num_rows, float* logits, ThreadPool& pool,
                      const int32_t* lora_slots) const override;
  ModelCost cost() const override;
  LoraTargets lora_targets() const override;
  Status set_lora(int32_t slot, const PeftAdapter* adapter) override;
  int64_t prompt_cache_key(int32_t num_prompt_tokens) const override;
  // An EAGLE head (input_fc) reads its target's final hidden state.
  std::optional<HiddenStateTap> target_hidden_states() const override;
  Communicator* parallel_group() const override { return p_.stage.world != nullptr ? p_.stage.world : p_.vocab.group; }
  int pipeline_stages() const override { return p_.stage.num_stages; }

  // What an EAGLE head shares with its target: the embedding and its scale,
  // the LM head and what is done to the logits.
  const DecoderParts& parts() const { return p_; }

 private:
  // The residual stream entering `layer` (hidden_), where batch.tap names it.
  void keep_layer_input(const ForwardBatch& batch, int32_t layer) const;
  // compute_logits on the last pipeline stage (all of the model without stages).
  void compute_stage_logits(const float* hidden, int64_t num_rows, float* logits, ThreadPool& pool,
                            const int32_t* lora_slots) const;
  // hidden_ = the embedding rows of the batch's tokens, looked up by the
  // ranks that hold them (VocabShard) and summed over the group.
  void embed_vocab_shard(const ForwardBatch& batch);
  // hidden_ of each token of an adapter with an embedding LoRA += scaling B A[:, token].
  void add_embedding_lora(const ForwardBatch& batch);
  // hidden_ = input_fc([hidden_ | batch.input_hidden]).
  void fuse_input_hidden(const ForwardBatch& batch, ThreadPool& pool);

  // The sub-layer's output, post-normed and scaled as the architecture says, in place.
  void finish_sublayer(const std::optional<Norm>& post_norm, float* out, int64_t rows, ThreadPool& pool) const;

  ModelConfig config_;
  DecoderParts p_;
  // Each slot's embedding LoRA: A [rank, vocab] and B times the adapter's
  // scaling [hidden, rank]; empty where the slot's adapter has none.
  struct EmbeddingLora {
    int64_t rank = 0;
    std::vector<float> a, scaled_b;
  };
  std::vector<EmbeddingLora> embedding_lora_;
  // Scratch, sized to the largest batch seen so far.
  std::vector<float> hidden_;       // [T, hidden]: the residual stream
  std::vector<float> normed_;       // [T, hidden]
  std::vector<float> out_;          // [T, hidden]: a sub-layer's output
  std::vector<float> last_;         // [num_logits, hidden]
  std::vector<float> fc_in_;        // [T, input_fc's in_features]
  std::vector<int32_t> shard_ids_;  // [T]: ids within this rank's vocabulary rows
  // compute_logits under a VocabShard: this rank's logits [rows, rows_per_rank]
  // and every rank's, gathered.
  mutable std::vector<float> shard_logits_, gathered_logits_;
  RopeTables rope_;
  Scratch scratch_;
};

}  // namespace vllm
