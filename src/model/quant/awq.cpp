#include "model/quant/awq.h"

#include <cctype>

#include "base/logging.h"
#include "model/quant/layer_source.h"

namespace vllm {
namespace {

constexpr int kBits = 4, kPerWord = 8;
// The nibble of a word that holds output 8c + j (AutoAWQ packs output
// 8c + {0, 2, 4, 6, 1, 3, 5, 7}[i] into nibble i).
constexpr int kNibbleOfOutput[kPerWord] = {0, 4, 1, 5, 2, 6, 3, 7};

class AwqSource : public QuantizedLayerSource {
 public:
  AwqSource(const WeightSource& base, int64_t group_size)
      : QuantizedLayerSource(base, ".qweight"), group_size_(group_size) {}

 private:
  Result<kernels::GroupQuantized> read_layer(const std::string& prefix) const override {
    const std::string where = base_.source() + ": AWQ layer '" + prefix + "'";
    VLLM_ASSIGN_OR_RETURN(const Tensor packed, packed_codes(prefix, where));
    const int64_t k_total = packed.dim(0), words = packed.dim(1), n = words * kPerWord;
    const int64_t group = group_size_ > 0 ? group_size_ : k_total;
    if (k_total % group != 0) {
      return invalid_argument(where + ": group_size " + std::to_string(group) + " does not divide its " +
                              std::to_string(k_total) + " inputs");
    }
    const int64_t groups = k_total / group;
    VLLM_ASSIGN_OR_RETURN(const Tensor scales, layer_tensor(prefix + ".scales", DType::kF16, {groups, n}));
    VLLM_ASSIGN_OR_RETURN(const Tensor zeros, layer_tensor(prefix + ".qzeros", DType::kI32, {groups, words}));
    const auto* codes = packed.as<int32_t>();
    const auto* zero_words = zeros.as<int32_t>();
    const auto* scale_values = scales.as<uint16_t>();
    auto field = [&](const int32_t* rows, int64_t row, int64_t j) {
      return packed_field(rows, kBits, row * words + j / kPerWord, kNibbleOfOutput[j % kPerWord]);
    };
    return group_form(
        k_total, n, group, kBits, [&](int64_t k, int64_t j) { return field(codes, k, j); },
        [&](int64_t g, int64_t j) { return field(zero_words, g, j); },
        [&](int64_t g, int64_t j) { return f16_to_f32(scale_values[g * n + j]); });
  }

  int64_t group_size_;
};

}  // namespace

Result<std::unique_ptr<QuantMethod>> make_awq_method(const Json& quantization_config, const std::string& source) {
  const ConfigReader r(quantization_config, source + " quantization_config");
  // AutoAWQ's own names (w_bit, q_group_size) or transformers' (bits, group_size).
  VLLM_ASSIGN_OR_RETURN(const int64_t w_bit, r.integer("w_bit", 4));
  VLLM_ASSIGN_OR_RETURN(const int64_t bits, r.integer("bits", w_bit));
  if (bits != kBits) return unimplemented(source + ": AWQ bits " + std::to_string(bits) + " is not supported (4 is)");
  VLLM_ASSIGN_OR_RETURN(const int64_t q_group_size, r.integer("q_group_size", 128));
  VLLM_ASSIGN_OR_RETURN(const int64_t group_size, r.integer("group_size", q_group_size));
  if (group_size == 0 || group_size < -1) {
    return invalid_argument(source + ": AWQ group_size " + std::to_string(group_size) + " must be positive or -1");
  }
  VLLM_ASSIGN_OR_RETURN(const bool zero_point, r.boolean("zero_point", true));
  if (!zero_point) return unimplemented(source + ": AWQ without zero points (zero_point false) is not supported");
  VLLM_ASSIGN_OR_RETURN(std::string version, r.string("version", "gemm"));
  for (char& ch : version) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (version != "gemm") {
    return unimplemented(source + ": AWQ version '" + version + "' is not supported (gemm is)");
  }
  return std::unique_ptr<QuantMethod>(std::make_unique<LayerSourceMethod<AwqSource, int64_t>>("awq", group_size));
}

}  // namespace vllm
