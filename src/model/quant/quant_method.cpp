#include "model/quant/quant_method.h"

#include "base/file_util.h"
#include "base/json.h"
#include "model/quant/awq.h"
#include "model/quant/compressed_tensors.h"
#include "model/quant/dynamic_quantization.h"
#include "model/quant/fp8.h"
#include "model/quant/gptq.h"

namespace vllm {

namespace {

// The method the checkpoint's own settings name: null for none.
Result<std::unique_ptr<QuantMethod>> checkpoint_method(const ModelConfig& config, const std::string& model_dir) {
  Json quantization;
  std::string source = config.source;
  if (config.json.contains("quantization_config")) {
    quantization = config.json["quantization_config"];
  } else if (const std::string old = join_path(model_dir, "quantize_config.json"); file_exists(old)) {
    // Old AutoGPTQ checkpoints: the settings beside config.json, GPTQ implied.
    VLLM_ASSIGN_OR_RETURN(quantization, read_json_file(old));
    if (!quantization.contains("quant_method")) quantization["quant_method"] = "gptq";
    source = old;
  } else {
    return std::unique_ptr<QuantMethod>();
  }
  if (!quantization.is_object()) return invalid_argument(source + ": quantization_config must be an object");
  const ConfigReader r(quantization, source + " quantization_config");
  VLLM_ASSIGN_OR_RETURN(const std::string method, r.string("quant_method", ""));
  if (method == "gptq") return make_gptq_method(quantization, source);
  if (method == "awq") return make_awq_method(quantization, source);
  if (method == "compressed-tensors") return make_compressed_tensors_method(quantization, source);
  if (method == "fp8") return make_fp8_method(quantization, source);
  return unimplemented(source + ": quant_method '" + method +
                       "' is not supported (gptq, awq, compressed-tensors and fp8 are)");
}

}  // namespace

Result<std::unique_ptr<QuantMethod>> quant_method_for(const ModelConfig& config, const std::string& model_dir,
                                                      const std::string& requested) {
  VLLM_ASSIGN_OR_RETURN(std::unique_ptr<QuantMethod> method, checkpoint_method(config, model_dir));
  if (requested.empty() || requested == "none") return method;
  if (method) {
    if (requested == method->name()) return method;
    return invalid_argument("--quantization " + requested + " does not match " + config.source +
                            ", which is quantized with " + method->name());
  }
  if (std::unique_ptr<QuantMethod> dynamic = make_dynamic_method(requested)) return dynamic;
  return invalid_argument("--quantization " + requested + ": " + config.source +
                          " is not quantized (int8 and fp8 quantize an unquantized checkpoint as it loads)");
}

}  // namespace vllm
