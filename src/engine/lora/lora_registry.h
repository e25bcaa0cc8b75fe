// The adapters an engine serves, by name (vLLM's serving models' LoRA map
// and its CPU adapter cache in one): each is read and checked when it is
// added, so a bad adapter is refused at once with the reader's one line;
// at most max_cpu_loras stay loaded, the least recently used ones are read
// again from their directory when next asked for.  Removing a name only
// stops new requests: a request holds its adapter until it finishes.
// Thread-safe: the server's input workers look names up while its
// endpoints add and remove them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/lora/lora_adapter.h"
#include "engine/lora/lora_module.h"

namespace vllm {

class LoraRegistry {
 public:
  // `targets`: the base model's (Model::lora_targets()); adapters compute in `dtype` (lora_dtype()).
  LoraRegistry(LoraTargets targets, DType dtype, const LoraConfig& config);

  // Reads and checks the adapter; refused when the name is taken (vLLM's
  // message) unless `replace` (vLLM's load_inplace: later requests get the
  // new adapter, running ones keep theirs), or with the reader's error
  // (kNotFound for a directory that holds no adapter).
  Status add(const LoraModule& module, bool replace = false);
  // kNotFound for an unknown name (vLLM's message).
  Status remove(const std::string& name);
  // The adapter of `name`, read again if it was dropped from memory; kNotFound if no adapter has the name.
  Result<std::shared_ptr<const LoraAdapter>> find(const std::string& name);
  // In the order they were added.
  std::vector<LoraModule> modules() const;

 private:
  struct Entry {
    LoraModule module;
    int64_t id = 0;
    std::shared_ptr<const LoraAdapter> loaded;  // null once dropped from memory
    uint64_t last_use = 0;
  };

  Result<std::shared_ptr<const LoraAdapter>> load(const LoraModule& module, int64_t id) const;
  // Drops the least recently used adapters from memory, beyond max_cpu_loras.
  void evict_beyond_capacity();
  Entry* entry(const std::string& name);

  const LoraTargets targets_;
  const DType dtype_;
  const int32_t max_lora_rank_;
  const int32_t max_cpu_loras_;
  mutable std::mutex mutex_;  // guards everything below
  std::vector<Entry> entries_;
  int64_t next_id_ = 1;
  uint64_t uses_ = 0;
};

}  // namespace vllm
