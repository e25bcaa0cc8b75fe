#include "model/decoder_weights.h"

namespace vllm {
namespace {

// Receives each weight of the decoder with the slot it belongs in.  The one
// description below (describe_weights) serves both loading and listing, so
// names and shapes are written down once.
class WeightSink {
 public:
  virtual ~WeightSink() = default;
  // Checkpoint matrices [rows[i], cols] stacked by rows into one slot.
  virtual Status matrices(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols,
                          kernels::PackedMatrix& slot) = 0;
  // Checkpoint vectors [n[i]] concatenated into one slot.
  virtual Status vectors(const std::vector<std::string>& names, const std::vector<int64_t>& n, WeightKind kind,
                         std::vector<float>& slot) = 0;

  Status matrix(const std::string& name, int64_t rows, int64_t cols, kernels::PackedMatrix& slot) {
    return matrices({name}, {rows}, cols, slot);
  }
  Status vector(const std::string& name, int64_t n, WeightKind kind, std::vector<float>& slot) {
    return vectors({name}, {n}, kind, slot);
  }
};

Status describe_layer(WeightSink& s, const std::string& p, const ModelConfig& c, const DecoderVariant& v,
                      DecoderLayerWeights& w) {
  const int64_t h = c.hidden_size, hd = c.head_dim;
  const int64_t q_dim = c.num_attention_heads * hd, kv_dim = c.num_key_value_heads * hd;
  VLLM_RETURN_IF_ERROR(s.vector(p + "input_layernorm.weight", h, WeightKind::kNorm, w.input_norm));
  const std::string a = p + "self_attn.";
  VLLM_RETURN_IF_ERROR(s.matrices({a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"},
                                  {q_dim, kv_dim, kv_dim}, h, w.qkv_proj));
  VLLM_RETURN_IF_ERROR(s.matrix(a + "o_proj.weight", h, q_dim, w.o_proj));
  if (v.qkv_bias) {
    VLLM_RETURN_IF_ERROR(s.vectors({a + "q_proj.bias", a + "k_proj.bias", a + "v_proj.bias"}, {q_dim, kv_dim, kv_dim},
                                   WeightKind::kBias, w.qkv_bias));
  }
  if (v.o_bias) VLLM_RETURN_IF_ERROR(s.vector(p + "self_attn.o_proj.bias", h, WeightKind::kBias, w.o_bias));
  if (v.qk_norm) {
    VLLM_RETURN_IF_ERROR(s.vector(p + "self_attn.q_norm.weight", hd, WeightKind::kNorm, w.q_norm));
    VLLM_RETURN_IF_ERROR(s.vector(p + "self_attn.k_norm.weight", hd, WeightKind::kNorm, w.k_norm));
  }
  VLLM_RETURN_IF_ERROR(s.vector(p + "post_attention_layernorm.weight", h, WeightKind::kNorm, w.post_attention_norm));
  VLLM_RETURN_IF_ERROR(s.matrices({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"},
                                  {c.intermediate_size, c.intermediate_size}, h, w.gate_up_proj));
  return s.matrix(p + "mlp.down_proj.weight", h, c.intermediate_size, w.down_proj);
}

Status describe_weights(WeightSink& s, const ModelConfig& c, const DecoderVariant& v, DecoderWeights& w) {
  VLLM_RETURN_IF_ERROR(s.matrix("model.embed_tokens.weight", c.vocab_size, c.hidden_size, w.embed_tokens));
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    VLLM_RETURN_IF_ERROR(
        describe_layer(s, "model.layers." + std::to_string(i) + ".", c, v, w.layers[static_cast<size_t>(i)]));
  }
  VLLM_RETURN_IF_ERROR(s.vector("model.norm.weight", c.hidden_size, WeightKind::kNorm, w.final_norm));
  if (c.tie_word_embeddings) return Status::ok();
  return s.matrix("lm_head.weight", c.vocab_size, c.hidden_size, w.lm_head);
}

class SpecCollector : public WeightSink {
 public:
  Status matrices(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols,
                  kernels::PackedMatrix&) override {
    for (size_t i = 0; i < names.size(); ++i) specs.push_back({names[i], {rows[i], cols}, WeightKind::kMatrix});
    return Status::ok();
  }
  Status vectors(const std::vector<std::string>& names, const std::vector<int64_t>& n, WeightKind kind,
                 std::vector<float>&) override {
    for (size_t i = 0; i < names.size(); ++i) specs.push_back({names[i], {n[i]}, kind});
    return Status::ok();
  }
  std::vector<WeightSpec> specs;
};

class CheckpointBinder : public WeightSink {
 public:
  CheckpointBinder(const Checkpoint& ckpt, ThreadPool& pool) : ckpt_(ckpt), pool_(pool) {}

  Status matrices(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int64_t cols,
                  kernels::PackedMatrix& slot) override {
    std::vector<Tensor> parts;
    for (size_t i = 0; i < names.size(); ++i) {
      VLLM_ASSIGN_OR_RETURN(Tensor t, checked(names[i], {rows[i], cols}));
      if (!parts.empty() && t.dtype != parts[0].dtype) {
        return invalid_argument(ckpt_.source() + ": tensor '" + names[i] + "' is " + dtype_name(t.dtype) + " but '" +
                                names[0] + "' is " + dtype_name(parts[0].dtype) + ": they must share a dtype");
      }
      parts.push_back(t);
    }
    slot = kernels::pack_stacked_matrices(parts, pool_);
    return Status::ok();
  }

  // Small vectors are widened to float32 once, here.
  Status vectors(const std::vector<std::string>& names, const std::vector<int64_t>& n, WeightKind,
                 std::vector<float>& slot) override {
    slot.clear();
    for (size_t part = 0; part < names.size(); ++part) {
      VLLM_ASSIGN_OR_RETURN(Tensor t, checked(names[part], {n[part]}));
      for (int64_t i = 0; i < n[part]; ++i) {
        switch (t.dtype) {
          case DType::kF32:
            slot.push_back(t.as<float>()[i]);
            break;
          case DType::kBF16:
            slot.push_back(bf16_to_f32(t.as<uint16_t>()[i]));
            break;
          case DType::kF16:
            slot.push_back(f16_to_f32(t.as<uint16_t>()[i]));
            break;
          case DType::kI32:
            break;  // rejected by checked()
        }
      }
    }
    return Status::ok();
  }

 private:
  Result<Tensor> checked(const std::string& name, const std::vector<int64_t>& shape) const {
    VLLM_ASSIGN_OR_RETURN(Tensor t, ckpt_.get(name));
    const std::string where = ckpt_.source() + ": tensor '" + name + "'";
    if (t.dtype != DType::kF32 && t.dtype != DType::kBF16 && t.dtype != DType::kF16) {
      return invalid_argument(where + ": dtype " + dtype_name(t.dtype) + " is not a float type (F32, BF16, F16)");
    }
    if (t.shape != shape) {
      return invalid_argument(where + ": expected shape " + shape_to_string(shape) + " from config.json, found " +
                              shape_to_string(t.shape));
    }
    return t;
  }

  const Checkpoint& ckpt_;
  ThreadPool& pool_;
};

}  // namespace

std::vector<WeightSpec> decoder_weight_specs(const ModelConfig& config, const DecoderVariant& variant) {
  SpecCollector collector;
  DecoderWeights unused;
  (void)describe_weights(collector, config, variant, unused);  // the collector never fails
  return std::move(collector.specs);
}

Result<DecoderWeights> load_decoder_weights(const Checkpoint& ckpt, const ModelConfig& config,
                                            const DecoderVariant& variant, ThreadPool& pool) {
  // Before anything is sized from config.json: a count it states wrongly
  // (num_hidden_layers 1e9) is one clear error, not an allocation that fails.
  const int64_t layers_present = ckpt.count_numbered("model.layers.");
  if (config.num_hidden_layers > layers_present) {
    return invalid_argument("config.json: num_hidden_layers is " + std::to_string(config.num_hidden_layers) + " but " +
                            ckpt.source() + " has tensors for " + std::to_string(layers_present) + " layers");
  }
  CheckpointBinder binder(ckpt, pool);
  DecoderWeights weights;
  VLLM_RETURN_IF_ERROR(describe_weights(binder, config, variant, weights));
  return weights;
}

}  // namespace vllm
