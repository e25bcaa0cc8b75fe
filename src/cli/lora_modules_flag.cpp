#include "cli/lora_modules_flag.h"

#include "base/json.h"

namespace vllm::cli {
namespace {

Result<LoraModule> parse_json_module(const std::string& value) {
  Result<Json> json = parse_json(value, "--lora-modules");
  if (!json.is_ok()) return invalid_argument("Invalid JSON format for --lora-modules: " + value);
  const auto invalid_fields = [&](const std::string& why) {
    return invalid_argument("Invalid fields for --lora-modules: " + value + " - " + why);
  };
  if (!json->is_object()) return invalid_fields("not a JSON object");
  LoraModule module;
  for (const auto& [key, v] : json->items()) {
    std::string* field = key == "name"              ? &module.name
                         : key == "path"            ? &module.path
                         : key == "base_model_name" ? &module.base_model_name
                                                    : nullptr;
    if (field == nullptr) return invalid_fields("unexpected field '" + key + "'");
    if (key == "base_model_name" && v.is_null()) continue;
    if (!v.is_string()) return invalid_fields("'" + key + "' must be a string");
    *field = v.get<std::string>();
  }
  if (!json->contains("name") || !json->contains("path")) return invalid_fields("'name' and 'path' are required");
  return module;
}

}  // namespace

Result<std::vector<LoraModule>> parse_lora_modules(const std::vector<std::string>& values) {
  std::vector<LoraModule> modules;
  for (const std::string& value : values) {
    if (value.empty()) continue;
    const size_t equals = value.find('=');
    // vLLM's rule: a value with '=' and no ',' is NAME=PATH, anything else JSON.
    if (equals != std::string::npos && value.find(',') == std::string::npos) {
      if (value.find('=', equals + 1) != std::string::npos || equals == 0 || equals + 1 == value.size()) {
        return invalid_argument("Invalid format for --lora-modules: " + value + " (NAME=PATH)");
      }
      modules.push_back(LoraModule{value.substr(0, equals), value.substr(equals + 1), ""});
    } else {
      VLLM_ASSIGN_OR_RETURN(LoraModule module, parse_json_module(value));
      modules.push_back(std::move(module));
    }
  }
  return modules;
}

}  // namespace vllm::cli
