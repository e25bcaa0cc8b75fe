// What the architectures share: the checkpoint names of the embedding,
// layers and LM head, and the standard attention read from config.json.
#pragma once

#include <memory>
#include <string>

#include "kernels/packed_matrix.h"
#include "model/layers/attention.h"
#include "model/layers/decoder.h"
#include "model/layers/linear.h"
#include "model/layers/weight_reader.h"
#include "model/model_config.h"

namespace vllm {

// "model.layers.<i>."
std::string layer_prefix(int64_t i);

// The embedding table's module: its weight "model.embed_tokens.weight",
// [vocab_size, hidden_size], read by load_embedding.
inline constexpr char kEmbeddingModule[] = "model.embed_tokens";
// Under tensor parallelism, this rank's rows (VocabShard).
Result<std::shared_ptr<const kernels::PackedMatrix>> load_embedding(WeightReader& weights, const ModelConfig& config);

// lm_head.weight, or the embedding when tie_word_embeddings (this rank's rows, as the embedding's).
Result<Linear> load_lm_head(WeightReader& weights, const ModelConfig& config,
                            const std::shared_ptr<const kernels::PackedMatrix>& embedding);

// The embedding a decoder's pipeline stage holds, and how it is split: the
// table on the first stage (and on the last, when the LM head is tied to
// it), this rank's rows of it under tensor parallelism.
Status load_decoder_embedding(WeightReader& weights, const ModelConfig& config, DecoderParts& parts);

// GQA attention of config.json's heads, head_dim and rope (index 0), scale 1/sqrt(head_dim).
AttentionConfig standard_attention(const ModelConfig& config);

}  // namespace vllm
