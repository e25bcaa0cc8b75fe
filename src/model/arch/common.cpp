#include "model/arch/common.h"

#include <cmath>

namespace vllm {

std::string layer_prefix(int64_t i) { return "model.layers." + std::to_string(i) + "."; }

namespace {

// This rank's rows of a [vocab_size, hidden_size] matrix.
MatrixShard vocab_rows(const WeightReader& weights, const ModelConfig& c) {
  const VocabShard vocab = VocabShard::of(weights.tensor_parallel(), c.vocab_size);
  return vocab.group != nullptr ? MatrixShard{{vocab.rows(c.vocab_size)}, {}} : MatrixShard{};
}

}  // namespace

Result<std::shared_ptr<const kernels::PackedMatrix>> load_embedding(WeightReader& weights, const ModelConfig& c) {
  VLLM_ASSIGN_OR_RETURN(kernels::PackedMatrix table,
                        weights.matrix_shards({std::string(kEmbeddingModule) + ".weight"}, {c.vocab_size},
                                              c.hidden_size, vocab_rows(weights, c)));
  return std::make_shared<const kernels::PackedMatrix>(std::move(table));
}

Status load_decoder_embedding(WeightReader& weights, const ModelConfig& c, DecoderParts& parts) {
  const PipelineStage& stage = weights.pipeline_stage();
  parts.stage = stage;
  parts.vocab = VocabShard::of(weights.tensor_parallel(), c.vocab_size);
  if (stage.first() || (stage.last() && c.tie_word_embeddings)) {
    VLLM_ASSIGN_OR_RETURN(parts.embed_tokens, load_embedding(weights, c));
    parts.embed_tokens_module = kEmbeddingModule;
  }
  const TensorParallel& tp = weights.tensor_parallel();
  if (tp.whole_vocabulary_on_rank0 && tp.size() > 1 && tp.rank() == 0) {
    DecoderParts::WholeVocabulary& whole = parts.whole_vocabulary.emplace();
    VLLM_ASSIGN_OR_RETURN(kernels::PackedMatrix table,
                          weights.matrix_shards({std::string(kEmbeddingModule) + ".weight"}, {c.vocab_size},
                                                c.hidden_size, MatrixShard{}));
    whole.embed_tokens = std::make_shared<const kernels::PackedMatrix>(std::move(table));
    if (c.tie_word_embeddings) {
      whole.lm_head = Linear::shared(whole.embed_tokens);
    } else {
      VLLM_ASSIGN_OR_RETURN(whole.lm_head, Linear::load(weights, {"lm_head.weight"}, {c.vocab_size}, c.hidden_size));
    }
  }
  return Status::ok();
}

Result<Linear> load_lm_head(WeightReader& weights, const ModelConfig& c,
                            const std::shared_ptr<const kernels::PackedMatrix>& embedding) {
  if (c.tie_word_embeddings) {
    const MatrixShard vocab = vocab_rows(weights, c);
    return Linear::shared(embedding, "lm_head", vocab.rows.empty() ? IndexRange{} : vocab.rows[0], c.vocab_size);
  }
  return Linear::load_shard(weights, {"lm_head.weight"}, {c.vocab_size}, c.hidden_size, vocab_rows(weights, c));
}

AttentionConfig standard_attention(const ModelConfig& c) {
  AttentionConfig a;
  a.hidden_size = c.hidden_size;
  a.num_heads = c.num_attention_heads;
  a.num_kv_heads = c.num_key_value_heads;
  a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.norm_eps = c.rms_norm_eps;
  return a;
}

}  // namespace vllm
