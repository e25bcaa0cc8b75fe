#include "model/quant/fp8.h"

#include "model/model_config.h"
#include "model/quant/layer_source.h"

namespace vllm {
namespace {

struct Fp8Config {
  int64_t block_rows = 0, block_cols = 0;  // 0: one scale per tensor
};

class Fp8Source : public QuantizedLayerSource {
 public:
  Fp8Source(const WeightSource& base, Fp8Config config)
      : QuantizedLayerSource(base, config.block_rows > 0 ? ".weight_scale_inv" : ".weight_scale"), config_(config) {}

 private:
  Result<kernels::GroupQuantized> read_layer(const std::string& prefix) const override {
    if (config_.block_rows > 0) {
      return fp8_block_scaled_layer(prefix, ".weight_scale_inv", config_.block_rows, config_.block_cols);
    }
    return fp8_block_scaled_layer(prefix, ".weight_scale", 0, 0);
  }

  Fp8Config config_;
};

}  // namespace

Result<std::unique_ptr<QuantMethod>> make_fp8_method(const Json& quantization_config, const std::string& source) {
  const std::string where = source + " quantization_config";
  const ConfigReader r(quantization_config, where);
  VLLM_ASSIGN_OR_RETURN(const std::string scheme, r.string("activation_scheme", "dynamic"));
  if (scheme != "dynamic" && scheme != "static") {
    return unimplemented(where + ": FP8 activation_scheme '" + scheme + "' is not supported (dynamic, static are)");
  }
  VLLM_ASSIGN_OR_RETURN(const std::string fmt, r.string("fmt", "e4m3"));
  if (fmt != "e4m3") return unimplemented(where + ": FP8 fmt '" + fmt + "' is not supported (e4m3 is)");
  Fp8Config c;
  if (r.present("weight_block_size")) {
    const Json& block = quantization_config["weight_block_size"];
    if (!block.is_array() || block.size() != 2 || !block[0].is_number_integer() || !block[1].is_number_integer() ||
        block[0].get<int64_t>() <= 0 || block[1].get<int64_t>() <= 0) {
      return invalid_argument(where + ": weight_block_size must be two positive integers");
    }
    c.block_rows = block[0].get<int64_t>();
    c.block_cols = block[1].get<int64_t>();
  }
  return std::unique_ptr<QuantMethod>(std::make_unique<LayerSourceMethod<Fp8Source, Fp8Config>>("fp8", c));
}

}  // namespace vllm
