// A LoRA adapter as the peft library saves it (save_pretrained): a directory
// of adapter_config.json and adapter_model.safetensors, read and checked the
// way vLLM reads adapters, so that an adapter vLLM serves loads here and one
// vLLM refuses is refused here, each with one line saying why.
//
// The tensors, not the config's target_modules, say which modules are
// adapted: "base_model.model.<module>.lora_A.weight" [r, in] and
// ".lora_B.weight" [out, r] for a linear module, ".lora_embedding_A"
// [r, vocab] and ".lora_embedding_B" [hidden, r] for the embedding table.
// The full embedding copies PEFT writes beside an embedding adapter
// ("<module>.base_layer.weight") are skipped.  As in vLLM one scaling serves
// every module, lora_alpha / r (lora_alpha / sqrt(r) with use_rslora), from
// the config's r and lora_alpha: rank_pattern and alpha_pattern are not read,
// and a module whose tensors have another rank keeps that rank.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/packed_matrix.h"
#include "model/layers/tensor_parallel.h"
#include "model/model_config.h"

namespace vllm {

// A module of the base model an adapter may change, by its name in the
// Hugging Face checkpoint ("model.layers.3.self_attn.q_proj", "lm_head").
// For the embedding table ("model.embed_tokens") in_features is the
// vocabulary and out_features the hidden size.
struct LoraTarget {
  int64_t in_features = 0, out_features = 0;
  bool embedding = false;
  // Under tensor parallelism, the share of the module this rank computes:
  // of its output features (a column-parallel Linear's part), or of its
  // input features (a row-parallel one's); whole otherwise.  An adapter's
  // B is packed for `rows`, its A for `cols`.
  IndexRange rows, cols;
};
using LoraTargets = std::map<std::string, LoraTarget>;

// One adapted module: its output gains scaling * (x A^T) B^T, or for the
// embedding table scaling * B A[:, token].
struct LoraModuleWeights {
  int64_t rank = 0;
  std::vector<float> a;  // [rank, in_features]
  std::vector<float> b;  // [out_features, rank]
  // A linear module's A and scaling B packed for kernels::linear when the
  // adapter is read, off the engine's thread, so that giving the adapter a
  // slot (Model::set_lora) copies nothing; null for the embedding table.
  // A is packed folded by shrink_fold (folded_shrink.h).
  std::shared_ptr<const kernels::PackedMatrix> packed_a, packed_scaled_b;
  int64_t shrink_fold = 1;

  // B times `scaling`: what a forward pass multiplies by, so that the
  // scaling costs nothing per token.
  std::vector<float> scaled_b(float scaling) const {
    std::vector<float> out(b);
    for (float& v : out) v *= scaling;
    return out;
  }
};

struct PeftAdapter {
  int64_t rank = 0;  // the config's r
  double alpha = 0;
  bool use_rslora = false;
  float scaling = 0;
  std::map<std::string, LoraModuleWeights> modules;  // by module name
};

// Reads the adapter in `dir` for a base model offering `targets`.  Refused:
// a missing r, lora_alpha or target_modules; r not a positive integer; r or a
// module's rank above `max_lora_rank`; bias other than "none"; a non-empty
// modules_to_save; DoRA; no adapter_model.safetensors; a tensor that is not
// a LoRA weight; a module the model lacks or cannot adapt; a module with only
// one of its two matrices or shapes that do not fit it.  A directory without
// adapter_config.json is kNotFound ("No adapter found for DIR"); every other
// refusal is kInvalidArgument.  The linear modules' matrices are packed in
// `dtype` (lora_dtype()).
Result<PeftAdapter> load_peft_adapter(const std::string& dir, const LoraTargets& targets, int64_t max_lora_rank,
                                      DType dtype);

// Packs each linear module's A and scaling B (the packed_* fields) from
// its a and b for this rank's share of the module (the target's rows and
// cols), in `dtype`: what load_peft_adapter does once it has read them, and
// a tensor-parallel worker with an adapter rank 0 read.
void pack_adapter(PeftAdapter& adapter, const LoraTargets& targets, DType dtype);

// What an adapter computes in over `model` (vLLM's lora_dtype "auto": the
// model's): BF16 for a bfloat16 checkpoint, F32 otherwise.
DType lora_dtype(const ModelConfig& model);

}  // namespace vllm
