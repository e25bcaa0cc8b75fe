// EAGLE-3 draft heads (speculative decoding's "eagle3" method), laid out as
// the EAGLE authors save them and vLLM reads them
// (docs/research/speculative_decoding.md, section 7): a Llama config.json
// with draft_vocab_size (and optionally target_hidden_size and the
// auxiliary layer ids), and tensors fc.weight [H, 3T] (T: the target's
// hidden size), midlayer.{input_layernorm, hidden_norm,
// post_attention_layernorm}.weight, midlayer.self_attn.{q,k,v}_proj.weight
// over 2H inputs, o_proj and the MLP as a Llama's, norm.weight, its own
// lm_head.weight [draft_vocab, H] and d2t (target id = draft id + d2t[draft
// id]); vLLM's "layers.0." instead of "midlayer." is read too.  It takes
// the target's embedding unless it carries one.
//
// A token's row, reading g: fc(the target's residual stream entering three
// of its layers, concatenated) in the first pass, its own output for the
// previous position in the others:
//   r = g + attention([norm_in(embed(token)) | norm_hidden(g)])
//   out = r + mlp(norm_post(r))      (fed back as the next row's g)
//   logits = lm_head(norm(out)), scattered to the target's ids by d2t.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/layers/decoder.h"
#include "model/layers/weight_reader.h"

namespace vllm {

// What a checkpoint holds beside the tensors every head has.
struct Eagle3Layout {
  std::string layer_prefix = "midlayer.";  // or vLLM's "layers.0."
  bool own_embedding = false;              // embed_tokens.weight (else the target's)
  std::vector<int64_t> d2t;                // empty: the draft vocabulary is the target's first ids
};

// `target` null: only the tensors' names and shapes are wanted (a WeightLister).
Result<std::unique_ptr<Model>> build_eagle3_head(const ModelConfig& head, WeightReader& weights,
                                                 const DecoderModel* target, Eagle3Layout layout);

// Every float tensor of an EAGLE-3 head of this config (make-test-model
// writes these, and d2t beside them).
Result<std::vector<WeightSpec>> eagle3_head_weight_specs(const ModelConfig& head);

// config.json's draft_vocab_size (vocab_size when absent).
Result<int64_t> eagle3_draft_vocab_size(const ModelConfig& head);

}  // namespace vllm
