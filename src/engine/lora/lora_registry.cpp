#include "engine/lora/lora_registry.h"

#include <algorithm>

namespace vllm {

LoraRegistry::LoraRegistry(LoraTargets targets, DType dtype, const LoraConfig& config)
    : targets_(std::move(targets)),
      dtype_(dtype),
      max_lora_rank_(config.max_lora_rank),
      max_cpu_loras_(config.max_cpu_loras > 0 ? config.max_cpu_loras : config.max_loras) {}

Result<std::shared_ptr<const LoraAdapter>> LoraRegistry::load(const LoraModule& module, int64_t id) const {
  VLLM_ASSIGN_OR_RETURN(PeftAdapter weights, load_peft_adapter(module.path, targets_, max_lora_rank_, dtype_));
  return std::make_shared<const LoraAdapter>(LoraAdapter{id, module.name, std::move(weights)});
}

LoraRegistry::Entry* LoraRegistry::entry(const std::string& name) {
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.module.name == name; });
  return it == entries_.end() ? nullptr : &*it;
}

Status LoraRegistry::add(const LoraModule& module, bool replace) {
  const auto taken = [&] {
    return invalid_argument("The lora adapter '" + module.name +
                            "' has already been loaded. If you want to load the adapter in place, set "
                            "'load_inplace' to True.");
  };
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (!replace && entry(module.name) != nullptr) return taken();
    id = next_id_++;
  }
  // Read outside the lock: lookups of other adapters go on meanwhile.
  VLLM_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> adapter, load(module, id));
  std::lock_guard lock(mutex_);
  if (Entry* e = entry(module.name); e != nullptr) {
    if (!replace) return taken();  // added by someone else meanwhile
    *e = Entry{module, id, std::move(adapter), ++uses_};
  } else {
    entries_.push_back(Entry{module, id, std::move(adapter), ++uses_});
  }
  evict_beyond_capacity();
  return Status::ok();
}

Status LoraRegistry::remove(const std::string& name) {
  std::lock_guard lock(mutex_);
  const Entry* e = entry(name);
  if (e == nullptr) return not_found("The lora adapter '" + name + "' cannot be found.");
  entries_.erase(entries_.begin() + (e - entries_.data()));
  return Status::ok();
}

Result<std::shared_ptr<const LoraAdapter>> LoraRegistry::find(const std::string& name) {
  LoraModule module;
  int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    Entry* e = entry(name);
    if (e == nullptr) return not_found("The model `" + name + "` does not exist.");
    e->last_use = ++uses_;
    if (e->loaded != nullptr) return e->loaded;
    module = e->module;
    id = e->id;
  }
  VLLM_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> adapter, load(module, id));
  std::lock_guard lock(mutex_);
  Entry* e = entry(name);
  if (e != nullptr && e->id == id && e->loaded == nullptr) {  // not removed, nor loaded by another lookup, meanwhile
    e->loaded = adapter;
    evict_beyond_capacity();
  }
  return adapter;
}

void LoraRegistry::evict_beyond_capacity() {
  while (true) {
    Entry* oldest = nullptr;
    int32_t num_loaded = 0;
    for (Entry& e : entries_) {
      if (e.loaded == nullptr) continue;
      ++num_loaded;
      if (oldest == nullptr || e.last_use < oldest->last_use) oldest = &e;
    }
    if (num_loaded <= max_cpu_loras_) return;
    oldest->loaded.reset();
  }
}

std::vector<LoraModule> LoraRegistry::modules() const {
  std::lock_guard lock(mutex_);
  std::vector<LoraModule> out;
  for (const Entry& e : entries_) out.push_back(e.module);
  return out;
}

}  // namespace vllm
