// lora_adapter_dump MODEL_DIR ADAPTER_DIR MAX_LORA_RANK: loads the model,
// then the PEFT adapter for the modules the model offers adapters
// (Model::lora_targets), and prints as one JSON document the targets (name:
// [in, out, embedding]) and what load_peft_adapter read: rank, alpha,
// use_rslora, scaling and each module's rank and A and B values.  An adapter
// it refuses: its one-line error on stderr, exit status 1 (3 when not
// found).  check_peft_adapters.py compares it all with its own numpy writer.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "base/json.h"
#include "model/model.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: lora_adapter_dump MODEL_DIR ADAPTER_DIR MAX_LORA_RANK\n");
    return 2;
  }
  vllm::Result<std::unique_ptr<vllm::Model>> model = vllm::load_model(argv[1]);
  if (!model.is_ok()) {
    std::fprintf(stderr, "model: %s\n", model.status().message().c_str());
    return 2;
  }
  const vllm::LoraTargets targets = (*model)->lora_targets();
  vllm::Result<vllm::PeftAdapter> adapter =
      vllm::load_peft_adapter(argv[2], targets, std::atoll(argv[3]), vllm::lora_dtype((*model)->config()));
  if (!adapter.is_ok()) {
    std::fprintf(stderr, "%s\n", adapter.status().message().c_str());
    return adapter.status().code() == vllm::StatusCode::kNotFound ? 3 : 1;
  }
  vllm::Json out;
  for (const auto& [name, t] : targets) out["targets"][name] = {t.in_features, t.out_features, t.embedding};
  out["rank"] = adapter->rank;
  out["alpha"] = adapter->alpha;
  out["use_rslora"] = adapter->use_rslora;
  out["scaling"] = adapter->scaling;
  out["modules"] = vllm::Json::object();
  for (const auto& [name, m] : adapter->modules) out["modules"][name] = {{"rank", m.rank}, {"a", m.a}, {"b", m.b}};
  std::cout << out.dump() << "\n";
  return 0;
}
