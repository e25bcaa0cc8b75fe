// What the engine sees of a model, and nothing else of model/: the KV cache
// it needs per layer, a forward pass over a flattened batch to hidden
// states, and the logits of chosen rows.  Architectures (model/arch/)
// implement it by composing the layers of model/layers/.
#pragma once

#ifdef VLLM_ENGINE_FRONT_DOOR_ONLY
#error "this target sees the engine only through engine/engine_client.h, never model/ or kernels/ headers"
#endif

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "distributed/communicator.h"
#include "distributed/expert_exchange.h"
#include "model/forward_batch.h"
#include "model/lora/peft_adapter.h"
#include "model/model_config.h"

namespace vllm {

// One layer's share of a KV cache block, per token: num_kv_heads keys of
// head_dim and as many values; or, for a latent layer (DeepSeek's MLA),
// one row of head_dim (the compressed latent and the rotary key part)
// that all heads share as key and value, num_kv_heads 1.
struct LayerKVSpec {
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t sliding_window = 0;  // keys a query may see, itself included; 0: all
  bool latent = false;
  bool checkpoint_kv_scales = false;  // an FP8 cache's scales came from the checkpoint (not 1)

  int64_t elements_per_token() const { return (latent ? 1 : 2) * int64_t{num_kv_heads} * head_dim; }
};

// What one forward pass costs, for benchmarks' limits: bytes of weight
// matrices a decode step reads (each once, the LM head included), and the
// multiply-adds per token of the layers and of the LM head (attention's
// score and value products, which grow with the context, not counted).
struct ModelCost {
  double weight_bytes = 0;  // what one token reads: a mixture's top_k experts, not all
  double layer_params = 0;
  double lm_head_params = 0;
  bool bf16_matrices = true;  // every matrix BF16 (what the BF16 dot-product kernels take)
  // Mixtures of experts: the bytes of every routed expert of every layer,
  // and the fraction of them one token reads (top_k / num_experts).
  double routed_expert_bytes = 0;
  double routed_fraction = 0;

  // Bytes a decode step of `batch` tokens reads: the rest once, and of the
  // routed experts those any token chose -- 1 - (1 - top_k / n)^batch of
  // them when tokens route independently and evenly.
  double step_weight_bytes(double batch) const {
    const double dense = weight_bytes - routed_expert_bytes * routed_fraction;
    return dense + routed_expert_bytes * (1.0 - std::pow(1.0 - routed_fraction, batch));
  }
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;

  // Per layer, in order: what the paged KV cache holds for it.
  virtual std::vector<LayerKVSpec> kv_cache_spec() const = 0;

  // Runs every token of `batch` through the layers, writing its keys and
  // values into `kv_cache`, and returns the final (normed) hidden states of
  // the rows batch.logits_indices names: [batch.num_logits, hidden_size],
  // valid until the next call (an EAGLE-3 head's before its final norm,
  // which compute_logits applies: what its next pass reads).  Not
  // thread-safe: one caller (the engine thread) at a time; it reuses its
  // scratch buffers.  Speculative decoding's heads read and write hidden
  // states beside the tokens (ForwardBatch::input_hidden, hidden_states_out).
  //
  // Room is left here, not yet used, for what later features feed in or
  // take out: input embeddings instead of token ids, a range of layers (a
  // pipeline stage), pooled outputs (embedding models).
  virtual std::span<const float> forward(const ForwardBatch& batch, const KVCacheView& kv_cache, ThreadPool& pool) = 0;

  // logits: [num_rows, vocab_size] of hidden: [num_rows, hidden_size];
  // lora_slots: each row's adapter slot (-1 none), or null.
  virtual void compute_logits(const float* hidden, int64_t num_rows, float* logits, ThreadPool& pool,
                              const int32_t* lora_slots) const = 0;

  virtual ModelCost cost() const = 0;

  // The modules a LoRA adapter may change, by checkpoint name, with their
  // shapes (model/lora/peft_adapter.h); empty for a model that takes none.
  virtual LoraTargets lora_targets() const { return {}; }
  // Slot `slot` (0, 1, ...) takes `adapter` (read for these targets), or is
  // emptied (null); a token of that slot (ForwardBatch::lora_slots) then
  // computes with it.  The Linear layers share the adapter's packed
  // matrices (nothing is packed here, on the engine's thread).
  virtual Status set_lora(int32_t /*slot*/, const PeftAdapter* /*adapter*/) {
    return unimplemented("this model takes no LoRA adapters");
  }

  // An EAGLE head: which of its target's hidden states it reads beside each
  // token (ForwardBatch::input_hidden).  nullopt for every other model.
  virtual std::optional<HiddenStateTap> target_hidden_states() const { return std::nullopt; }

  // The ranks this model's layers are split across (tensor parallelism),
  // each of which must run every forward pass and compute_logits with it, in
  // the same order; null when it runs whole in this process.
  virtual Communicator* parallel_group() const { return nullptr; }
  // The pipeline stages the model is split into (1: none).
  virtual int pipeline_stages() const { return 1; }

  // Prompts of the same tokens but different keys here hold different keys
  // and values in the cache (a rotary scaling that follows the prompt's
  // length past the trained context, rotary.h); the prefix cache never
  // shares blocks between them.  0 for every prompt of most models.  (A
  // generated token's keys follow its own position, and a later prompt
  // holding it is longer than that position, so it keys differently too.)
  virtual int64_t prompt_cache_key(int32_t num_prompt_tokens) const = 0;
};

struct LoadOptions {
  // vLLM's --quantization: empty or "none" (the checkpoint as it is), the
  // checkpoint's own quant_method (checked), or "int8" / "fp8": an
  // unquantized checkpoint's linear layers (not the LM head) quantized as
  // they load (model/quant/dynamic_quantization.h).
  std::string quantization;
  // A distributed job's (null: the whole model in this process): every rank
  // of it; the group of ranks each stage's layers are split across (tensor
  // parallelism; null: none); and how many stages the layers are split into
  // (pipeline parallelism), each of tensor_parallel's size.
  Communicator* world = nullptr;
  Communicator* tensor_parallel = nullptr;
  int pipeline_parallel_size = 1;
  // Mixtures of experts: experts placed whole on tensor_parallel's ranks
  // instead of each split across them (TensorParallel::expert_parallel).
  bool expert_parallel = false;
  // Mixtures of experts: experts placed across data-parallel replicas of
  // one rank each, their tokens sent through this exchange
  // (TensorParallel::expert_exchange).
  ExpertExchange* expert_exchange = nullptr;
  // Rank 0 of tensor_parallel also holds the whole embedding table and LM
  // head beside its vocabulary share: for an EAGLE head, which reads them
  // and runs on rank 0 alone (TensorParallel::whole_vocabulary_on_rank0).
  bool whole_vocabulary_on_rank0 = false;
};

// Reads a model directory (config.json, generation_config.json, the
// weights), or a GGUF file (its metadata and tensors), and builds the
// architecture the config names.
Result<std::unique_ptr<Model>> load_model(const std::string& model_path, const LoadOptions& options = {});

// Reads an EAGLE (model/arch/eagle.h) or EAGLE-3 (model/arch/eagle3.h)
// draft head's directory for `target`, whose embedding (and for EAGLE, LM
// head) it shares; its forward passes read ForwardBatch::input_hidden.
Result<std::unique_ptr<Model>> load_eagle_head(const std::string& head_path, const Model& target);
Result<std::unique_ptr<Model>> load_eagle3_head(const std::string& head_path, const Model& target);

}  // namespace vllm
