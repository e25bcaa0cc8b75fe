// EAGLE draft heads (speculative decoding's "eagle" method) for decoder
// targets, laid out as the EAGLE authors save them and vLLM reads them
// (docs/research/speculative_decoding.md, section 6): a Llama config.json
// (num_hidden_layers 1 as published) and tensors without the "model."
// prefix -- fc.weight [H, 2H], then layers.<i>. as a Llama's except that
// layer 0 has no input_layernorm -- and no final norm.  The head shares its
// target's embedding and LM head (an embed_tokens.weight beside them is the
// target's copy, left unread as vLLM does with one pipeline stage).
//
// A token's row: x = fc([embed(token) | the target hidden state given with
// it]), then the layers; the output is both the next row's hidden state and,
// through the target's LM head, the logits of the guess.
#pragma once

#include <memory>
#include <vector>

#include "model/layers/decoder.h"
#include "model/layers/weight_reader.h"

namespace vllm {

// `target` null: only the tensors' names and shapes are wanted (a WeightLister).
// `fc_bias`: the checkpoint has fc.bias (EAGLE's own loader makes one unless
// config.json says "bias": false).
Result<std::unique_ptr<Model>> build_eagle_head(const ModelConfig& head, WeightReader& weights,
                                                const DecoderModel* target, bool fc_bias);

// Every tensor of an EAGLE head of this config (make-test-model writes these).
Result<std::vector<WeightSpec>> eagle_head_weight_specs(const ModelConfig& head);

}  // namespace vllm
