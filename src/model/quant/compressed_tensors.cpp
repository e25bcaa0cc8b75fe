#include "model/quant/compressed_tensors.h"

#include <cmath>
#include <optional>
#include <vector>

#include "base/regex.h"
#include "model/model_config.h"
#include "model/quant/layer_source.h"

namespace vllm {
namespace {

// A target or ignore entry: "Linear" (every linear layer: only they are
// asked for here), "re:" and a pattern matched from the name's start (as
// Python's re.match), or a layer's name.
struct LayerPattern {
  std::string text;
  std::optional<Regex> pattern;  // anchored at the start

  bool names(const std::string& prefix) const {
    if (pattern) return !pattern->find_all(prefix).empty();
    return text == "Linear" || text == prefix;
  }
};

// One config group: how the layers it targets are stored and computed.
struct Scheme {
  std::vector<LayerPattern> targets;
  bool packed = false;  // pack-quantized, else int-quantized (or float-quantized)
  bool fp8 = false;     // float-quantized: FP8 weights, scaled per tensor, channel or block
  int64_t block_rows = 0, block_cols = 0;
  int bits = 8;
  bool symmetric = true;
  int64_t group_size = 0;          // 0: one group a row (strategy "channel" or "tensor")
  bool per_tensor_scale = false;   // int-quantized strategy "tensor"
  bool group_order = false;        // actorder "group": weight_g_idx
  bool int8_inputs = false;        // input_activations given (int-quantized)
  bool static_inputs = false;      // ... with a static per-tensor input_scale
  bool asymmetric_inputs = false;  // ... with zero points (input_zero_point if static)
};

struct CompressedTensorsConfig {
  std::vector<Scheme> schemes;
  std::vector<LayerPattern> ignore;
};

class CompressedTensorsSource : public QuantizedLayerSource {
 public:
  CompressedTensorsSource(const WeightSource& base, CompressedTensorsConfig config)
      : QuantizedLayerSource(base, ".weight_scale"), config_(std::move(config)) {}

 private:
  Result<kernels::GroupQuantized> read_layer(const std::string& prefix) const override {
    const std::string where = base_.source() + ": compressed-tensors layer '" + prefix + "'";
    for (const LayerPattern& p : config_.ignore) {
      if (p.names(prefix)) return invalid_argument(where + " is quantized but quantization_config ignores it");
    }
    for (const Scheme& s : config_.schemes) {
      for (const LayerPattern& p : s.targets) {
        if (p.names(prefix)) {
          if (s.fp8) return read_fp8(prefix, s);
          return s.packed ? read_packed(prefix, s, where) : read_int8(prefix, s, where);
        }
      }
    }
    return invalid_argument(where + " is quantized but no config group targets it");
  }

  // float-quantized: <prefix>.weight F8_E4M3 [N, K] and <prefix>.weight_scale
  // [1] (tensor), [N, 1] (channel) or [ceil(N / rows), K / cols] (block).
  Result<kernels::GroupQuantized> read_fp8(const std::string& prefix, const Scheme& s) const {
    if (s.per_tensor_scale) return fp8_block_scaled_layer(prefix, ".weight_scale", 0, 0);
    if (s.block_rows > 0) return fp8_block_scaled_layer(prefix, ".weight_scale", s.block_rows, s.block_cols);
    return fp8_block_scaled_layer(prefix, ".weight_scale", 1, 0);
  }

  Result<kernels::GroupQuantized> read_int8(const std::string& prefix, const Scheme& s,
                                            const std::string& where) const {
    VLLM_ASSIGN_OR_RETURN(const Tensor weight, base_.get(prefix + ".weight"));
    if (weight.dtype != DType::kI8 || weight.rank() != 2) {
      return invalid_argument(where + ": weight must be a 2-D int8 tensor, found " + dtype_name(weight.dtype) + " " +
                              shape_to_string(weight.shape));
    }
    const int64_t n = weight.dim(0), k_total = weight.dim(1);
    std::vector<float> scales;
    if (s.per_tensor_scale) {
      VLLM_ASSIGN_OR_RETURN(const float scale, layer_scalar(prefix + ".weight_scale"));
      scales.assign(static_cast<size_t>(n), scale);
    } else {
      VLLM_ASSIGN_OR_RETURN(scales, layer_floats(prefix + ".weight_scale", {n, 1}));
    }
    kernels::GroupQuantized q;
    q.rows = n, q.cols = k_total, q.group_size = k_total;
    q.codes.assign(weight.as<int8_t>(), weight.as<int8_t>() + n * k_total);
    q.scales = std::move(scales);
    q.int8_activations = s.int8_inputs;
    if (s.static_inputs) {
      VLLM_ASSIGN_OR_RETURN(const float input_scale, layer_scalar(prefix + ".input_scale"));
      if (!(input_scale > 0.0f) || std::isinf(input_scale)) {
        return invalid_argument(where + ": input_scale " + std::to_string(input_scale) + " is not a positive number");
      }
      q.activation_scale = input_scale;
    }
    q.asymmetric_activations = s.asymmetric_inputs;
    if (s.static_inputs && s.asymmetric_inputs) {
      VLLM_ASSIGN_OR_RETURN(const int64_t zero_point, layer_integer(prefix + ".input_zero_point"));
      if (zero_point < -128 || zero_point > 127) {
        return invalid_argument(where + ": input_zero_point " + std::to_string(zero_point) + " is not an int8");
      }
      q.activation_zero_point = static_cast<int32_t>(zero_point);
    }
    return q;
  }

  Result<kernels::GroupQuantized> read_packed(const std::string& prefix, const Scheme& s,
                                              const std::string& where) const {
    const int bits = s.bits, per_word = 32 / bits;
    VLLM_ASSIGN_OR_RETURN(const Tensor packed, base_.get(prefix + ".weight_packed"));
    if (packed.dtype != DType::kI32 || packed.rank() != 2) {
      return invalid_argument(where + ": weight_packed must be a 2-D int32 tensor");
    }
    const int64_t n = packed.dim(0), words = packed.dim(1);
    VLLM_ASSIGN_OR_RETURN(const Tensor shape, layer_tensor(prefix + ".weight_shape", DType::kI64, {2}));
    const int64_t k_total = shape.as<int64_t>()[1];
    if (shape.as<int64_t>()[0] != n || k_total <= 0 || k_total % per_word != 0 || k_total / per_word != words) {
      return invalid_argument(where + ": weight_shape (" + std::to_string(shape.as<int64_t>()[0]) + ", " +
                              std::to_string(k_total) + ") does not match weight_packed " +
                              shape_to_string(packed.shape) + " of " + std::to_string(bits) + "-bit codes");
    }
    const int64_t group = s.group_size > 0 ? s.group_size : k_total;
    if (k_total % group != 0) {
      return invalid_argument(where + ": group_size " + std::to_string(group) + " does not divide its " +
                              std::to_string(k_total) + " inputs");
    }
    const int64_t groups = k_total / group;
    VLLM_ASSIGN_OR_RETURN(const std::vector<float> scales, layer_floats(prefix + ".weight_scale", {n, groups}));
    Tensor zeros;
    if (!s.symmetric) {
      VLLM_ASSIGN_OR_RETURN(
          zeros, layer_tensor(prefix + ".weight_zero_point", DType::kI32, {(n + per_word - 1) / per_word, groups}));
    }
    std::vector<int32_t> order;
    if (s.group_order && base_.has(prefix + ".weight_g_idx")) {
      VLLM_ASSIGN_OR_RETURN(const Tensor g_idx, layer_tensor(prefix + ".weight_g_idx", DType::kI32, {k_total}));
      VLLM_ASSIGN_OR_RETURN(order, group_order(g_idx.as<int32_t>(), k_total, group, where));
    }
    const auto* codes = packed.as<int32_t>();
    const int centre = 1 << (bits - 1);
    auto input = [&](int64_t column) { return order.empty() ? column : int64_t{order[static_cast<size_t>(column)]}; };
    kernels::GroupQuantized q = group_form(
        k_total, n, group, bits,
        [&](int64_t column, int64_t j) {
          const int64_t k = input(column);
          return packed_field(codes, bits, j * words + k / per_word, static_cast<int>(k % per_word));
        },
        [&](int64_t g, int64_t j) {
          if (s.symmetric) return centre;
          return packed_field(zeros.as<int32_t>(), bits, j / per_word * groups + g, static_cast<int>(j % per_word));
        },
        [&](int64_t g, int64_t j) { return scales[static_cast<size_t>(j * groups + g)]; });
    // Symmetric: every offset is zero, and fma(scale, code, 0) = scale * code.
    if (s.symmetric) q.offsets.clear();
    q.input_order = std::move(order);
    return q;
  }

  CompressedTensorsConfig config_;
};

Result<std::vector<LayerPattern>> layer_patterns(const ConfigReader& r, const std::string& key,
                                                 const std::string& where) {
  VLLM_ASSIGN_OR_RETURN(const std::vector<std::string> texts, r.string_list(key));
  std::vector<LayerPattern> out;
  for (const std::string& text : texts) {
    LayerPattern p{text, std::nullopt};
    if (text.starts_with("re:")) {
      Result<Regex> pattern = Regex::compile("^(?:" + text.substr(3) + ")");
      if (!pattern.is_ok()) {
        return invalid_argument(where + ": " + key + " pattern '" + text + "': " + pattern.status().message());
      }
      p.pattern = std::move(*pattern);
    }
    out.push_back(std::move(p));
  }
  return out;
}

// A config group's settings, or an error naming the first we cannot honour.
Result<Scheme> parse_scheme(const std::string& group, const Json& json, const std::string& global_format,
                            const std::string& source) {
  const std::string where = source + ": compressed-tensors config group '" + group + "'";
  if (!json.is_object()) return invalid_argument(where + " must be an object");
  const ConfigReader r(json, where);
  Scheme s;
  VLLM_ASSIGN_OR_RETURN(s.targets, layer_patterns(r, "targets", where));
  if (s.targets.empty()) return invalid_argument(where + " has no targets");
  VLLM_ASSIGN_OR_RETURN(const std::string format, r.string("format", global_format));
  if (format != "int-quantized" && format != "pack-quantized" && format != "float-quantized") {
    return unimplemented(where + ": format '" + format +
                         "' is not supported (int-quantized, pack-quantized and float-quantized are)");
  }
  s.packed = format == "pack-quantized";
  s.fp8 = format == "float-quantized";
  if (r.present("output_activations")) return unimplemented(where + ": output_activations are not supported");
  if (!r.present("weights") || !json["weights"].is_object()) return invalid_argument(where + " has no weights");
  const ConfigReader w(json["weights"], where + " weights");
  VLLM_ASSIGN_OR_RETURN(const std::string type, w.string("type", "int"));
  if (type != (s.fp8 ? "float" : "int")) {
    return unimplemented(where + ": " + format + " weights of type '" + type + "' are not supported");
  }
  VLLM_ASSIGN_OR_RETURN(const int64_t bits, w.integer("num_bits", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(s.symmetric, w.boolean("symmetric", true));
  VLLM_ASSIGN_OR_RETURN(const std::string strategy, w.string("strategy", ""));
  VLLM_ASSIGN_OR_RETURN(const bool dynamic, w.boolean("dynamic", false));
  VLLM_ASSIGN_OR_RETURN(const std::string actorder, w.string("actorder", ""));
  if (dynamic) return unimplemented(where + ": dynamic weights are not supported");
  if (w.present("block_structure") && !(s.fp8 && strategy == "block")) {
    return unimplemented(where + ": block-wise weight scales are only supported for FP8 weights");
  }
  if (actorder != "" && actorder != "static" && actorder != "weight" && actorder != "group") {
    return unimplemented(where + ": weights actorder '" + actorder + "' is not supported");
  }
  s.group_order = actorder == "group";
  if (strategy == "group") {
    VLLM_ASSIGN_OR_RETURN(s.group_size, w.positive_integer("group_size", std::nullopt));
  } else if (strategy == "tensor") {
    s.per_tensor_scale = true;
  } else if (strategy == "block" && s.fp8) {
    const Json& block = json["weights"]["block_structure"];
    if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() || !block[1].is_number_integer() ||
        block[0].get<int64_t>() <= 0 || block[1].get<int64_t>() <= 0) {
      return invalid_argument(where + ": weights block_structure must be two positive integers");
    }
    s.block_rows = block[0].get<int64_t>();
    s.block_cols = block[1].get<int64_t>();
  } else if (strategy != "channel") {
    return unimplemented(where + ": weights strategy '" + strategy +
                         "' is not supported (tensor, channel, group; block for FP8)");
  }
  if (s.fp8) {
    // FP8 weights are widened in registers and the activations stay FP32,
    // as vLLM runs FP8 checkpoints where the hardware has no FP8 products
    // (its W8A16 fallback): input_activations, given or not, change nothing.
    if (bits != 8 || !s.symmetric)
      return unimplemented(where + ": float-quantized weights must be 8-bit and symmetric");
    s.bits = 8;
    return s;
  }
  if (s.packed) {
    if (bits != 4 && bits != 8) {
      return unimplemented(where + ": pack-quantized num_bits " + std::to_string(bits) +
                           " is not supported (4, 8 are)");
    }
    if (s.per_tensor_scale) return unimplemented(where + ": pack-quantized weights with a per-tensor scale");
  } else {
    // As vLLM: int8 weights are symmetric, one scale a row or a tensor.
    if (bits < 2 || bits > 8) return unimplemented(where + ": int-quantized num_bits " + std::to_string(bits));
    if (!s.symmetric) return unimplemented(where + ": asymmetric int-quantized weights are not supported");
    if (s.group_size > 0) return unimplemented(where + ": group-wise int-quantized weights are not supported");
  }
  s.bits = static_cast<int>(bits);
  if (!r.present("input_activations")) return s;
  if (s.packed) return unimplemented(where + ": pack-quantized weights with quantized input_activations");
  const ConfigReader a(json["input_activations"], where + " input_activations");
  VLLM_ASSIGN_OR_RETURN(const std::string input_type, a.string("type", "int"));
  VLLM_ASSIGN_OR_RETURN(const int64_t input_bits, a.integer("num_bits", std::nullopt));
  VLLM_ASSIGN_OR_RETURN(const bool input_symmetric, a.boolean("symmetric", true));
  VLLM_ASSIGN_OR_RETURN(const std::string input_strategy, a.string("strategy", ""));
  VLLM_ASSIGN_OR_RETURN(const bool input_dynamic, a.boolean("dynamic", false));
  if (input_type != "int" || input_bits != 8) {
    return unimplemented(where + ": input_activations other than 8-bit int are not supported");
  }
  if (!(input_strategy == "token" && input_dynamic) && !(input_strategy == "tensor" && !input_dynamic)) {
    return unimplemented(where + ": input_activations must be dynamic per token or static per tensor, not " +
                         (input_dynamic ? "dynamic " : "static ") + "strategy '" + input_strategy + "'");
  }
  s.int8_inputs = true;
  s.static_inputs = !input_dynamic;
  s.asymmetric_inputs = !input_symmetric;
  return s;
}

// A kv_cache_scheme is the FP8 KV cache's k_scale / v_scale tensors
// (model/layers/kv_cache_scales.h), used with --kv-cache-dtype fp8; vLLM
// takes only 8-bit floats, symmetric, one scale a tensor, and so do we.
Status check_kv_cache_scheme(const Json& quantization_config, const std::string& where) {
  if (!quantization_config.contains("kv_cache_scheme") || quantization_config["kv_cache_scheme"].is_null()) {
    return Status::ok();
  }
  const std::string here = where + " kv_cache_scheme";
  if (!quantization_config["kv_cache_scheme"].is_object()) return invalid_argument(here + " must be an object");
  const ConfigReader r(quantization_config["kv_cache_scheme"], here);
  VLLM_ASSIGN_OR_RETURN(const std::string type, r.string("type", "int"));
  VLLM_ASSIGN_OR_RETURN(const int64_t bits, r.integer("num_bits", 8));
  VLLM_ASSIGN_OR_RETURN(const std::string strategy, r.string("strategy", "tensor"));
  VLLM_ASSIGN_OR_RETURN(const bool symmetric, r.boolean("symmetric", true));
  VLLM_ASSIGN_OR_RETURN(const bool dynamic, r.boolean("dynamic", false));
  if (type != "float" || bits != 8) {
    return unimplemented(here + ": only num_bits 8 of type float (FP8) is supported, not num_bits " +
                         std::to_string(bits) + " of type '" + type + "'");
  }
  if (strategy != "tensor")
    return unimplemented(here + ": only strategy 'tensor' is supported, not '" + strategy + "'");
  if (!symmetric) return unimplemented(here + ": only symmetric scales are supported");
  if (dynamic) return unimplemented(here + ": dynamic KV cache scales are not supported");
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<QuantMethod>> make_compressed_tensors_method(const Json& quantization_config,
                                                                    const std::string& source) {
  const std::string where = source + " quantization_config";
  const ConfigReader r(quantization_config, where);
  // What would change the numbers and we do not do: refused, not ignored.
  VLLM_RETURN_IF_ERROR(check_kv_cache_scheme(quantization_config, where));
  for (const char* key : {"sparsity_config", "transform_config"}) {
    if (r.present(key) && !quantization_config[key].empty()) {
      return unimplemented(where + ": compressed-tensors " + key + " is not supported");
    }
  }
  VLLM_ASSIGN_OR_RETURN(const std::string global_format, r.string("format", ""));
  if (!r.present("config_groups") || !quantization_config["config_groups"].is_object() ||
      quantization_config["config_groups"].empty()) {
    return invalid_argument(where + ": compressed-tensors needs config_groups");
  }
  CompressedTensorsConfig config;
  for (const auto& [group, json] : quantization_config["config_groups"].items()) {
    VLLM_ASSIGN_OR_RETURN(Scheme s, parse_scheme(group, json, global_format, source));
    config.schemes.push_back(std::move(s));
  }
  VLLM_ASSIGN_OR_RETURN(config.ignore, layer_patterns(r, "ignore", where));
  return std::unique_ptr<QuantMethod>(
      std::make_unique<LayerSourceMethod<CompressedTensorsSource, CompressedTensorsConfig>>("compressed-tensors",
                                                                                            std::move(config)));
}

}  // namespace vllm
