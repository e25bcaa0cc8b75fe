// Test helper: prints the logits of every position of a token sequence, as
// computed by the engine in prefill chunks, for the numpy reference check.
// Usage: dump_logits [--lora=ADAPTER_DIR] MODEL_DIR CHUNK_TOKENS OUT_FILE [CPU_ISA [float32|bfloat16|fp8]] < ids
// (whitespace-separated).  The last argument is the KV cache's dtype
// (default float32); --lora: every token computes with that PEFT adapter.
// OUT_FILE receives float32 [num_tokens, vocab_size], little-endian.
// Exit 77 when this CPU cannot run CPU_ISA.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/runner/prompt_scorer.h"
#include "kernels/kernels.h"
#include "model/model.h"

int main(int argc, char** argv) {
  std::string lora_dir;
  if (argc > 1 && std::string(argv[1]).starts_with("--lora=")) {
    lora_dir = std::string(argv[1]).substr(7);
    --argc;
    ++argv;
  }
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: dump_logits MODEL_DIR CHUNK_TOKENS OUT_FILE [CPU_ISA [float32|bfloat16|fp8]] < ids\n");
    return 2;
  }
  const std::string kv_name = argc == 6 ? argv[5] : "float32";
  const vllm::DType kv_dtype = kv_name == "bfloat16" ? vllm::DType::kBF16
                               : kv_name == "fp8"    ? vllm::DType::kF8E4M3
                                                     : vllm::DType::kF32;
  if (argc >= 5) {
    const vllm::Status forced = vllm::kernels::force_cpu_isa(argv[4]);
    if (!forced.is_ok()) {
      std::fprintf(stderr, "%s\n", forced.message().c_str());
      return 77;
    }
  }
  vllm::Result<std::unique_ptr<vllm::Model>> model = vllm::load_model(argv[1]);
  if (!model.is_ok()) {
    std::fprintf(stderr, "error: %s\n", model.status().message().c_str());
    return 1;
  }
  std::vector<int32_t> ids;
  for (int32_t id; std::cin >> id;) ids.push_back(id);
  vllm::ThreadPool pool(2);
  if (!lora_dir.empty()) {
    vllm::Result<vllm::PeftAdapter> adapter =
        vllm::load_peft_adapter(lora_dir, (*model)->lora_targets(), 64, vllm::lora_dtype((*model)->config()));
    vllm::Status installed = adapter.is_ok() ? (*model)->set_lora(0, &*adapter) : adapter.status();
    if (!installed.is_ok()) {
      std::fprintf(stderr, "error: %s\n", installed.message().c_str());
      return 1;
    }
  }
  vllm::Result<std::vector<float>> logits =
      vllm::score_all_positions(**model, pool, ids, std::stoi(argv[2]), 16, kv_dtype, {}, lora_dir.empty() ? -1 : 0);
  if (!logits.is_ok()) {
    std::fprintf(stderr, "error: %s\n", logits.status().message().c_str());
    return 1;
  }
  FILE* out = std::fopen(argv[3], "wb");
  if (out == nullptr || std::fwrite(logits->data(), sizeof(float), logits->size(), out) != logits->size()) {
    std::fprintf(stderr, "error: cannot write %s\n", argv[3]);
    return 1;
  }
  std::fclose(out);
  return 0;
}
