#include "model/quant/gptq.h"

#include <map>
#include <optional>

#include "base/logging.h"

namespace vllm {
namespace {

// A checkpoint whose GPTQ layers are asked for as "<prefix>.weight".
class GptqSource : public WeightSource {
 public:
  GptqSource(const WeightSource& base, GptqConfig config) : base_(base), config_(config) {}

  bool has(const std::string& name) const override { return base_.has(name) || !quantized_prefix(name).empty(); }
  int64_t count_numbered(const std::string& prefix) const override { return base_.count_numbered(prefix); }
  const std::string& source() const override { return base_.source(); }

  Result<std::optional<kernels::GroupQuantized>> quantized(const std::string& name) const override {
    const std::string prefix = quantized_prefix(name);
    if (prefix.empty()) return std::optional<kernels::GroupQuantized>();
    VLLM_ASSIGN_OR_RETURN(kernels::GroupQuantized q, read_layer(prefix));
    return std::optional<kernels::GroupQuantized>(std::move(q));
  }

  // A quantized weight dequantized to F32 (for a layer that stacks it with
  // a dense one), kept while the source lives.
  Result<Tensor> get(const std::string& name) const override {
    const std::string prefix = quantized_prefix(name);
    if (prefix.empty()) return base_.get(name);
    auto [slot, fresh] = dequantized_.try_emplace(name);
    if (fresh) {
      VLLM_ASSIGN_OR_RETURN(const kernels::GroupQuantized q, read_layer(prefix));
      slot->second.shape = {q.rows, q.cols};
      slot->second.values.resize(static_cast<size_t>(q.rows * q.cols));
      q.dequantize_rows(0, q.rows, slot->second.values.data());
    }
    return Tensor{slot->second.values.data(), DType::kF32, slot->second.shape};
  }

 private:
  struct Dense {
    std::vector<int64_t> shape;
    std::vector<float> values;
  };

  // "<prefix>" of a "<prefix>.weight" the checkpoint holds as GPTQ tensors, else "".
  std::string quantized_prefix(const std::string& name) const {
    constexpr std::string_view kWeight = ".weight";
    if (!name.ends_with(kWeight) || base_.has(name)) return "";
    const std::string prefix = name.substr(0, name.size() - kWeight.size());
    return base_.has(prefix + ".qweight") ? prefix : "";
  }

  Result<Tensor> tensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape) const {
    Result<Tensor> t = base_.get(name);
    if (!t.is_ok()) return not_found(base_.source() + ": GPTQ layer lacks tensor '" + name + "'");
    if (t->dtype != dtype || t->shape != shape) {
      return invalid_argument(base_.source() + ": GPTQ tensor '" + name + "' is " + dtype_name(t->dtype) + " " +
                              shape_to_string(t->shape) + ", expected " + dtype_name(dtype) + " " +
                              shape_to_string(shape));
    }
    return t;
  }

  Result<kernels::GroupQuantized> read_layer(const std::string& prefix) const {
    const std::string where = base_.source() + ": GPTQ layer '" + prefix + "'";
    VLLM_ASSIGN_OR_RETURN(const Tensor packed, base_.get(prefix + ".qweight"));
    if (packed.dtype != DType::kI32 || packed.rank() != 2) {
      return invalid_argument(where + ": qweight must be a 2-D int32 tensor");
    }
    const int bits = config_.bits, per_word = 32 / bits;
    const int64_t k_total = packed.dim(0) * per_word, n = packed.dim(1);
    const int64_t group = config_.group_size > 0 ? config_.group_size : k_total;
    if (k_total % group != 0 || n % per_word != 0) {
      return invalid_argument(where + ": group_size " + std::to_string(group) + " does not divide its " +
                              std::to_string(k_total) + " inputs, or its " + std::to_string(n) +
                              " outputs are not whole words of zero points");
    }
    const int64_t groups = k_total / group;
    VLLM_ASSIGN_OR_RETURN(const Tensor scales, tensor(prefix + ".scales", DType::kF16, {groups, n}));
    VLLM_ASSIGN_OR_RETURN(const Tensor zeros, tensor(prefix + ".qzeros", DType::kI32, {groups, n / per_word}));
    if (base_.has(prefix + ".g_idx")) {
      VLLM_ASSIGN_OR_RETURN(const Tensor g_idx, tensor(prefix + ".g_idx", DType::kI32, {k_total}));
      for (int64_t k = 0; k < k_total; ++k) {
        if (g_idx.as<int32_t>()[k] != k / group) {
          return unimplemented(where + ": g_idx puts input " + std::to_string(k) + " in group " +
                               std::to_string(g_idx.as<int32_t>()[k]) +
                               " (act-order, desc_act); only inputs in order of their groups are supported yet");
        }
      }
    }
    const auto mask = static_cast<uint32_t>((1u << bits) - 1u);
    auto field = [&](const Tensor& t, int64_t row, int64_t index, int64_t row_words) {
      const auto word = static_cast<uint32_t>(t.as<int32_t>()[row * row_words + index / per_word]);
      return static_cast<int>((word >> (bits * (index % per_word))) & mask);
    };
    kernels::GroupQuantized q;
    q.rows = n, q.cols = k_total, q.group_size = group;
    q.codes.resize(static_cast<size_t>(n * k_total));
    q.scales.resize(static_cast<size_t>(n * groups));
    q.offsets.resize(q.scales.size());
    // Codes and zero points centred on the middle of their range, so that
    // 8-bit ones fit int8: scale * (code - zero) is the same.
    const int centre = 1 << (bits - 1);
    for (int64_t k = 0; k < k_total; ++k) {
      for (int64_t j = 0; j < n; ++j) {
        const auto word = static_cast<uint32_t>(packed.as<int32_t>()[(k / per_word) * n + j]);
        const auto code = static_cast<int>((word >> (bits * (k % per_word))) & mask);
        q.codes[static_cast<size_t>(j * k_total + k)] = static_cast<int8_t>(code - centre);
      }
    }
    const int minus_one = config_.zeros_minus_one ? 1 : 0;
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t j = 0; j < n; ++j) {
        const float scale = f16_to_f32(scales.as<uint16_t>()[g * n + j]);
        const int zero = field(zeros, g, j, n / per_word) + minus_one - centre;
        // scale * (code - zero) as fma(scale, code, -scale * zero): both products exact in FP32.
        q.scales[static_cast<size_t>(j * groups + g)] = scale;
        q.offsets[static_cast<size_t>(j * groups + g)] = -(scale * static_cast<float>(zero));
      }
    }
    return q;
  }

  const WeightSource& base_;
  GptqConfig config_;
  mutable std::map<std::string, Dense> dequantized_;
};

class GptqMethod : public QuantMethod {
 public:
  explicit GptqMethod(GptqConfig config) : config_(config) {}
  const char* name() const override { return "gptq"; }
  std::unique_ptr<WeightSource> wrap(const WeightSource& checkpoint) const override {
    return std::make_unique<GptqSource>(checkpoint, config_);
  }

 private:
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
  return std::unique_ptr<QuantMethod>(std::make_unique<GptqMethod>(c));
}

}  // namespace vllm
