#include "model/quant/gptq.h"

#include "base/logging.h"
#include "model/quant/layer_source.h"

namespace vllm {
namespace {

// A checkpoint whose GPTQ layers are asked for as "<prefix>.weight".
class GptqSource : public QuantizedLayerSource {
 public:
  GptqSource(const WeightSource& base, GptqConfig config) : QuantizedLayerSource(base, ".qweight"), config_(config) {}

 private:
  Result<kernels::GroupQuantized> read_layer(const std::string& prefix) const override {
    const std::string where = base_.source() + ": GPTQ layer '" + prefix + "'";
    VLLM_ASSIGN_OR_RETURN(const Tensor packed, packed_codes(prefix, where));
    const int bits = config_.bits, per_word = 32 / bits;
    const int64_t k_total = packed.dim(0) * per_word, n = packed.dim(1);
    const int64_t group = config_.group_size > 0 ? config_.group_size : k_total;
    if (k_total % group != 0 || n % per_word != 0) {
      return invalid_argument(where + ": group_size " + std::to_string(group) + " does not divide its " +
                              std::to_string(k_total) + " inputs, or its " + std::to_string(n) +
                              " outputs are not whole words of zero points");
    }
    const int64_t groups = k_total / group;
    VLLM_ASSIGN_OR_RETURN(const Tensor scales, layer_tensor(prefix + ".scales", DType::kF16, {groups, n}));
    VLLM_ASSIGN_OR_RETURN(const Tensor zeros, layer_tensor(prefix + ".qzeros", DType::kI32, {groups, n / per_word}));
    // As vLLM: g_idx counts only with desc_act (act-order), where each group
    // is scattered over the inputs; the columns are then put in the order
    // of their groups (stably), and the kernels gather the inputs so.
    std::vector<int32_t> order;
    if (config_.desc_act && base_.has(prefix + ".g_idx")) {
      VLLM_ASSIGN_OR_RETURN(const Tensor g_idx, layer_tensor(prefix + ".g_idx", DType::kI32, {k_total}));
      VLLM_ASSIGN_OR_RETURN(order, group_order(g_idx.as<int32_t>(), k_total, group, where));
    }
    const int plus_one = config_.zeros_minus_one ? 1 : 0;
    const auto* codes = packed.as<int32_t>();
    const auto* zero_words = zeros.as<int32_t>();
    const auto* scale_values = scales.as<uint16_t>();
    auto input = [&](int64_t column) { return order.empty() ? column : int64_t{order[static_cast<size_t>(column)]}; };
    kernels::GroupQuantized q = group_form(
        k_total, n, group, bits,
        [&](int64_t column, int64_t j) {
          const int64_t k = input(column);
          return packed_field(codes, bits, k / per_word * n + j, static_cast<int>(k % per_word));
        },
        [&](int64_t g, int64_t j) {
          return packed_field(zero_words, bits, g * (n / per_word) + j / per_word, static_cast<int>(j % per_word)) +
                 plus_one;
        },
        [&](int64_t g, int64_t j) { return f16_to_f32(scale_values[g * n + j]); });
    q.input_order = std::move(order);
    return q;
  }

  GptqConfig config_;
};

}  // namespace

Result<std::unique_ptr<QuantMethod>> make_gptq_method(const Json& quantization_config, const std::string& source) {
  const ConfigReader r(quantization_config, source + " quantization_config");
  GptqConfig c;
  VLLM_ASSIGN_OR_RETURN(const int64_t bits, r.integer("bits", std::nullopt));
  if (bits != 2 && bits != 4 && bits != 8) {
    return unimplemented(source + ": GPTQ bits " + std::to_string(bits) + " is not supported (2, 4 and 8 are)");
  }
  c.bits = static_cast<int>(bits);
  VLLM_ASSIGN_OR_RETURN(c.group_size, r.integer("group_size", 128));
  if (c.group_size == 0 || c.group_size < -1) {
    return invalid_argument(source + ": GPTQ group_size " + std::to_string(c.group_size) + " must be positive or -1");
  }
  VLLM_ASSIGN_OR_RETURN(c.desc_act, r.boolean("desc_act", false));
  VLLM_ASSIGN_OR_RETURN(const std::string format, r.string("checkpoint_format", "gptq"));
  if (format != "gptq" && format != "gptq_v2") {
    return unimplemented(source + ": GPTQ checkpoint_format '" + format + "' is not supported (gptq, gptq_v2 are)");
  }
  c.zeros_minus_one = format == "gptq";
  return std::unique_ptr<QuantMethod>(std::make_unique<LayerSourceMethod<GptqSource, GptqConfig>>("gptq", c));
}

}  // namespace vllm
