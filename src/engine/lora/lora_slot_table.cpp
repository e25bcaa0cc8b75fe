#include "engine/lora/lora_slot_table.h"

#include <algorithm>

#include "base/logging.h"

namespace vllm {

int32_t LoraSlotTable::slot_for(const LoraAdapter& adapter) {
  auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.adapter_id == adapter.id; });
  if (it == slots_.end()) {
    it = std::min_element(slots_.begin(), slots_.end(),
                          [](const Slot& a, const Slot& b) { return a.last_step < b.last_step; });
    VLLM_CHECK(it != slots_.end() && it->last_step < step_, "a step has no more adapters than --max-loras");
    const auto slot = static_cast<int32_t>(it - slots_.begin());
    const Status loaded = load_(slot, adapter.weights);
    VLLM_CHECK(loaded.is_ok(), "an adapter checked against the model's targets fits it: " + loaded.message());
    it->adapter_id = adapter.id;
  }
  it->last_step = step_;
  return static_cast<int32_t>(it - slots_.begin());
}

}  // namespace vllm
